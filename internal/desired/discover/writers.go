package discover

import (
	"errors"
	"fmt"
	"os"

	"github.com/drift-monitor/drift-monitor/internal/desired/configerr"
	"github.com/drift-monitor/drift-monitor/internal/writers"
)

// Configs nobody else may write.
//
// The desired state decides what reconcile writes as root, what the daemon
// reports and what every later check trusts: a config that a user other
// than root could have written — or put in, or taken out of, its directory,
// or swapped a directory or link on its path for another — would let that
// user rewrite /etc/shadow through reconcile, or hide a drift. Package
// writers holds the rule, the one every file of settings is held to (the
// first-boot records, the exclusion file): the config file, and every
// directory and link its path passes through from the root down, must be
// written by root alone (or whoever owns the root checked, or runs the
// check). A desired-state directory may not be sticky: a name added there
// is a config added. The directory of a config named on the command line
// may be (/tmp).

// ErrOthersMayWrite is wrapped by the error of a config, or a directory of
// configs, that a user other than root could have written.
var ErrOthersMayWrite = writers.ErrOthersMayWrite

// writersError is the LoadError of a config refused by package writers.
func writersError(name string, err error) error {
	var we *writers.Error
	if errors.As(err, &we) {
		err = fmt.Errorf("%w; drift-monitor loads only configs that root alone may write (chown it to root, chmod go-w)", err)
	}
	return &configerr.LoadError{File: name, Err: err}
}

// CheckWriters refuses the config files listed, as src reads them, when
// another user could have written one or a node on its path.
func (src Files) CheckWriters(files []string) error {
	for _, name := range files {
		f, err := src.Open(name)
		if err != nil {
			continue // the read says why, naming it
		}
		if src.Explicit {
			err = writers.CheckHost(name, f, src.Root.Owner(), writers.Options{})
		} else {
			err = writers.Check(src.Root, HostPath(src.Root.Dir(), name), f, writers.Options{Listed: true})
		}
		f.Close()
		if err != nil {
			return writersError(name, err)
		}
	}
	return nil
}

// CheckWriters refuses the open file f, read from host path p inside
// root, when another user could have written it or a node on its path
// (see above): for what is copied into a config, as adopt copies
// Ignition's cache.
func CheckWriters(root Host, p string, f *os.File) error {
	if err := writers.Check(root, p, f, writers.Options{}); err != nil {
		return writersError(root.Join(p), err)
	}
	return nil
}
