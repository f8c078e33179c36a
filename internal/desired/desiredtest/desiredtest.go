// Package desiredtest holds what the loader's tests share: a Host over a
// directory, and a writer of fixture files. Only tests import it.
package desiredtest

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/drift-monitor/drift-monitor/internal/ondisk"
)

// DirHost is a Host over a directory for the loader's own tests: Go's
// os.Root, which refuses a link out of the directory rather than resolve
// it inside as ondisk.Root does (root_test.go tests that, through ondisk);
// the walk of a path, for the check of who could have written a config,
// is ondisk.Root's.
type DirHost string

func (d DirHost) Dir() string { return string(d) }

func (d DirHost) Join(p string) string { return path.Join(string(d), p) }

func (d DirHost) rel(p string) string {
	if r := strings.TrimPrefix(path.Clean(p), "/"); r != "" {
		return r
	}
	return "."
}

func (d DirHost) Open(p string) (*os.File, error) {
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

func (d DirHost) ReadFile(p string) ([]byte, error) {
	f, err := d.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

func (d DirHost) ReadDir(p string) ([]fs.DirEntry, error) {
	r, err := os.OpenRoot(string(d))
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return fs.ReadDir(r.FS(), d.rel(p))
}

func (d DirHost) Owner() int {
	fi, err := os.Stat(string(d))
	if err != nil {
		return -1
	}
	return int(fi.Sys().(*syscall.Stat_t).Uid)
}

func (d DirHost) Walk(p string, visit func(ondisk.Step) error) error {
	r, err := ondisk.OpenRoot(string(d))
	if err != nil {
		return err
	}
	defer r.Close()
	return r.Walk(p, visit)
}

// WriteFile writes a fixture file, making its directories.
func WriteFile(t testing.TB, name, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(name, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
