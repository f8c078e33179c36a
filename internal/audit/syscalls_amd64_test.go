package audit

import (
	"testing"

	"golang.org/x/sys/unix"
)

// TestX86_64TableIsTheKernels: the x86_64 table against x/sys/unix's
// numbers (generated from the kernel's headers), where this test runs.
func TestX86_64TableIsTheKernels(t *testing.T) {
	for n, name := range map[int]string{
		unix.SYS_OPEN: "open", unix.SYS_CREAT: "creat", unix.SYS_OPENAT: "openat", unix.SYS_OPENAT2: "openat2",
		unix.SYS_TRUNCATE: "truncate", unix.SYS_FTRUNCATE: "ftruncate", unix.SYS_FALLOCATE: "fallocate",
		unix.SYS_RENAME: "rename", unix.SYS_RENAMEAT: "renameat", unix.SYS_RENAMEAT2: "renameat2",
		unix.SYS_UNLINK: "unlink", unix.SYS_UNLINKAT: "unlinkat", unix.SYS_RMDIR: "rmdir",
		unix.SYS_LINK: "link", unix.SYS_LINKAT: "linkat", unix.SYS_SYMLINK: "symlink", unix.SYS_SYMLINKAT: "symlinkat",
		unix.SYS_MKDIR: "mkdir", unix.SYS_MKDIRAT: "mkdirat", unix.SYS_MKNOD: "mknod", unix.SYS_MKNODAT: "mknodat",
		unix.SYS_CHMOD: "chmod", unix.SYS_FCHMOD: "fchmod", unix.SYS_FCHMODAT: "fchmodat",
		unix.SYS_CHOWN: "chown", unix.SYS_FCHOWN: "fchown", unix.SYS_LCHOWN: "lchown", unix.SYS_FCHOWNAT: "fchownat",
		unix.SYS_SETXATTR: "setxattr", unix.SYS_LSETXATTR: "lsetxattr", unix.SYS_FSETXATTR: "fsetxattr",
		unix.SYS_REMOVEXATTR: "removexattr", unix.SYS_LREMOVEXATTR: "lremovexattr", unix.SYS_FREMOVEXATTR: "fremovexattr",
		unix.SYS_UTIME: "utime", unix.SYS_UTIMES: "utimes", unix.SYS_FUTIMESAT: "futimesat", unix.SYS_UTIMENSAT: "utimensat",
		unix.SYS_OPEN_BY_HANDLE_AT: "open_by_handle_at",
	} {
		if got := x86_64Syscalls[n]; got != name {
			t.Errorf("x86_64 syscall %d: %q, want %q", n, got, name)
		}
	}
}
