package reconcile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"

	"github.com/drift-monitor/drift-monitor/internal/accountdb"
	"github.com/drift-monitor/drift-monitor/internal/desired/discover"
	"github.com/drift-monitor/drift-monitor/internal/errpath"
	"github.com/drift-monitor/drift-monitor/internal/ondisk"
)

// A dry run plans what a run does, and a run repairs the accounts before
// any node (Ignition's order: internal/exec/stages/files/files.go,
// runImpl: createPasswd, then createFilesystemsEntries), so that every
// owner named is resolved in the account files as the account repairs
// leave them. What useradd, usermod and groupmod leave (a uid useradd
// picks, a home it makes) is theirs to decide: a dry run runs the same
// tools, the same way, on a private copy of the root's account files (an
// AccountPreview), and plans the nodes against the copy.

// previewFiles are the files the account tools read and write, as host
// paths: the account files, and what useradd takes its defaults from
// (login.defs, default/useradd) and allots subordinate ids in.
var previewFiles = []string{accountdb.PasswdFile, accountdb.ShadowFile, accountdb.GroupFile, accountdb.GShadowFile,
	"/etc/subuid", "/etc/subgid", "/etc/login.defs", "/etc/default/useradd"}

// AccountPreview is a private copy of a root's account files, where a dry
// run makes its account repairs (Reconciler.Accounts).
type AccountPreview struct {
	root *ondisk.Root
	dir  string
}

// NewAccountPreview copies root's account files to a new directory only
// its owner may enter (it holds the password hashes). Close removes it.
func NewAccountPreview(root *ondisk.Root) (*AccountPreview, error) {
	dir, err := os.MkdirTemp("", "drift-monitor-preview-")
	if err != nil {
		return nil, fmt.Errorf("making a copy of the account files for the dry run: %w", err)
	}
	p := &AccountPreview{root: root, dir: dir}
	for _, f := range previewFiles {
		data, err := root.ReadFile(f)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err == nil {
			err = os.MkdirAll(filepath.Join(dir, path.Dir(f)), 0o700)
		}
		if err == nil {
			err = os.WriteFile(filepath.Join(dir, f), data, 0o600)
		}
		if err != nil {
			p.Close()
			return nil, fmt.Errorf("copying %s for the dry run: %w", f, errpath.Strip(err))
		}
	}
	return p, nil
}

// Close removes the copy.
func (p *AccountPreview) Close() error { return os.RemoveAll(p.dir) }

// Host is the root with the copy's account files in place of its own:
// what a state derived after the account repairs resolves owners in.
func (p *AccountPreview) Host() discover.Host { return previewHost{p.root, p.dir} }

// previewHost reads the account files from the copy, everything else from
// the root.
type previewHost struct {
	*ondisk.Root
	dir string
}

func (h previewHost) ReadFile(hostPath string) ([]byte, error) {
	for _, f := range previewFiles {
		if hostPath == f {
			data, err := os.ReadFile(filepath.Join(h.dir, f))
			if err != nil {
				return nil, &fs.PathError{Op: "read", Path: h.Join(f), Err: errpath.Strip(err)}
			}
			return data, nil
		}
	}
	return h.Root.ReadFile(hostPath)
}

// accountHost is where the account files are read: the preview's in a dry
// run that has one, else the root's.
func (r *Reconciler) accountHost() discover.Host {
	if r.Accounts != nil {
		return r.Accounts.Host()
	}
	return r.Root
}

// accountDB reads the account files as the account tools see them now.
func (r *Reconciler) accountDB() (*accountdb.DB, error) {
	return accountdb.Read(r.accountHost())
}

// accountsDir is the directory the account tools run in (--root).
func (r *Reconciler) accountsDir() string {
	if r.Accounts != nil {
		return r.Accounts.dir
	}
	return r.Root.Dir()
}
