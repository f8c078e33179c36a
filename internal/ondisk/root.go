// Package ondisk observes what stands at declared paths inside a root: the
// type, mode, owner, inode and — streamed, never read whole — whether a
// regular file's content matches what is wanted.
//
// Every host path is resolved inside the root, as openat2(RESOLVE_IN_ROOT)
// does, the kernel's own "as if this directory were /": nothing resolves
// outside the root. Symlinks in parent directories are followed only where
// Ignition's JoinPath followed them when it wrote the files (the config's
// declared links, the image's own: see locate.go); any other link on the way
// is reported as such (Observation.Detour), and nothing behind it is opened.
// The last component of a path is never followed.
//
// It promises to never open anything but a regular file for reading (no FIFO
// blocks it, no device is opened), to never read a file behind a link it did
// not follow, to stop reading at the first difference, and to report an
// unreadable path as an error on its observation rather than fail. What is
// read is bounded by what stat said, never by where the file ends: a file of
// exact content whose size differs is not read unless it is small enough to
// be shown (DiffLimit); a file that grows while it is read is read to its
// size at the stat; and an observer with a ReadLimit leaves a comparison
// that would read more Deferred, unread, for an observer without one to
// finish on a goroutine that may take that long. It does not promise an
// atomic view: the file may change between the stat and the read; the
// caller re-checks on the next event (Stamp tells versions apart).
package ondisk

import (
	"errors"
	"fmt"
	"path"
	"strings"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// Root is an open directory that host paths are resolved in.
type Root struct {
	dir string
	fd  int
	// The root directory's owner and identity (see trustedOwner, reachable).
	uid      int
	dev, ino uint64
	// noOpenat2 is set once openat2 turned out to be unavailable;
	// openat2Worked once it succeeded (a later EPERM is then a real one).
	noOpenat2, openat2Worked atomic.Bool
}

// OpenRoot opens dir as the root ("/" for the running host).
func OpenRoot(dir string) (*Root, error) {
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("opening root %s: %w", dir, err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("opening root %s: %w", dir, err)
	}
	return &Root{dir: dir, fd: fd, uid: int(st.Uid), dev: st.Dev, ino: st.Ino}, nil
}

// Close releases the root's descriptor.
func (r *Root) Close() error { return unix.Close(r.fd) }

// Dir is the directory the root was opened from.
func (r *Root) Dir() string { return r.dir }

// Join returns the path of a host path inside the root, lexically (for
// messages and watches; observations go through openat2).
func (r *Root) Join(hostPath string) string {
	if r.dir == "/" {
		return hostPath
	}
	return path.Join(r.dir, hostPath)
}

// relative is a host path as openat2 takes it relative to the root.
func relative(hostPath string) string {
	if rel := strings.TrimPrefix(hostPath, "/"); rel != "" {
		return rel
	}
	return "."
}

// openDir opens a host directory inside the root, resolving symlinks in it as
// if the root were /.
func (r *Root) openDir(hostDir string) (int, error) {
	rel := relative(hostDir)
	if fd, ok, err := r.openat2(rel, unix.RESOLVE_IN_ROOT|unix.RESOLVE_NO_MAGICLINKS); ok {
		return fd, err
	}
	return r.resolveDir(rel)
}

// openat2 opens the directory rel with openat2(resolve); ok is false when
// openat2 is not available, and the caller must resolve in user space.
func (r *Root) openat2(rel string, resolve uint64) (fd int, ok bool, err error) {
	how := unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC,
		Resolve: resolve,
	}
	for !r.noOpenat2.Load() {
		fd, err := unix.Openat2(r.fd, rel, &how)
		if errors.Is(err, unix.EINTR) || errors.Is(err, unix.EAGAIN) {
			// EAGAIN: a concurrent rename raced the resolution; try again.
			continue
		}
		if errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EPERM) && !r.openat2Worked.Load() {
			// A kernel before 5.6, or a seccomp filter that does not know
			// openat2 (systemd's SystemCallFilter= answers ENOSYS or EPERM):
			// resolve in user space from now on.
			r.noOpenat2.Store(true)
			break
		}
		if err == nil {
			r.openat2Worked.Store(true)
		}
		return fd, true, err
	}
	return -1, false, nil
}

// maxSymlinks bounds symlink expansion, as the kernel's ELOOP does.
const maxSymlinks = 40

// resolveDir is openat2(RESOLVE_IN_ROOT) in user space (see walk), for
// kernels and seccomp filters without openat2.
func (r *Root) resolveDir(rel string) (int, error) {
	fd, _, _, err := r.walk(rel, nil, false)
	return fd, err
}

// OpenDir opens a host directory inside the root as an O_PATH descriptor
// (for inotify, through /proc/self/fd). The caller closes it.
func (r *Root) OpenDir(hostDir string) (int, error) { return r.openDir(hostDir) }

// dirCache keeps the last located parent directory: entries are checked in
// path order, so consecutive entries mostly share their parent.
type dirCache struct {
	root *Root
	decl *Declared
	path string
	// resolved is the host path path resolved to (see locate).
	resolved string
	fd       int
	detour   *Detour
	err      error
}

// get locates a host directory (see locateDir): a descriptor, or the link
// that kept it from its declared location, or an error.
func (c *dirCache) get(hostDir string) (int, *Detour, error) {
	if c.path == hostDir && (c.fd >= 0 || c.detour != nil || c.err != nil) {
		return c.fd, c.detour, c.err
	}
	c.close()
	c.path = hostDir
	c.fd, c.resolved, c.detour, c.err = c.root.locate(hostDir, c.decl)
	if c.err != nil || c.detour != nil {
		c.fd = -1
	}
	return c.fd, c.detour, c.err
}

func (c *dirCache) close() {
	if c.fd >= 0 {
		unix.Close(c.fd)
	}
	c.fd, c.detour, c.err, c.path, c.resolved = -1, nil, nil, "", ""
}
