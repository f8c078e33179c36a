package audit

import (
	"strconv"

	"golang.org/x/sys/unix"
)

// The system calls are named by the architecture the SYSCALL record gives
// in its arch= field (the kernel's AUDIT_ARCH_* of the calling task:
// include/uapi/linux/audit.h), not by the one drift-monitor was built for:
// a 32-bit process on a 64-bit kernel makes its calls by the 32-bit table,
// where 83 is symlink, not x86_64's mkdir. Each table holds the calls that
// write a path or its metadata — what a `-p wa` watch audits (the kernel's
// audit_write and audit_change_attr classes, and the opens that may write)
// — with the numbers of the kernel's tables (arch/x86/entry/syscalls/
// syscall_64.tbl and syscall_32.tbl, arch/arm64's and include/uapi/
// asm-generic/unistd.h, arch/arm/tools/syscall.tbl, arch/powerpc/kernel/
// syscalls/syscall.tbl, arch/s390/kernel/syscalls/syscall.tbl) and the
// names auditd's ausearch -i gives them (linux-audit/audit-userspace
// lib/*_table.h, ea855020: i386's 16-bit chown is "chown", its 32-bit one
// "chown32"). Another call, or a call of another architecture, is
// "syscall N" (with the architecture when it is not known here).

// syscallTables are the tables by AUDIT_ARCH_*: ppc64 and ppc64le share
// one, as in the kernel.
var syscallTables = map[uint32]map[int]string{
	unix.AUDIT_ARCH_X86_64:  x86_64Syscalls,
	unix.AUDIT_ARCH_I386:    i386Syscalls,
	unix.AUDIT_ARCH_AARCH64: aarch64Syscalls,
	unix.AUDIT_ARCH_ARM:     armSyscalls,
	unix.AUDIT_ARCH_PPC64:   ppcSyscalls,
	unix.AUDIT_ARCH_PPC64LE: ppcSyscalls,
	unix.AUDIT_ARCH_S390X:   s390xSyscalls,
}

// archNames are the names ausearch -i writes for arch= (audit-userspace
// lib/machinetab.h), for records it interpreted.
var archNames = map[string]uint32{
	"x86_64": unix.AUDIT_ARCH_X86_64, "i386": unix.AUDIT_ARCH_I386, "i486": unix.AUDIT_ARCH_I386,
	"i586": unix.AUDIT_ARCH_I386, "i686": unix.AUDIT_ARCH_I386, "aarch64": unix.AUDIT_ARCH_AARCH64,
	"armv8l": unix.AUDIT_ARCH_AARCH64, "arm": unix.AUDIT_ARCH_ARM, "armv7l": unix.AUDIT_ARCH_ARM,
	"ppc64": unix.AUDIT_ARCH_PPC64, "ppc64le": unix.AUDIT_ARCH_PPC64LE, "s390x": unix.AUDIT_ARCH_S390X,
}

// SyscallName names system call n of the architecture arch, as a SYSCALL
// record's arch= gives it (hex AUDIT_ARCH_*, or a name ausearch -i wrote):
// "symlink", or "syscall 83" for a call not named here, or "syscall 83
// (arch 40000008)" when the architecture is not known here ("arch unknown"
// when arch is no architecture at all: nothing of it is repeated).
func SyscallName(arch string, n int) string {
	a, ok := archNames[arch]
	if !ok {
		v, err := strconv.ParseUint(arch, 16, 32)
		if err != nil {
			return syscallNum(n) + " (arch unknown)"
		}
		a = uint32(v)
	}
	table, ok := syscallTables[a]
	if !ok {
		return syscallNum(n) + " (arch " + strconv.FormatUint(uint64(a), 16) + ")"
	}
	if s, ok := table[n]; ok {
		return s
	}
	return syscallNum(n)
}

func syscallNum(n int) string { return "syscall " + strconv.Itoa(n) }

// x86_64Syscalls: lib/x86_64_table.h.
var x86_64Syscalls = map[int]string{
	2: "open", 76: "truncate", 77: "ftruncate", 82: "rename", 83: "mkdir", 84: "rmdir", 85: "creat",
	86: "link", 87: "unlink", 88: "symlink", 90: "chmod", 91: "fchmod", 92: "chown", 93: "fchown",
	94: "lchown", 132: "utime", 133: "mknod", 188: "setxattr", 189: "lsetxattr", 190: "fsetxattr",
	197: "removexattr", 198: "lremovexattr", 199: "fremovexattr", 235: "utimes", 257: "openat",
	258: "mkdirat", 259: "mknodat", 260: "fchownat", 261: "futimesat", 263: "unlinkat",
	264: "renameat", 265: "linkat", 266: "symlinkat", 268: "fchmodat", 280: "utimensat",
	285: "fallocate", 304: "open_by_handle_at", 316: "renameat2", 437: "openat2", 452: "fchmodat2",
	463: "setxattrat", 466: "removexattrat",
}

// i386Syscalls: lib/i386_table.h.
var i386Syscalls = map[int]string{
	5: "open", 8: "creat", 9: "link", 10: "unlink", 14: "mknod", 15: "chmod", 16: "lchown",
	30: "utime", 38: "rename", 39: "mkdir", 40: "rmdir", 83: "symlink", 92: "truncate",
	93: "ftruncate", 94: "fchmod", 95: "fchown", 182: "chown", 193: "truncate64", 194: "ftruncate64",
	198: "lchown32", 207: "fchown32", 212: "chown32", 226: "setxattr", 227: "lsetxattr",
	228: "fsetxattr", 235: "removexattr", 236: "lremovexattr", 237: "fremovexattr", 271: "utimes",
	295: "openat", 296: "mkdirat", 297: "mknodat", 298: "fchownat", 299: "futimesat", 301: "unlinkat",
	302: "renameat", 303: "linkat", 304: "symlinkat", 306: "fchmodat", 320: "utimensat",
	324: "fallocate", 342: "open_by_handle_at", 353: "renameat2", 412: "utimensat_time64",
	437: "openat2", 452: "fchmodat2", 463: "setxattrat", 466: "removexattrat",
}

// aarch64Syscalls: lib/aarch64_table.h.
var aarch64Syscalls = map[int]string{
	5: "setxattr", 6: "lsetxattr", 7: "fsetxattr", 14: "removexattr", 15: "lremovexattr",
	16: "fremovexattr", 33: "mknodat", 34: "mkdirat", 35: "unlinkat", 36: "symlinkat", 37: "linkat",
	38: "renameat", 45: "truncate", 46: "ftruncate", 47: "fallocate", 52: "fchmod", 53: "fchmodat",
	54: "fchownat", 55: "fchown", 56: "openat", 88: "utimensat", 265: "open_by_handle_at",
	276: "renameat2", 437: "openat2", 452: "fchmodat2", 463: "setxattrat", 466: "removexattrat",
}

// armSyscalls: lib/arm_table.h.
var armSyscalls = map[int]string{
	5: "open", 8: "creat", 9: "link", 10: "unlink", 14: "mknod", 15: "chmod", 16: "lchown",
	30: "utime", 38: "rename", 39: "mkdir", 40: "rmdir", 83: "symlink", 92: "truncate",
	93: "ftruncate", 94: "fchmod", 95: "fchown", 182: "chown", 193: "truncate64", 194: "ftruncate64",
	198: "lchown32", 207: "fchown32", 212: "chown32", 226: "setxattr", 227: "lsetxattr",
	228: "fsetxattr", 235: "removexattr", 236: "lremovexattr", 237: "fremovexattr", 269: "utimes",
	322: "openat", 323: "mkdirat", 324: "mknodat", 325: "fchownat", 326: "futimesat", 328: "unlinkat",
	329: "renameat", 330: "linkat", 331: "symlinkat", 333: "fchmodat", 348: "utimensat",
	352: "fallocate", 371: "open_by_handle_at", 382: "renameat2", 412: "utimensat_time64",
	437: "openat2", 452: "fchmodat2", 463: "setxattrat", 466: "removexattrat",
}

// ppcSyscalls: lib/ppc_table.h.
var ppcSyscalls = map[int]string{
	5: "open", 8: "creat", 9: "link", 10: "unlink", 14: "mknod", 15: "chmod", 16: "lchown",
	30: "utime", 38: "rename", 39: "mkdir", 40: "rmdir", 83: "symlink", 92: "truncate",
	93: "ftruncate", 94: "fchmod", 95: "fchown", 181: "chown", 193: "truncate64", 194: "ftruncate64",
	209: "setxattr", 210: "lsetxattr", 211: "fsetxattr", 218: "removexattr", 219: "lremovexattr",
	220: "fremovexattr", 251: "utimes", 286: "openat", 287: "mkdirat", 288: "mknodat",
	289: "fchownat", 290: "futimesat", 292: "unlinkat", 293: "renameat", 294: "linkat",
	295: "symlinkat", 297: "fchmodat", 304: "utimensat", 309: "fallocate", 346: "open_by_handle_at",
	357: "renameat2", 412: "utimensat_time64", 437: "openat2", 452: "fchmodat2", 463: "setxattrat",
	466: "removexattrat",
}

// s390xSyscalls: lib/s390x_table.h.
var s390xSyscalls = map[int]string{
	5: "open", 8: "creat", 9: "link", 10: "unlink", 14: "mknod", 15: "chmod", 30: "utime",
	38: "rename", 39: "mkdir", 40: "rmdir", 83: "symlink", 92: "truncate", 93: "ftruncate",
	94: "fchmod", 198: "lchown", 207: "fchown", 212: "chown", 224: "setxattr", 225: "lsetxattr",
	226: "fsetxattr", 233: "removexattr", 234: "lremovexattr", 235: "fremovexattr", 288: "openat",
	289: "mkdirat", 290: "mknodat", 291: "fchownat", 292: "futimesat", 294: "unlinkat",
	295: "renameat", 296: "linkat", 297: "symlinkat", 299: "fchmodat", 313: "utimes",
	314: "fallocate", 315: "utimensat", 336: "open_by_handle_at", 347: "renameat2", 437: "openat2",
	452: "fchmodat2", 463: "setxattrat", 466: "removexattrat",
}
