package enablement

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	"github.com/drift-monitor/drift-monitor/internal/errpath"
)

// maxSymlinkHops is systemd's CHASE_SYMLINKS_MAX.
const maxSymlinkHops = 32

// maxUnitFileSize bounds what is read of one unit file or drop-in; systemd
// has no such bound, but a unit file this large is not one.
const maxUnitFileSize = 64 << 20

// A Tree looks up enablement states in one root directory. It caches the
// resolution of directories and the symlinks found in the unit search path,
// so that checking many units costs one scan of the search path: the cache
// describes the tree as it was when first read, so make a new Tree for each
// check pass. A Tree is safe for concurrent use; lookups are serialized.
type Tree struct {
	root string // host path of the root; "/" for the running system

	mu    sync.Mutex
	dirs  map[string]resolved // directory path inside the root → where it leads
	scans map[string]*scan    // search directory → symlinks found in it
	specs map[byte]specValue  // system specifiers (%m, %H, %o...) once computed
}

type resolved struct {
	path string
	err  error
}

// Open returns a Tree for the root directory root ("/" for the running
// system). It fails if root is not a readable directory.
func Open(root string) (*Tree, error) {
	if root == "" {
		return nil, errors.New("reading root: empty path")
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("reading root %s: %w", root, err)
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return nil, fmt.Errorf("reading root %s: %w", root, errpath.Strip(err))
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("reading root %s: %w", root, syscall.ENOTDIR)
	}
	return &Tree{
		root:  abs,
		dirs:  map[string]resolved{},
		scans: map[string]*scan{},
		specs: map[byte]specValue{},
	}, nil
}

// host turns a path as seen inside the root into a path on this host.
func (t *Tree) host(p string) string {
	if t.root == "/" {
		return p
	}
	return t.root + p
}

// ioError wraps err with an operation and a path inside the root.
func ioError(op, p string, err error) error {
	return fmt.Errorf("%s %s: %w", op, p, errpath.Strip(err))
}

// chase resolves p, an absolute path inside the root, one component at a
// time the way systemd's chase_symlinks() does with a root directory:
// absolute symlink targets start again at the root and ".." never climbs
// above it. With followLast false the last component is not followed (and
// not looked at); with allowMissing, a missing component ends the walk and
// the rest of p is appended as written (CHASE_NONEXISTENT). fi describes
// the last component when it was looked at and exists.
func (t *Tree) chase(p string, followLast, allowMissing bool) (res string, fi fs.FileInfo, err error) {
	done, todo, hops := "/", p, 0
	for {
		todo = strings.TrimLeft(todo, "/")
		if todo == "" {
			return done, fi, nil
		}
		comp, rest, _ := strings.Cut(todo, "/")
		todo = rest
		last := strings.Trim(todo, "/") == ""
		fi = nil
		switch comp {
		case ".":
			continue
		case "..":
			done = path.Dir(done)
			continue
		}
		next := path.Join(done, comp)
		if last && !followLast {
			return next, nil, nil
		}
		st, err := os.Lstat(t.host(next))
		if err != nil {
			if allowMissing && errors.Is(err, fs.ErrNotExist) {
				// Like systemd, refuse to append a remainder that climbs
				// back with "..": it could not be resolved lexically.
				rem := strings.Trim(todo, "/")
				for _, c := range strings.Split(rem, "/") {
					if c == ".." {
						return "", nil, ioError("resolving", p, err)
					}
				}
				return path.Join(next, rem), nil, nil
			}
			return "", nil, ioError("resolving", p, err)
		}
		if st.Mode()&fs.ModeSymlink != 0 {
			if hops++; hops > maxSymlinkHops {
				return "", nil, ioError("resolving", p, syscall.ELOOP)
			}
			target, err := os.Readlink(t.host(next))
			if err != nil {
				return "", nil, ioError("resolving", p, err)
			}
			if path.IsAbs(target) {
				done = "/"
			}
			todo = target + "/" + todo
			continue
		}
		if !last && !st.IsDir() {
			return "", nil, ioError("resolving", p, syscall.ENOTDIR)
		}
		done, fi = next, st
	}
}

// resolveDir resolves a directory path inside the root, following every
// symlink in it; results are cached.
func (t *Tree) resolveDir(p string) (string, error) {
	p = path.Clean(p)
	if p == "/" {
		return "/", nil
	}
	if r, ok := t.dirs[p]; ok {
		return r.path, r.err
	}
	parent, err := t.resolveDir(path.Dir(p))
	var res string
	if err == nil {
		var fi fs.FileInfo
		res, fi, err = t.chase(path.Join(parent, path.Base(p)), true, false)
		if err == nil && fi == nil {
			// The walk ended on "." or "..": look at where it ended.
			fi, err = os.Stat(t.host(res))
			if err != nil {
				err = ioError("resolving", p, err)
			}
		}
		if err == nil && !fi.IsDir() {
			err = ioError("resolving", p, syscall.ENOTDIR)
		}
	}
	t.dirs[p] = resolved{res, err}
	return res, err
}

// fileHostPath returns the host path of p with every symlink in its
// directory resolved inside the root and its last component left alone.
func (t *Tree) fileHostPath(p string) (string, error) {
	dir, err := t.resolveDir(path.Dir(p))
	if err != nil {
		return "", err
	}
	return t.host(path.Join(dir, path.Base(p))), nil
}

// readDir lists a directory inside the root, without the hidden and backup
// entries systemd skips.
func (t *Tree) readDir(p string) ([]fs.DirEntry, string, error) {
	dir, err := t.resolveDir(p)
	if err != nil {
		return nil, "", err
	}
	ents, err := os.ReadDir(t.host(dir))
	if err != nil {
		return nil, "", ioError("reading", p, err)
	}
	kept := ents[:0]
	for _, e := range ents {
		if !hiddenOrBackup(e.Name()) {
			kept = append(kept, e)
		}
	}
	return kept, dir, nil
}

// isMissing reports the errors for which systemd goes on with the next
// directory of the search path, as if the file were not there.
func isMissing(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) || errors.Is(err, fs.ErrPermission)
}

// readRegular reads a file that was just seen as a regular file, refusing to
// follow a symlink or to block on anything swapped in since.
func readRegular(hostPath, p string) ([]byte, error) {
	f, err := os.OpenFile(hostPath, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err != nil {
		return nil, ioError("reading", p, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, ioError("reading", p, err)
	}
	if !fi.Mode().IsRegular() {
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

// isNullOrEmpty mirrors systemd's null_or_empty(): an empty regular file or
// any character device reads as /dev/null.
func isNullOrEmpty(fi fs.FileInfo) bool {
	return fi.Mode()&fs.ModeCharDevice != 0 || (fi.Mode().IsRegular() && fi.Size() == 0)
}
