package errpath

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"
	"testing"
)

func TestStrip(t *testing.T) {
	plain := errors.New("plain")
	for _, tc := range []struct {
		name string
		err  error
		want error
	}{
		{"path error", &fs.PathError{Op: "open", Path: "/root/etc/passwd", Err: syscall.ENOENT}, syscall.ENOENT},
		{"link error", &os.LinkError{Op: "rename", Old: "/a", New: "/b", Err: syscall.EXDEV}, syscall.EXDEV},
		{"wrapped path error", fmt.Errorf("reading: %w", &fs.PathError{Op: "read", Path: "/x", Err: syscall.EIO}), syscall.EIO},
		{"no path", plain, plain},
		{"path error without an error", &fs.PathError{Op: "open", Path: "/x"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Strip(tc.err)
			if tc.want == nil {
				if got != tc.err {
					t.Errorf("Strip(%v) = %v, want the error itself", tc.err, got)
				}
				return
			}
			if got != tc.want {
				t.Errorf("Strip(%v) = %v, want %v", tc.err, got, tc.want)
			}
		})
	}
}
