package fsx

import (
	"errors"
	"path"

	"golang.org/x/sys/unix"
)

// MkdirAll opens the host directory dir through open (which resolves a
// host path inside a root: ondisk.Root.OpenDir, an O_PATH descriptor),
// creating dir with mode and its missing parents with parentMode whatever
// the umask: the mode is set through a descriptor of the new directory,
// never through a link that took its place, and each new directory's
// parent is synced. A directory that exists keeps its mode (the package,
// or the admin, decided it). The caller closes the descriptor. A failure
// is an *Error whose Name is the host directory (Op "creating", or
// "syncing" for its parent).
func MkdirAll(open func(dir string) (int, error), dir string, mode, parentMode uint32) (int, error) {
	fd, err := open(dir)
	switch {
	case err == nil:
		return fd, nil
	case errors.Is(err, unix.ENOTDIR):
		return -1, &Error{"creating", dir, errors.New("not a directory")}
	case !errors.Is(err, unix.ENOENT) || dir == "/":
		return -1, &Error{"creating", dir, err}
	}
	parent := path.Dir(dir)
	pfd, err := MkdirAll(open, parent, parentMode, parentMode)
	if err != nil {
		return -1, err
	}
	defer unix.Close(pfd)
	name := path.Base(dir)
	if err := Retry(func() error { return unix.Mkdirat(pfd, name, mode) }); err == nil {
		var dfd int
		err := Retry(func() (err error) {
			dfd, err = unix.Openat(pfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			return err
		})
		if err != nil {
			return -1, &Error{"creating", dir, err}
		}
		err = Retry(func() error { return unix.Fchmod(dfd, mode) })
		unix.Close(dfd)
		if err != nil {
			return -1, &Error{"creating", dir, err}
		}
		if err := SyncDir(pfd); err != nil {
			return -1, &Error{"syncing", parent, err}
		}
	} else if !errors.Is(err, unix.EEXIST) {
		return -1, &Error{"creating", dir, err}
	}
	// Opened again through open: a name that another writer made a link
	// meanwhile leads where open resolves it.
	if fd, err = open(dir); err != nil {
		return -1, &Error{"creating", dir, err}
	}
	return fd, nil
}
