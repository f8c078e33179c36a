package audit

import (
	"testing"

	"golang.org/x/sys/unix"
)

// TestAarch64TableIsTheKernels: the aarch64 table against x/sys/unix's
// numbers (generated from the kernel's headers), where this test runs.
func TestAarch64TableIsTheKernels(t *testing.T) {
	for n, name := range map[int]string{
		unix.SYS_OPENAT: "openat", unix.SYS_OPENAT2: "openat2", unix.SYS_TRUNCATE: "truncate", unix.SYS_FTRUNCATE: "ftruncate",
		unix.SYS_FALLOCATE: "fallocate", unix.SYS_RENAMEAT: "renameat", unix.SYS_RENAMEAT2: "renameat2",
		unix.SYS_UNLINKAT: "unlinkat", unix.SYS_LINKAT: "linkat", unix.SYS_SYMLINKAT: "symlinkat",
		unix.SYS_MKDIRAT: "mkdirat", unix.SYS_MKNODAT: "mknodat", unix.SYS_FCHMOD: "fchmod", unix.SYS_FCHMODAT: "fchmodat",
		unix.SYS_FCHOWN: "fchown", unix.SYS_FCHOWNAT: "fchownat", unix.SYS_SETXATTR: "setxattr",
		unix.SYS_LSETXATTR: "lsetxattr", unix.SYS_FSETXATTR: "fsetxattr", unix.SYS_REMOVEXATTR: "removexattr",
		unix.SYS_LREMOVEXATTR: "lremovexattr", unix.SYS_FREMOVEXATTR: "fremovexattr", unix.SYS_UTIMENSAT: "utimensat",
		unix.SYS_OPEN_BY_HANDLE_AT: "open_by_handle_at",
	} {
		if got := aarch64Syscalls[n]; got != name {
			t.Errorf("aarch64 syscall %d: %q, want %q", n, got, name)
		}
	}
}
