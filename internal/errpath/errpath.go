// Package errpath takes the path out of an error from the os and io/fs
// functions (*fs.PathError, *os.LinkError), for messages that name the path
// themselves: as a host path inside --root, or once, not twice.
//
// It promises to return the underlying error (a syscall.Errno, fs.ErrNotExist
// and the like, which errors.Is still matches) or err itself when it carries
// no path; it never returns nil for a non-nil err. It does not take the path
// out of an error that merely mentions it in its text.
package errpath

import (
	"errors"
	"io/fs"
	"os"
)

// Strip returns the error inside the outermost *fs.PathError or
// *os.LinkError that err wraps, or err when it wraps neither.
func Strip(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) && pe.Err != nil {
		return pe.Err
	}
	var le *os.LinkError
	if errors.As(err, &le) && le.Err != nil {
		return le.Err
	}
	return err
}
