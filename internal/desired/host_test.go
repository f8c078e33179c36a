package desired

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
	"syscall"
)

// dirHost is a Host over a directory for desired's own tests, which cannot
// import ondisk (it imports desired): Go's os.Root, which refuses a link
// out of the directory rather than resolve it inside as ondisk.Root does
// (root_test.go tests that, through ondisk).
type dirHost string

func (d dirHost) Dir() string { return string(d) }

func (d dirHost) Join(p string) string { return path.Join(string(d), p) }

func (d dirHost) rel(p string) string {
	if r := strings.TrimPrefix(path.Clean(p), "/"); r != "" {
		return r
	}
	return "."
}

func (d dirHost) Open(p string) (*os.File, error) {
	r, err := os.OpenRoot(string(d))
	if err != nil {
		return nil, err
	}
	defer r.Close()
	f, err := r.OpenFile(d.rel(p), os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		f.Close()
		return nil, &fs.PathError{Op: "open", Path: d.Join(p), Err: errors.New("not a regular file")}
	}
	return f, nil
}

func (d dirHost) ReadFile(p string) ([]byte, error) {
	f, err := d.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

func (d dirHost) ReadDir(p string) ([]fs.DirEntry, error) {
	r, err := os.OpenRoot(string(d))
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return fs.ReadDir(r.FS(), d.rel(p))
}

func (d dirHost) StatDir(p string) (fs.FileInfo, error) {
	r, err := os.OpenRoot(string(d))
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return r.Stat(d.rel(p))
}
