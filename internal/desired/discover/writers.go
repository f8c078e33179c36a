package discover

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"syscall"

	"github.com/drift-monitor/drift-monitor/internal/desired/configerr"
	"golang.org/x/sys/unix"
)

// Configs nobody else may write.
//
// The desired state decides what reconcile writes as root, what the daemon
// reports and what every later check trusts: a config that a user other
// than root could have written — or put in, or taken out of, its directory
// — would let that user rewrite /etc/shadow through reconcile, or hide a
// drift. A config file, and the directory that holds it, must be owned by
// root (or by whoever owns the root checked, or runs the check: a tree of
// theirs, a config of theirs) and writable by no one else: no write bit
// for others, none for a group other than root's (or, for whoever runs the
// check, their own: a user's private group, as umask 002 leaves it; root's
// runs, reconcile's and the daemon's, trust root's group only). A file is
// checked as it
// is opened (a link is followed, as it is read), a directory as it holds
// the file (links to it followed). The first-boot record is held to the
// same rule (package firstboot, Use.Load).

// ErrOthersMayWrite is wrapped by the error of a config, or a directory of
// configs, that a user other than root could have written.
var ErrOthersMayWrite = errors.New("a user other than root could have written it")

// writers describes who may write a node with this stat, when that is not
// only trusted owners; "" when it is. A sticky directory's others may add
// files of their own (refused as files) but not replace root's: with
// stickyOK, that is allowed (the directory of one config named on the
// command line, such as /tmp).
func writers(fi fs.FileInfo, trusted trust, stickyOK bool) string {
	var uid, gid, mode uint32
	switch st := fi.Sys().(type) {
	case *syscall.Stat_t:
		uid, gid, mode = st.Uid, st.Gid, st.Mode&0o7777
	case *unix.Stat_t:
		uid, gid, mode = st.Uid, st.Gid, st.Mode&0o7777
	default:
		return "its owner cannot be told"
	}
	switch {
	case !trusted.uid(int(uid)):
		return fmt.Sprintf("owned by uid %d (mode %04o)", uid, mode)
	case stickyOK && mode&syscall.S_ISVTX != 0:
		return ""
	case mode&0o002 != 0:
		return fmt.Sprintf("mode %04o, owned by uid %d: writable by every user", mode, uid)
	case mode&0o020 != 0 && !trusted.gid(int(gid)):
		return fmt.Sprintf("mode %04o, owned by uid %d and group %d: writable by that group", mode, uid, gid)
	}
	return ""
}

// writersError is the LoadError of a node others may write.
func writersError(name, why string) error {
	return &configerr.LoadError{File: name, Err: fmt.Errorf("%s: %w; drift-monitor loads only configs that root alone may write (chown it to root, chmod go-w)", why, ErrOthersMayWrite)}
}

// trust says which owners and groups may write a config.
type trust struct{ uid, gid func(int) bool }

// trustedOwners are root, whoever runs this, and the owner of the root
// checked (a tree of theirs; root's own tree has root); the groups, root's
// and that of whoever runs this.
func trustedOwners(root Host) trust {
	owner := 0
	if o, ok := root.(interface{ Owner() int }); ok {
		owner = o.Owner()
	}
	euid, egid := os.Geteuid(), os.Getegid()
	return trust{
		uid: func(uid int) bool { return uid == 0 || uid == euid || uid == owner },
		gid: func(gid int) bool { return gid == 0 || gid == egid },
	}
}

// CheckWriters refuses the config files listed, as src reads them, when
// another user could have written one or the directory that holds it.
func (src Files) CheckWriters(files []string) error {
	trusted := trustedOwners(src.Root)
	dirs := map[string]bool{}
	for _, name := range files {
		f, err := src.Open(name)
		if err != nil {
			continue // the read says why, naming it
		}
		fi, err := f.Stat()
		f.Close()
		if err != nil {
			return &configerr.LoadError{File: name, Err: err}
		}
		if why := writers(fi, trusted, false); why != "" {
			return writersError(name, why)
		}
		dir, stickyOK := filepath.Dir(name), src.Explicit
		if src.Explicit {
			// Where the file is, its link followed (--config /dev/stdin
			// is a link to what no path names: its own directory then).
			if real, err := filepath.EvalSymlinks(name); err == nil {
				dir = filepath.Dir(real)
			}
		}
		if dirs[dir] {
			continue
		}
		dirs[dir] = true
		if err := checkDir(src, dir, trusted, stickyOK); err != nil {
			return err
		}
	}
	return nil
}

// checkDir refuses a directory of configs another user could write.
func checkDir(src Files, dir string, trusted trust, stickyOK bool) error {
	var fi fs.FileInfo
	var err error
	if src.Explicit {
		fi, err = os.Stat(dir)
	} else {
		fi, err = src.Root.StatDir(path.Clean(HostPath(src.Root.Dir(), dir)))
	}
	if err != nil {
		return &configerr.LoadError{File: dir, Err: err}
	}
	if why := writers(fi, trusted, stickyOK); why != "" {
		return writersError(dir, why)
	}
	return nil
}

// CheckWriters refuses the open file f, read from host path p inside
// root, when another user could have written it or the directory that
// holds it (see above): for what is copied into a config, as adopt copies
// Ignition's cache.
func CheckWriters(root Host, p string, f *os.File) error {
	trusted := trustedOwners(root)
	fi, err := f.Stat()
	if err != nil {
		return &configerr.LoadError{File: root.Join(p), Err: err}
	}
	if why := writers(fi, trusted, false); why != "" {
		return writersError(root.Join(p), why)
	}
	return checkDir(Files{Root: root}, root.Join(path.Dir(p)), trusted, false)
}
