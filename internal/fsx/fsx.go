// Package fsx is the one set of write primitives every writer of the
// daemon uses: a temporary node made inside a directory descriptor, placed
// under its final name by rename (replacing), rename with RENAME_NOREPLACE
// (falling back to link(2) where a file system lacks it), link (first writer
// wins) or RENAME_EXCHANGE, and fsync of the file and of its directory, each
// system call retried while interrupted (EINTR).
//
// Every name is one path component inside a directory descriptor that the
// caller resolved (inside the root: ondisk.Root, openat2 RESOLVE_IN_ROOT):
// no function resolves a host path, and none follows a symbolic link in
// its last component. The anchors do the same routine on paths: Ignition's
// one write path, Util.PerformFetch (internal/exec/util/file.go,
// CreateTemp in the target's directory, then Rename), and tailscale's
// atomicfile.WriteFile (CreateTemp, Sync, Close, Rename).
//
// FS gathers the primitives behind one interface so that a test can fail
// (or inspect the disk at) any step by embedding Sys and overriding one
// method, as the crash tests of reconcile and of this package do.
package fsx

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"strings"

	"golang.org/x/sys/unix"
)

// FS is the write primitives, one system call each.
type FS interface {
	// CreateTemp creates a new, empty regular file in dir with mode 0600
	// (O_EXCL, O_NOFOLLOW) under a name of pattern with its last "*"
	// replaced by a random string (os.CreateTemp's rule), and opens it
	// for writing.
	CreateTemp(dir int, pattern string) (fd int, name string, err error)
	Write(fd int, b []byte) error
	Fchown(fd, uid, gid int) error
	Fchmod(fd int, mode uint32) error
	Fsync(fd int) error
	Close(fd int) error
	// MkdirTemp creates a directory with mode 0700 under a name of
	// pattern and opens it (O_DIRECTORY, O_NOFOLLOW); its owner and mode
	// are set through the descriptor.
	MkdirTemp(dir int, pattern string) (fd int, name string, err error)
	// SymlinkTemp creates a symbolic link to target under a name of
	// pattern.
	SymlinkTemp(target string, dir int, pattern string) (name string, err error)
	// LinkTemp makes a hard link to olddir/old under a name of pattern
	// (never following old, as link(2) and Ignition's os.Link do not).
	LinkTemp(olddir int, old string, dir int, pattern string) (name string, err error)
	// Lchown changes the owner of dir/name itself, never what it points to.
	Lchown(dir int, name string, uid, gid int) error
	// Rename replaces dir/to with dir/from atomically.
	Rename(dir int, from, to string) error
	// RenameNoReplace renames dir/from to dir/to unless dir/to exists
	// (unix.EEXIST), atomically.
	RenameNoReplace(dir int, from, to string) error
	// Link links dir/from as dir/to unless dir/to exists (unix.EEXIST):
	// the first writer wins, and from stays.
	Link(dir int, from, to string) error
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

// Sys is FS on the running kernel.
type Sys struct{}

var _ FS = Sys{}

// TempName is pattern with its last "*" replaced by 16 random hex digits
// (appended if pattern has none).
func TempName(pattern string) string {
	b := make([]byte, 8)
	rand.Read(b) // crypto/rand.Read never fails (Go 1.24+)
	r := hex.EncodeToString(b)
	if i := strings.LastIndexByte(pattern, '*'); i >= 0 {
		return pattern[:i] + r + pattern[i+1:]
	}
	return pattern + r
}

// Retry runs a system call until it is not interrupted.
func Retry(f func() error) error {
	for {
		if err := f(); !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}

// withName retries f with a fresh temporary name while the name is taken.
func withName(pattern string, f func(name string) error) (string, error) {
	for {
		name := TempName(pattern)
		err := Retry(func() error { return f(name) })
		if !errors.Is(err, unix.EEXIST) {
			return name, err
		}
	}
}

// CreateTemp is Sys.CreateTemp.
func CreateTemp(dir int, pattern string) (int, string, error) {
	var fd int
	name, err := withName(pattern, func(name string) (err error) {
		fd, err = unix.Openat(dir, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
		return err
	})
	return fd, name, err
}

// Write writes all of b to fd.
func Write(fd int, b []byte) error {
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

// Fsync makes fd's data and metadata durable.
func Fsync(fd int) error { return Retry(func() error { return unix.Fsync(fd) }) }

// SyncDir makes the entries of the directory dir durable: a renamed or
// linked file's new name survives a power cut only once its directory is
// synced. dir may be an O_PATH descriptor, which fsync refuses: the
// directory itself is opened through it.
func SyncDir(dir int) error {
	var fd int
	err := Retry(func() (err error) {
		fd, err = unix.Openat(dir, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		return err
	})
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	return Fsync(fd)
}

// Rename replaces dir/to with dir/from atomically.
func Rename(dir int, from, to string) error {
	return Retry(func() error { return unix.Renameat(dir, from, dir, to) })
}

// RenameNoReplace renames dir/from to dir/to unless dir/to exists
// (unix.EEXIST), atomically: rename(2) would replace a file that appeared
// since the caller looked. RENAME_NOREPLACE is in Linux 3.15 for the usual
// file systems; where a file system lacks it (EINVAL, ENOSYS), link(2) is
// just as atomic and fails just as well on an existing name, and from is
// then unlinked.
func RenameNoReplace(dir int, from, to string) error {
	err := Retry(func() error { return renameat2(dir, from, dir, to, unix.RENAME_NOREPLACE) })
	if !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOSYS) {
		return err
	}
	if err := Link(dir, from, to); err != nil {
		return err
	}
	return Retry(func() error { return unix.Unlinkat(dir, from, 0) })
}

// renameat2 is unix.Renameat2, replaced in a test by a kernel without
// RENAME_NOREPLACE.
var renameat2 = unix.Renameat2

// Link links dir/from as dir/to unless dir/to exists (unix.EEXIST).
func Link(dir int, from, to string) error {
	return Retry(func() error { return unix.Linkat(dir, from, dir, to, 0) })
}

// Exchange swaps dir/a and dir/b atomically.
func Exchange(dir int, a, b string) error {
	return Retry(func() error { return unix.Renameat2(dir, a, dir, b, unix.RENAME_EXCHANGE) })
}

func (Sys) CreateTemp(dir int, pattern string) (int, string, error) {
	return CreateTemp(dir, pattern)
}
func (Sys) Write(fd int, b []byte) error { return Write(fd, b) }
func (Sys) Fchown(fd, uid, gid int) error {
	return Retry(func() error { return unix.Fchown(fd, uid, gid) })
}
func (Sys) Fchmod(fd int, mode uint32) error {
	return Retry(func() error { return unix.Fchmod(fd, mode) })
}
func (Sys) Fsync(fd int) error { return Fsync(fd) }
func (Sys) Close(fd int) error { return unix.Close(fd) }

func (Sys) MkdirTemp(dir int, pattern string) (int, string, error) {
	name, err := withName(pattern, func(name string) error { return unix.Mkdirat(dir, name, 0o700) })
	if err != nil {
		return -1, name, err
	}
	var fd int
	err = Retry(func() (err error) {
		fd, err = unix.Openat(dir, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		return err
	})
	return fd, name, err
}

func (Sys) SymlinkTemp(target string, dir int, pattern string) (string, error) {
	return withName(pattern, func(name string) error { return unix.Symlinkat(target, dir, name) })
}

func (Sys) LinkTemp(olddir int, old string, dir int, pattern string) (string, error) {
	return withName(pattern, func(name string) error { return unix.Linkat(olddir, old, dir, name, 0) })
}

func (Sys) Lchown(dir int, name string, uid, gid int) error {
	return Retry(func() error { return unix.Fchownat(dir, name, uid, gid, unix.AT_SYMLINK_NOFOLLOW) })
}

func (Sys) Rename(dir int, from, to string) error          { return Rename(dir, from, to) }
func (Sys) RenameNoReplace(dir int, from, to string) error { return RenameNoReplace(dir, from, to) }
func (Sys) Link(dir int, from, to string) error            { return Link(dir, from, to) }
func (Sys) Exchange(dir int, a, b string) error            { return Exchange(dir, a, b) }

func (Sys) Remove(dir int, name string, isDir bool) error {
	flags := 0
	if isDir {
		flags = unix.AT_REMOVEDIR
	}
	return Retry(func() error { return unix.Unlinkat(dir, name, flags) })
}

func (Sys) SyncDir(dir int) error { return SyncDir(dir) }

func (Sys) Open(dir int, name string) (int, error) {
	var fd int
	err := Retry(func() (err error) {
		fd, err = unix.Openat(dir, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
		return err
	})
	return fd, err
}
