package fsx

import (
	"errors"
	"io"
)

// How says how WriteFile gives the temporary file its final name.
type How int

const (
	// Replace renames over whatever has the name (rename(2)).
	Replace How = iota
	// NoReplace renames only if the name is free (RENAME_NOREPLACE, or
	// link(2) where a file system lacks it); the temporary is removed
	// either way.
	NoReplace
	// LinkOnce links the temporary under the name only if the name is
	// free, then removes the temporary: the first writer wins.
	LinkOnce
)

// File is what WriteFile writes: a temporary file of Pattern (see
// CreateTemp) in the directory, mode Mode whatever the umask (set through
// the descriptor), placed as Name by How. NoSync leaves out both fsyncs
// (of the file, and of the directory after the placing): a cache that may
// lose an entry to a power cut.
type File struct {
	Name, Pattern string
	Mode          uint32
	How           How
	NoSync        bool
}

// Error is a failed step of WriteFile: Op is "creating", "writing",
// "renaming" or "syncing"; Name is the temporary file's name (creating,
// writing), the final one (renaming), or "." for the directory (creating
// the temporary file in it, syncing it).
type Error struct {
	Op, Name string
	Err      error
}

func (e *Error) Error() string { return e.Op + " " + e.Name + ": " + e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// WriteFile writes f in dir through fs: a reader of dir/f.Name sees the
// old file (or none) or all of the new one, never a part, and after a
// crash at most a temporary file is left over. write fills the file. A
// name already taken under NoReplace or LinkOnce is an Error wrapping
// unix.EEXIST (errors.Is(err, fs.ErrExist) holds), the file left alone.
// Ignition's Util.PerformFetch (internal/exec/util/file.go) and tailscale's
// atomicfile.WriteFile are this routine on paths.
func WriteFile(fs FS, dir int, f File, write func(io.Writer) error) error {
	fd, tmp, err := fs.CreateTemp(dir, f.Pattern)
	if err != nil {
		return &Error{"creating", ".", err}
	}
	open, placed := true, false
	defer func() {
		if open {
			fs.Close(fd)
		}
		if !placed {
			fs.Remove(dir, tmp, false)
		}
	}()
	if err := fs.Fchmod(fd, f.Mode); err != nil {
		return &Error{"creating", tmp, err}
	}
	if err := write(fdWriter{fs, fd}); err != nil {
		return &Error{"writing", tmp, err}
	}
	if !f.NoSync {
		if err := fs.Fsync(fd); err != nil {
			return &Error{"writing", tmp, err}
		}
	}
	open = false
	if err := fs.Close(fd); err != nil {
		return &Error{"writing", tmp, err}
	}
	switch f.How {
	case Replace:
		err = fs.Rename(dir, tmp, f.Name)
	case NoReplace:
		err = fs.RenameNoReplace(dir, tmp, f.Name)
	case LinkOnce:
		err = fs.Link(dir, tmp, f.Name)
	default:
		err = errors.New("unknown placing")
	}
	if err != nil {
		return &Error{"renaming", f.Name, err}
	}
	placed = f.How != LinkOnce
	if f.NoSync {
		return nil
	}
	if err := fs.SyncDir(dir); err != nil {
		return &Error{"syncing", ".", err}
	}
	return nil
}

// fdWriter writes to a descriptor through FS (so that a test sees each
// write).
type fdWriter struct {
	fs FS
	fd int
}

func (w fdWriter) Write(b []byte) (int, error) {
	if err := w.fs.Write(w.fd, b); err != nil {
		return 0, err
	}
	return len(b), nil
}

// Bytes is a write function for WriteFile that writes b.
func Bytes(b []byte) func(io.Writer) error {
	return func(w io.Writer) error { _, err := w.Write(b); return err }
}
