package ondisk

import (
	"io/fs"

	"golang.org/x/sys/unix"
)

// Identity is the device and inode of the root directory itself: on an
// ostree host, the booted deployment's directory (ostree finds its booted
// deployment by them: src/libostree/ostree-sysroot.c, parse_deployment).
func (r *Root) Identity() (dev, ino uint64) { return r.dev, r.ino }

// DirIdentity is the device and inode of a host directory inside the root,
// links on the way followed as Open follows them. An error is an
// *fs.PathError naming the path inside the root (Join).
func (r *Root) DirIdentity(hostDir string) (dev, ino uint64, err error) {
	fd, err := r.openDir(hostDir)
	if err != nil {
		return 0, 0, &fs.PathError{Op: "stat", Path: r.Join(hostDir), Err: err}
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return 0, 0, &fs.PathError{Op: "stat", Path: r.Join(hostDir), Err: err}
	}
	return st.Dev, st.Ino, nil
}
