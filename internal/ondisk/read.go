package ondisk

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/drift-monitor/drift-monitor/internal/errpath"
	"golang.org/x/sys/unix"
)

// Reading the root's own files: the desired-state directories, the account
// databases, the exclusion file. Unlike an observation, these follow
// symbolic links (an /etc/passwd that is a link is read through it), but
// only as openat2(RESOLVE_IN_ROOT) does: an absolute target, or one that
// climbs with "..", stays inside the root. A lexical join of the root and a
// host path would follow an absolute link out to the running host's file.

// ErrNotRegular is the error of Open and ReadFile for a path that is neither
// a regular file nor a link to one (a directory, a FIFO, a device): nothing
// but a regular file is ever opened for reading.
var ErrNotRegular = errors.New("not a regular file")

// Open opens the regular file at a host path for reading, following
// symbolic links inside the root. The file is named by its path inside the
// root (Join), for messages. An error is an *fs.PathError naming that path.
func (r *Root) Open(hostPath string) (*os.File, error) {
	fd, err := r.openFileIn(hostPath)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: r.Join(hostPath), Err: err}
	}
	return os.NewFile(uintptr(fd), r.Join(hostPath)), nil
}

// ReadFile reads the regular file at a host path whole (see Open).
func (r *Root) ReadFile(hostPath string) ([]byte, error) {
	f, err := r.Open(hostPath)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := ReadAll(f)
	if err != nil {
		return nil, &fs.PathError{Op: "read", Path: f.Name(), Err: errpath.Strip(err)}
	}
	return data, nil
}

// ReadAll reads an open file to its end into a buffer of the size fstat
// gives (and a byte more, to see the end without growing it), as
// os.ReadFile reads a path: io.ReadAll's growing chunks, copied into one
// buffer at the end, would hold twice a large file (a config of a hundred
// megabytes) at once.
func ReadAll(f *os.File) ([]byte, error) {
	size := 0
	if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() && fi.Size() < 1<<40 {
		size = int(fi.Size())
	}
	data := make([]byte, 0, size+1)
	for {
		n, err := f.Read(data[len(data):cap(data)])
		data = data[:len(data)+n]
		if err == io.EOF {
			return data, nil
		}
		if err != nil {
			return data, err
		}
		if len(data) == cap(data) {
			data = append(data, 0)[:len(data)] // it grew since fstat
		}
	}
}

// openFileIn resolves a host path to a regular file and opens it. The
// parent directory is resolved as openDir does; a link in the last
// component is read and its target resolved the same way, from the root
// when it is absolute, from the link's directory otherwise (the target is
// appended unclean, so that ".." climbs from where the directory really
// is, as the kernel's resolution does).
func (r *Root) openFileIn(p string) (int, error) {
	for range maxSymlinks {
		dir, base := splitLast(p)
		if base == "" || base == "." || base == ".." {
			return -1, ErrNotRegular
		}
		dfd, err := r.openDir(dir)
		if err != nil {
			return -1, err
		}
		var st unix.Stat_t
		if err := fstatat(dfd, base, &st); err != nil {
			unix.Close(dfd)
			return -1, err
		}
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFLNK:
			target, err := readlinkat(dfd, base)
			unix.Close(dfd)
			if err != nil {
				return -1, err
			}
			if strings.HasPrefix(target, "/") {
				p = target
			} else {
				p = dir + "/" + target
			}
			continue
		case unix.S_IFREG:
		default:
			unix.Close(dfd)
			return -1, ErrNotRegular
		}
		fd, err := openFile(dfd, base)
		unix.Close(dfd)
		if err != nil {
			return -1, err
		}
		// Replaced between the stat and the open: O_NOFOLLOW kept a link
		// out, O_NONBLOCK a FIFO from blocking; refuse what is not a file.
		if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
			unix.Close(fd)
			if err == nil {
				err = ErrNotRegular
			}
			return -1, err
		}
		return fd, nil
	}
	return -1, unix.ELOOP
}

// splitLast splits a path before its last component without cleaning it
// (path.Dir would resolve "a/link/.." lexically).
func splitLast(p string) (dir, base string) {
	p = strings.TrimRight(p, "/")
	i := strings.LastIndexByte(p, '/')
	if i < 0 {
		return "/", p
	}
	if i == 0 {
		return "/", p[1:]
	}
	return p[:i], p[i+1:]
}

// ReadDir lists a host directory inside the root (links on the way resolved
// as Open resolves them), sorted by name. The entries say what each name is
// (Type, and Info from lstat): a link is a link, not what it points to.
func (r *Root) ReadDir(hostDir string) ([]fs.DirEntry, error) {
	ents, err := r.readDir(hostDir)
	if err != nil {
		return nil, &fs.PathError{Op: "readdir", Path: r.Join(hostDir), Err: err}
	}
	return ents, nil
}

func (r *Root) readDir(hostDir string) ([]fs.DirEntry, error) {
	pfd, err := r.openDir(hostDir)
	if err != nil {
		return nil, err
	}
	defer unix.Close(pfd)
	// An O_PATH descriptor cannot be listed: open the directory itself.
	dfd, err := unix.Openat(pfd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(dfd), r.Join(hostDir))
	defer f.Close()
	names, err := f.Readdirnames(-1)
	if err != nil {
		return nil, errpath.Strip(err)
	}
	sort.Strings(names)
	ents := make([]fs.DirEntry, 0, len(names))
	for _, n := range names {
		var st unix.Stat_t
		if err := fstatat(dfd, n, &st); err != nil {
			if errors.Is(err, unix.ENOENT) {
				continue // removed since it was listed
			}
			return nil, fmt.Errorf("%s: %w", n, err)
		}
		ents = append(ents, fs.FileInfoToDirEntry(statInfo{name: n, st: st}))
	}
	return ents, nil
}

// statInfo is an lstat result as an fs.FileInfo.
type statInfo struct {
	name string
	st   unix.Stat_t
}

func (s statInfo) Name() string       { return s.name }
func (s statInfo) Size() int64        { return s.st.Size }
func (s statInfo) ModTime() time.Time { return time.Unix(s.st.Mtim.Unix()) }
func (s statInfo) IsDir() bool        { return s.Mode().IsDir() }
func (s statInfo) Sys() any           { return &s.st }
func (s statInfo) Mode() fs.FileMode {
	m := fs.FileMode(s.st.Mode & 0o777)
	switch s.st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		m |= fs.ModeDir
	case unix.S_IFLNK:
		m |= fs.ModeSymlink
	case unix.S_IFIFO:
		m |= fs.ModeNamedPipe
	case unix.S_IFSOCK:
		m |= fs.ModeSocket
	case unix.S_IFCHR:
		m |= fs.ModeDevice | fs.ModeCharDevice
	case unix.S_IFBLK:
		m |= fs.ModeDevice
	}
	if s.st.Mode&unix.S_ISUID != 0 {
		m |= fs.ModeSetuid
	}
	if s.st.Mode&unix.S_ISGID != 0 {
		m |= fs.ModeSetgid
	}
	if s.st.Mode&unix.S_ISVTX != 0 {
		m |= fs.ModeSticky
	}
	return m
}

// IsHost reports whether the root is the running host's / (the same
// directory, however it was named): only then are its kernel command line
// /proc/cmdline and its units the running systemd's.
func (r *Root) IsHost() bool {
	var st unix.Stat_t
	if err := unix.Stat("/", &st); err != nil {
		return false
	}
	return st.Dev == r.dev && st.Ino == r.ino
}
