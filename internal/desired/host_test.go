package desired

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
	"syscall"

	"github.com/drift-monitor/drift-monitor/internal/ondisk"
)

// dirHost is a Host over a directory for desired's own tests: Go's
// os.Root, which refuses a link out of the directory rather than resolve
// it inside as ondisk.Root does (root_test.go tests that, through ondisk);
// the walk of a path, for the check of who could have written a config,
// is ondisk.Root's.
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

func (d dirHost) Owner() int {
	fi, err := os.Stat(string(d))
	if err != nil {
		return -1
	}
	return int(fi.Sys().(*syscall.Stat_t).Uid)
}

func (d dirHost) Walk(p string, visit func(ondisk.Step) error) error {
	r, err := ondisk.OpenRoot(string(d))
	if err != nil {
		return err
	}
	defer r.Close()
	return r.Walk(p, visit)
}
