package reconcile

import (
	"crypto/rand"
	"encoding/hex"
	"errors"

	"golang.org/x/sys/unix"
)

// FS is the write primitives a reconcile uses, one system call each, so
// that a test can fail (or inspect the disk at) any step by embedding
// SysFS and overriding one method. Every name is one path component inside
// a directory descriptor that was resolved inside the root
// (ondisk.Root.LocateDir, openat2 RESOLVE_IN_ROOT): no method ever resolves
// a host path by itself, and none follows a symbolic link in its last
// component.
type FS interface {
	// CreateTemp creates a new, empty regular file in dir with mode 0600
	// (O_EXCL, O_NOFOLLOW) under a name of its own, and opens it for writing.
	CreateTemp(dir int) (fd int, name string, err error)
	Write(fd int, b []byte) error
	Fchown(fd, uid, gid int) error
	Fchmod(fd int, mode uint32) error
	Fsync(fd int) error
	Close(fd int) error
	// Mkdir creates a directory with mode 0700 under a name of its own
	// and opens it (O_DIRECTORY, O_NOFOLLOW); its owner and mode are set
	// through the descriptor.
	MkdirTemp(dir int) (fd int, name string, err error)
	// Symlink creates a symbolic link to target under a name of its own.
	SymlinkTemp(target string, dir int) (name string, err error)
	// LinkTemp makes a hard link to olddir/old under a name of its own
	// (never following old, as link(2) and Ignition's os.Link do not).
	LinkTemp(olddir int, old string, dir int) (name string, err error)
	// Lchown changes the owner of dir/name itself, never what it points to.
	Lchown(dir int, name string, uid, gid int) error
	// Rename replaces dir/to with dir/from atomically.
	Rename(dir int, from, to string) error
	// Exchange swaps dir/a and dir/b atomically (renameat2 RENAME_EXCHANGE).
	Exchange(dir int, a, b string) error
	// Remove removes dir/name: a directory (only if it is empty) with
	// isDir, anything else without.
	Remove(dir int, name string, isDir bool) error
	// SyncDir makes the directory's entries durable (fsync of the
	// directory itself).
	SyncDir(dir int) error
	// Open opens dir/name for reading, never following a symbolic link
	// and never blocking on a FIFO.
	Open(dir int, name string) (fd int, err error)
}

// SysFS is FS on the running kernel.
type SysFS struct{}

var _ FS = SysFS{}

// tempPrefix starts the names of temporary nodes. It is hidden (a dot), as
// Ignition's CreateTemp(dir, "tmp") names are not, so that a listing or a
// shell glob does not pick up a half-made node.
const tempPrefix = ".drift-monitor-reconcile-"

func tempName() string {
	b := make([]byte, 8)
	rand.Read(b) // crypto/rand.Read never fails (Go 1.24+)
	return tempPrefix + hex.EncodeToString(b)
}

// retry runs a system call until it is not interrupted.
func retry(f func() error) error {
	for {
		if err := f(); !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}

// withName retries f with a fresh temporary name while the name is taken.
func withName(f func(name string) error) (string, error) {
	for {
		name := tempName()
		err := retry(func() error { return f(name) })
		if !errors.Is(err, unix.EEXIST) {
			return name, err
		}
	}
}

func (SysFS) CreateTemp(dir int) (int, string, error) {
	var fd int
	name, err := withName(func(name string) (err error) {
		fd, err = unix.Openat(dir, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
		return err
	})
	return fd, name, err
}

func (SysFS) Write(fd int, b []byte) error {
	for len(b) > 0 {
		n, err := unix.Write(fd, b)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return err
		}
		b = b[n:]
	}
	return nil
}

func (SysFS) Fchown(fd, uid, gid int) error {
	return retry(func() error { return unix.Fchown(fd, uid, gid) })
}
func (SysFS) Fchmod(fd int, mode uint32) error {
	return retry(func() error { return unix.Fchmod(fd, mode) })
}
func (SysFS) Fsync(fd int) error { return retry(func() error { return unix.Fsync(fd) }) }
func (SysFS) Close(fd int) error { return unix.Close(fd) }

func (SysFS) MkdirTemp(dir int) (int, string, error) {
	name, err := withName(func(name string) error { return unix.Mkdirat(dir, name, 0o700) })
	if err != nil {
		return -1, name, err
	}
	var fd int
	err = retry(func() (err error) {
		fd, err = unix.Openat(dir, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		return err
	})
	return fd, name, err
}

func (SysFS) SymlinkTemp(target string, dir int) (string, error) {
	return withName(func(name string) error { return unix.Symlinkat(target, dir, name) })
}

func (SysFS) LinkTemp(olddir int, old string, dir int) (string, error) {
	return withName(func(name string) error { return unix.Linkat(olddir, old, dir, name, 0) })
}

func (SysFS) Lchown(dir int, name string, uid, gid int) error {
	return retry(func() error { return unix.Fchownat(dir, name, uid, gid, unix.AT_SYMLINK_NOFOLLOW) })
}

func (SysFS) Rename(dir int, from, to string) error {
	return retry(func() error { return unix.Renameat(dir, from, dir, to) })
}

func (SysFS) Exchange(dir int, a, b string) error {
	return retry(func() error { return unix.Renameat2(dir, a, dir, b, unix.RENAME_EXCHANGE) })
}

func (SysFS) Remove(dir int, name string, isDir bool) error {
	flags := 0
	if isDir {
		flags = unix.AT_REMOVEDIR
	}
	return retry(func() error { return unix.Unlinkat(dir, name, flags) })
}

func (SysFS) SyncDir(dir int) error {
	// dir may be an O_PATH descriptor, which fsync refuses: open the
	// directory itself through it.
	var fd int
	err := retry(func() (err error) {
		fd, err = unix.Openat(dir, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		return err
	})
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	return retry(func() error { return unix.Fsync(fd) })
}

func (SysFS) Open(dir int, name string) (int, error) {
	var fd int
	err := retry(func() (err error) {
		fd, err = unix.Openat(dir, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
		return err
	})
	return fd, err
}
