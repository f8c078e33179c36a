package osstate

import (
	"fmt"
	"io/fs"
	"os"

	"github.com/drift-monitor/drift-monitor/internal/errpath"
	"github.com/drift-monitor/drift-monitor/internal/ondisk"
)

// The root's reads, their errors naming the host path (as every output
// names paths, never prefixed with a --root) and still matching
// fs.ErrNotExist and the like.

func hostErr(op, p string, err error) error {
	if err == nil {
		return nil
	}
	return &fs.PathError{Op: op, Path: p, Err: errpath.Strip(err)}
}

func readFile(r *ondisk.Root, p string) ([]byte, error) {
	b, err := r.ReadFile(p)
	return b, hostErr("read", p, err)
}

func readDir(r *ondisk.Root, p string) ([]fs.DirEntry, error) {
	ents, err := r.ReadDir(p)
	return ents, hostErr("readdir", p, err)
}

func openFile(r *ondisk.Root, p string) (*os.File, error) {
	f, err := r.Open(p)
	return f, hostErr("open", p, err)
}

func dirIdentity(r *ondisk.Root, p string) (dev, ino uint64, err error) {
	dev, ino, err = r.DirIdentity(p)
	if err != nil {
		err = fmt.Errorf("%s: %w", p, errpath.Strip(err))
	}
	return dev, ino, err
}
