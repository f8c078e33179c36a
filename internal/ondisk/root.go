// Package ondisk observes what stands at declared paths inside a root: the
// type, mode, owner, inode and — streamed, never read whole — whether a
// regular file's content matches what is wanted.
//
// Every host path is resolved inside the root with openat2(RESOLVE_IN_ROOT),
// the kernel's own "as if this directory were /": symlinks in parent
// directories are followed the way Ignition's JoinPath follows them when it
// writes the files, and nothing resolves outside the root. The last component
// of a path is never followed.
//
// It promises to never open anything but a regular file for reading (no FIFO
// blocks it, no device is opened), to stop reading at the first difference,
// and to report an unreadable path as an error on its observation rather than
// fail. What is read is bounded by what stat said, never by where the file
// ends: a file of exact content whose size differs is not read unless it is
// small enough to be shown (DiffLimit); a file that grows while it is read
// is read to its size at the stat; and an observer with a ReadLimit leaves a
// comparison that would read more Deferred, unread, for an observer without
// one to finish on a goroutine that may take that long. It does not promise
// an atomic view: the file may change between the stat and the read; the
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
	return &Root{dir: dir, fd: fd}, nil
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

// openDir opens a host directory inside the root, resolving symlinks in it as
// if the root were /.
func (r *Root) openDir(hostDir string) (int, error) {
	rel := strings.TrimPrefix(hostDir, "/")
	if rel == "" {
		rel = "."
	}
	how := unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS,
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
		return fd, err
	}
	return r.resolveDir(rel)
}

// maxSymlinks bounds symlink expansion, as the kernel's ELOOP does.
const maxSymlinks = 40

// resolveDir is openat2(RESOLVE_IN_ROOT) in user space: walk the components
// with O_NOFOLLOW, expanding symlinks as if the root were /, and never
// leaving it ("..", absolute targets). Slower (one system call per
// component), used only where openat2 is unavailable.
func (r *Root) resolveDir(rel string) (int, error) {
	todo := strings.Split(rel, "/")
	cur, err := unix.Dup(r.fd)
	if err != nil {
		return -1, err
	}
	var stack []int // descriptors of the directories above cur, for ".."
	closeAll := func() {
		unix.Close(cur)
		for _, fd := range stack {
			unix.Close(fd)
		}
	}
	links := 0
	for len(todo) > 0 {
		c := todo[0]
		todo = todo[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			if len(stack) > 0 {
				unix.Close(cur)
				cur, stack = stack[len(stack)-1], stack[:len(stack)-1]
			}
			continue
		}
		fd, err := unix.Openat(cur, c, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			closeAll()
			return -1, err
		}
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			unix.Close(fd)
			closeAll()
			return -1, err
		}
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFDIR:
			stack = append(stack, cur)
			cur = fd
		case unix.S_IFLNK:
			unix.Close(fd)
			if links++; links > maxSymlinks {
				closeAll()
				return -1, unix.ELOOP
			}
			target, err := readlinkat(cur, c)
			if err != nil {
				closeAll()
				return -1, err
			}
			if strings.HasPrefix(target, "/") {
				// Absolute: from the root again.
				for _, fd := range stack {
					unix.Close(fd)
				}
				unix.Close(cur)
				stack = nil
				if cur, err = unix.Dup(r.fd); err != nil {
					return -1, err
				}
			}
			todo = append(strings.Split(target, "/"), todo...)
		default:
			unix.Close(fd)
			closeAll()
			return -1, unix.ENOTDIR
		}
	}
	for _, fd := range stack {
		unix.Close(fd)
	}
	return cur, nil
}

// OpenDir opens a host directory inside the root as an O_PATH descriptor
// (for inotify, through /proc/self/fd). The caller closes it.
func (r *Root) OpenDir(hostDir string) (int, error) { return r.openDir(hostDir) }

// dirCache keeps the last opened parent directory: entries are checked in path
// order, so consecutive entries mostly share their parent.
type dirCache struct {
	root *Root
	path string
	fd   int
	err  error
}

func (c *dirCache) get(hostDir string) (int, error) {
	if c.fd >= 0 && c.path == hostDir {
		return c.fd, nil
	}
	if c.err != nil && c.path == hostDir {
		return -1, c.err
	}
	c.close()
	c.path = hostDir
	c.fd, c.err = c.root.openDir(hostDir)
	if c.err != nil {
		c.fd = -1
	}
	return c.fd, c.err
}

func (c *dirCache) close() {
	if c.fd >= 0 {
		unix.Close(c.fd)
	}
	c.fd, c.err, c.path = -1, nil, ""
}
