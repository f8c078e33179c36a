package discover

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/drift-monitor/drift-monitor/internal/desired/configerr"
	"github.com/drift-monitor/drift-monitor/internal/errpath"
)

// Files reads the files Fragments listed: inside Root when they are the
// default locations, at the paths given when explicit ones replaced them
// (Explicit).
type Files struct {
	Root     Host
	Explicit bool
}

// Open opens a listed file for reading. Only a regular file is opened, and
// without blocking: a pipe or a device has no size to trust, and opening one
// (even without reading) could take what the parse needs from its writer.
func (c Files) Open(name string) (*os.File, error) {
	if !c.Explicit {
		return c.Root.Open(HostPath(c.Root.Dir(), name))
	}
	if fi, err := os.Stat(name); err != nil {
		return nil, err
	} else if !fi.Mode().IsRegular() {
		return nil, &fs.PathError{Op: "open", Path: name, Err: errors.New("not a regular file")}
	}
	return os.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
}

// Read reads a listed file whole. An explicit file is read as it is, even
// a pipe (`--config /dev/stdin`).
func (c Files) Read(name string) ([]byte, error) {
	if !c.Explicit {
		return c.Root.ReadFile(HostPath(c.Root.Dir(), name))
	}
	return os.ReadFile(name)
}

// ReadAll reads the config files; an error names the file.
func (src Files) ReadAll(files []string) ([][]byte, error) {
	raws := make([][]byte, len(files))
	for i, f := range files {
		raw, err := src.Read(f)
		if err != nil {
			return nil, &configerr.LoadError{File: f, Err: errpath.Strip(err)}
		}
		raws[i] = raw
	}
	return raws, nil
}

// Reopen says how to open a listed file again, for a parse that lets its
// bytes go and reads them again should its report need them
// (ignspec.Reopen); nil for a file that cannot be (not a regular file: a
// pipe's bytes are kept). An error names the file.
func (src Files) Reopen(name string) func() (io.ReadCloser, error) {
	f, err := src.Open(name)
	if err != nil {
		return nil
	}
	f.Close()
	return func() (io.ReadCloser, error) {
		f, err := src.Open(name)
		if err != nil {
			return nil, &configerr.LoadError{File: name, Err: errpath.Strip(err)}
		}
		return f, nil
	}
}

// HostPath is a config file as the host under root sees it (file without
// root), for output: every path drift-monitor prints is the host's.
func HostPath(root, file string) string {
	if rel, err := filepath.Rel(root, file); err == nil && root != "" && filepath.Clean(root) != "/" &&
		rel != ".." && !strings.HasPrefix(rel, "../") {
		return "/" + rel
	}
	if abs, err := filepath.Abs(file); err == nil {
		return abs
	}
	return file
}
