package enablement

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strconv"
	"strings"
	"sync"

	"github.com/drift-monitor/drift-monitor/internal/errpath"
	"github.com/drift-monitor/drift-monitor/internal/ondisk"
	"golang.org/x/sys/unix"
)

// maxSymlinkHops is systemd's CHASE_SYMLINKS_MAX: chase_symlinks() counts
// it down at every link and fails with ELOOP when it reaches 0, so at most
// 31 links are followed (of those chase follows itself, in last components).
const maxSymlinkHops = 32

// maxUnitFileSize bounds what is read of one unit file or drop-in; systemd
// has no such bound, but a unit file this large is not one.
const maxUnitFileSize = 64 << 20

// A Tree looks up enablement states in one opened root. It holds the
// directories of the unit search path it resolved and the symlinks found in
// them, so that checking many units costs one scan of the search path: it
// describes the tree as it was when first read, so make a new Tree for each
// check pass, and Close it at the end of the pass. A Tree is safe for
// concurrent use; lookups are serialized.
type Tree struct {
	root *ondisk.Root
	// prefix is the root's own path as /proc/self/fd names its descriptors:
	// a resolved directory's path inside the root is its name without it.
	prefix string
	// host: the root is the running system's /, which systemd reads without
	// a root directory (see maskedLink).
	host bool

	mu     sync.Mutex
	closed bool
	dirs   map[string]*dirRef // directory path inside the root, as asked → resolved
	scans  map[string]*scan   // search directory → symlinks found in it
	specs  map[byte]specValue // system specifiers (%m, %H, %o...) once computed
	// enabled, while Enabling asks, are links taken as present in
	// /etc/systemd/system on top of what it holds: where their names are
	// free, or, with replaceHeld, in place of the links of those names.
	enabled     []Link
	replaceHeld bool
	// planned are unit files and drop-ins read as a repair will leave
	// them (see Plan), by host path.
	planned map[string]Planned
}

// dirRef is a directory resolved inside the root: an O_PATH descriptor that
// the Tree holds until Close, and its path inside the root.
type dirRef struct {
	fd   int
	path string
	err  error
}

// New returns a Tree reading through root, which must stay open until the
// Tree is closed.
func New(root *ondisk.Root) (*Tree, error) {
	fd, err := root.OpenDir("/")
	if err != nil {
		return nil, fmt.Errorf("reading root %s: %w", root.Dir(), err)
	}
	prefix, err := fdPath(fd)
	unix.Close(fd)
	if err != nil {
		return nil, fmt.Errorf("reading root %s: %w", root.Dir(), err)
	}
	return &Tree{
		root:   root,
		prefix: strings.TrimSuffix(prefix, "/"),
		host:   root.IsHost(),
		dirs:   map[string]*dirRef{},
		scans:  map[string]*scan{},
		specs:  map[byte]specValue{},
	}, nil
}

// Close releases the directories the Tree holds; it answers nothing after.
func (t *Tree) Close() {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, d := range t.dirs {
		if d.err == nil {
			unix.Close(d.fd)
		}
	}
	t.dirs, t.closed = nil, true
}

// errClosed is what a closed Tree answers.
var errClosed = errors.New("enablement: lookup in a closed Tree")

// lock starts a lookup of unit: it refuses a string that is not a unit
// name and a closed Tree, and holds the Tree until unlock.
func (t *Tree) lock(unit string) (unlock func(), err error) {
	if classifyName(unit) == nameInvalid {
		return nil, fmt.Errorf("%w: %q", ErrInvalidName, unit)
	}
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return nil, errClosed
	}
	return t.mu.Unlock, nil
}

// fdPath is the path of a descriptor, as the kernel names it.
func fdPath(fd int) (string, error) {
	p, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd))
	if err != nil {
		return "", errpath.Strip(err)
	}
	return p, nil
}

// ioError wraps err with an operation and a path inside the root.
func ioError(op, p string, err error) error {
	return fmt.Errorf("%s %s: %w", op, p, errpath.Strip(err))
}

// dir resolves a directory path inside the root, following every symlink
// in it as openat2(RESOLVE_IN_ROOT) does (ondisk.Root.OpenDir): absolute
// targets start again at the root and ".." never climbs above it. That is
// systemd's chase_symlinks() with a root directory for every link on the
// way, except that the kernel bounds a chain of them at 40 where systemd
// stops at 31 links. Results are held until Close.
func (t *Tree) dir(p string) (*dirRef, error) {
	if t.closed {
		return nil, errClosed
	}
	if d, ok := t.dirs[p]; ok {
		return d, d.err
	}
	d := &dirRef{fd: -1}
	fd, err := t.root.OpenDir(p)
	if err == nil {
		var real string
		if real, err = fdPath(fd); err == nil {
			d.path, err = t.inside(real)
		}
		if err != nil {
			unix.Close(fd)
		} else {
			d.fd = fd
		}
	}
	if err != nil {
		d.err = ioError("resolving", p, err)
	}
	t.dirs[p] = d
	return d, d.err
}

// inside turns a path the kernel names into a path inside the root.
func (t *Tree) inside(real string) (string, error) {
	if t.prefix == "" {
		return real, nil // the root is /
	}
	if real == t.prefix {
		return "/", nil
	}
	if rest, ok := strings.CutPrefix(real, t.prefix+"/"); ok {
		return "/" + rest, nil
	}
	return "", fmt.Errorf("%s is outside of the root %s", real, t.prefix)
}

// splitLast splits a path before its last component, without cleaning it
// (path.Dir would resolve "a/link/.." lexically, before the link).
func splitLast(p string) (dir, base string) {
	p = strings.TrimRight(p, "/")
	i := strings.LastIndexByte(p, '/')
	if i <= 0 {
		return "/", strings.TrimPrefix(p, "/")
	}
	return p[:i], p[i+1:]
}

// lstatAt, readlinkAt: the last component, never followed.
func lstatAt(d *dirRef, name string) (unix.Stat_t, error) {
	var st unix.Stat_t
	err := unix.Fstatat(d.fd, name, &st, unix.AT_SYMLINK_NOFOLLOW)
	return st, err
}

func readlinkAt(fd int, name string) (string, error) {
	for n := 256; ; n *= 2 {
		buf := make([]byte, n)
		k, err := unix.Readlinkat(fd, name, buf)
		if err != nil {
			return "", err
		}
		if k < n {
			return string(buf[:k]), nil
		}
	}
}

func isLink(st *unix.Stat_t) bool { return st.Mode&unix.S_IFMT == unix.S_IFLNK }
func isDir(st *unix.Stat_t) bool  { return st.Mode&unix.S_IFMT == unix.S_IFDIR }
func isReg(st *unix.Stat_t) bool  { return st.Mode&unix.S_IFMT == unix.S_IFREG }

// fileType names what a node is, for messages.
func fileType(st *unix.Stat_t) string {
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		return "directory"
	case unix.S_IFLNK:
		return "symbolic link"
	case unix.S_IFIFO:
		return "named pipe"
	case unix.S_IFSOCK:
		return "socket"
	case unix.S_IFCHR:
		return "character device"
	case unix.S_IFBLK:
		return "block device"
	}
	return "file"
}

// chase resolves p, an absolute path inside the root, the way systemd's
// chase_symlinks() does with a root directory. The directories on the way
// are the kernel's to resolve (dir); what chase adds are systemd's own
// rules: the last component is followed only with followLast, at most 31
// times (see maxSymlinkHops), and with allowMissing a missing component
// ends the walk, the rest of p appended as written (CHASE_NONEXISTENT). st
// describes the last component when it was looked at and exists.
func (t *Tree) chase(p string, followLast, allowMissing bool) (string, *unix.Stat_t, error) {
	hops := 0
	return t.chaseFrom(p, followLast, allowMissing, &hops)
}

func (t *Tree) chaseFrom(p string, followLast, allowMissing bool, hops *int) (string, *unix.Stat_t, error) {
	orig := p
	for {
		dir, base := splitLast(p)
		if base == "." || base == ".." || base == "" {
			// A directory through and through.
			d, err := t.dir(p)
			if err != nil {
				if allowMissing && errors.Is(err, fs.ErrNotExist) {
					return t.missingTail(p, followLast, hops)
				}
				return "", nil, err
			}
			var st unix.Stat_t
			if err := unix.Fstat(d.fd, &st); err != nil {
				return "", nil, ioError("resolving", orig, err)
			}
			return d.path, &st, nil
		}
		d, err := t.dir(dir)
		if err != nil {
			if allowMissing && errors.Is(err, fs.ErrNotExist) {
				return t.missingTail(p, followLast, hops)
			}
			return "", nil, err
		}
		next := path.Join(d.path, base)
		if !followLast {
			return next, nil, nil
		}
		st, err := lstatAt(d, base)
		switch {
		case allowMissing && errors.Is(err, unix.ENOENT):
			return next, nil, nil
		case err != nil:
			return "", nil, ioError("resolving", orig, err)
		case !isLink(&st):
			return next, &st, nil
		}
		if p, err = followLink(d, base, orig, hops); err != nil {
			return "", nil, err
		}
	}
}

// followLink reads the link name in d, counting it in hops (see
// maxSymlinkHops), and returns the path its target names: absolute, or
// relative to where the link really is. orig names the path being resolved
// in errors.
func followLink(d *dirRef, name, orig string, hops *int) (string, error) {
	if *hops++; *hops >= maxSymlinkHops {
		return "", ioError("resolving", orig, unix.ELOOP)
	}
	target, err := readlinkAt(d.fd, name)
	if err != nil {
		return "", ioError("resolving", orig, err)
	}
	if !path.IsAbs(target) {
		target = d.path + "/" + target
	}
	return target, nil
}

// missingTail is chase for a p of which a directory is missing: the
// deepest directory on the way that resolves, then the missing component
// and the rest as written. A link on the way whose target is missing is
// followed to where its target would be, as systemd does (it walks one
// component at a time). Like systemd, it refuses a rest that climbs back
// with "..", which could not be resolved lexically.
func (t *Tree) missingTail(p string, followLast bool, hops *int) (string, *unix.Stat_t, error) {
	comps := strings.Split(strings.Trim(p, "/"), "/")
	parent, _ := t.dir("/")
	for k, c := range comps {
		prefix := "/" + strings.Join(comps[:k+1], "/")
		d, err := t.dir(prefix)
		if err == nil {
			parent = d
			continue
		}
		if !errors.Is(err, fs.ErrNotExist) || parent == nil {
			return "", nil, err
		}
		st, err := lstatAt(parent, c)
		if err == nil && isLink(&st) {
			target, err := followLink(parent, c, p, hops)
			if err != nil {
				return "", nil, err
			}
			rest := comps[k+1:]
			return t.chaseFrom(strings.Join(append([]string{target}, rest...), "/"), followLast, true, hops)
		}
		if err != nil && !errors.Is(err, unix.ENOENT) {
			return "", nil, ioError("resolving", p, err)
		}
		rest := comps[k:]
		for _, r := range rest {
			if r == ".." {
				return "", nil, ioError("resolving", p, unix.ENOENT)
			}
		}
		return path.Join(append([]string{parent.path}, rest...)...), nil, nil
	}
	// Every component resolved as a directory after all (it appeared).
	return parent.path, nil, nil
}

// entry is one name of a directory listing and what it is (lstat).
type entry struct {
	name string
	st   unix.Stat_t
}

// listAt lists the directory at fd (an O_PATH descriptor will do) without
// the hidden and backup entries systemd skips, each entry lstat'ed.
func listAt(fd int, name string) ([]entry, error) {
	dfd, err := unix.Openat(fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(dfd), name)
	defer f.Close()
	names, err := f.Readdirnames(-1)
	if err != nil {
		return nil, errpath.Strip(err)
	}
	ents := make([]entry, 0, len(names))
	for _, n := range names {
		if hiddenOrBackup(n) {
			continue
		}
		var st unix.Stat_t
		if err := unix.Fstatat(dfd, n, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			if errors.Is(err, unix.ENOENT) {
				continue // removed since it was listed
			}
			return nil, fmt.Errorf("%s: %w", n, err)
		}
		ents = append(ents, entry{n, st})
	}
	return ents, nil
}

// readDir lists a directory inside the root (see listAt and dir).
func (t *Tree) readDir(p string) ([]entry, *dirRef, error) {
	d, err := t.dir(p)
	if err != nil {
		return nil, nil, err
	}
	ents, err := listAt(d.fd, ".")
	if err != nil {
		return nil, nil, ioError("reading", p, err)
	}
	return ents, d, nil
}

// isMissing reports the errors for which systemd goes on with the next
// directory of the search path, as if the file were not there.
func isMissing(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, unix.ENOTDIR) || errors.Is(err, fs.ErrPermission)
}

// readAt reads name in d, a file that was just seen as a regular file,
// refusing to follow a symlink or to block on anything swapped in since; p
// names it in errors.
func readAt(d *dirRef, name, p string) ([]byte, error) {
	fd, err := unix.Openat(d.fd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, ioError("reading", p, err)
	}
	f := os.NewFile(uintptr(fd), p)
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, ioError("reading", p, err)
	}
	if !isReg(&st) {
		return nil, fmt.Errorf("%w: %s is not a regular file", ErrBad, p)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxUnitFileSize+1))
	if err != nil {
		return nil, ioError("reading", p, err)
	}
	if len(data) > maxUnitFileSize {
		return nil, fmt.Errorf("%w: %s is larger than %d bytes", ErrBad, p, maxUnitFileSize)
	}
	return data, nil
}

// readFile reads the regular file at p, following symlinks inside the root
// (chase); p names it in errors.
func (t *Tree) readFile(p string) ([]byte, error) {
	r, st, err := t.chase(p, true, false)
	if err != nil {
		return nil, err
	}
	if !isReg(st) {
		return nil, fmt.Errorf("%w: %s is not a regular file (%s)", ErrBad, p, fileType(st))
	}
	d, err := t.dir(path.Dir(r))
	if err != nil {
		return nil, err
	}
	return readAt(d, path.Base(r), p)
}

// isNullOrEmpty mirrors systemd's null_or_empty(): an empty regular file or
// any character device reads as /dev/null.
func isNullOrEmpty(st *unix.Stat_t) bool {
	return st.Mode&unix.S_IFMT == unix.S_IFCHR || (isReg(st) && st.Size == 0)
}
