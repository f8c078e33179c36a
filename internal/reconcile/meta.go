package reconcile

import (
	"errors"
	"fmt"
	"path"

	"github.com/drift-monitor/drift-monitor/internal/escape"
	"github.com/drift-monitor/drift-monitor/internal/ondisk"
	"github.com/drift-monitor/drift-monitor/internal/selinux"
	"golang.org/x/sys/unix"
)

// The inode flags chattr +i and +a set (include/uapi/linux/fs.h).
const (
	fsImmutableFL = 0x00000010
	fsAppendFL    = 0x00000020
)

// clearFlags clears the immutable and append-only flags of the node
// (FS_IOC_SETFLAGS on a read-only descriptor, which an immutable node still
// gives). Without CAP_LINUX_IMMUTABLE the kernel refuses: that is said so,
// with the command that does it.
func (w *writer) clearFlags(dir int, hostPath string) error {
	how := &problem{
		why:     "it is immutable or append-only, and clearing that needs CAP_LINUX_IMMUTABLE, which this process lacks: nothing was changed",
		command: "chattr -i -a " + shellQuote(hostPath),
	}
	if !ondisk.HasCapability(unix.CAP_LINUX_IMMUTABLE) {
		return how
	}
	fd, err := unix.Openat(dir, path.Base(hostPath), unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return opError("opening", hostPath, err)
	}
	defer unix.Close(fd)
	flags, err := unix.IoctlGetUint32(fd, unix.FS_IOC_GETFLAGS)
	if err != nil {
		return opError("reading the inode flags of", hostPath, err)
	}
	err = unix.IoctlSetPointerInt(fd, unix.FS_IOC_SETFLAGS, int(int32(flags&^(fsImmutableFL|fsAppendFL))))
	if errors.Is(err, unix.EPERM) {
		return how
	}
	if err != nil {
		return opError("clearing the immutable and append-only flags of", hostPath, err)
	}
	return nil
}

// removeXattr removes the named xattr of the node dir/name (hostPath).
func (w *writer) removeXattr(dir int, hostPath, x string) error {
	return atNode(dir, hostPath, func(p string) error {
		if err := unix.Removexattr(p, x); err != nil && !errors.Is(err, unix.ENODATA) {
			return opError("removing the extended attribute "+escape.Name(x)+" of", hostPath, err)
		}
		return nil
	})
}

// setLabel gives the node dir/name (hostPath) the SELinux label.
func (w *writer) setLabel(dir int, hostPath, label string) error {
	return atNode(dir, hostPath, func(p string) error {
		if err := unix.Setxattr(p, ondisk.XattrSELinux, append([]byte(label), 0), 0); err != nil {
			return opError("setting the SELinux label of", hostPath, err)
		}
		return nil
	})
}

// atNode calls f with a path to the node dir/name itself: the
// /proc/self/fd link of an O_PATH|O_NOFOLLOW descriptor of it (never
// following a link at its path), for the path-based xattr calls.
func atNode(dir int, hostPath string, f func(p string) error) error {
	fd, err := unix.Openat(dir, path.Base(hostPath), unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return opError("opening", hostPath, err)
	}
	defer unix.Close(fd)
	return f(fmt.Sprintf("/proc/self/fd/%d", fd))
}

var labelTypes = map[ondisk.FileType]selinux.FileType{ondisk.Regular: selinux.Regular, ondisk.Directory: selinux.Directory,
	ondisk.Symlink: selinux.Symlink}
