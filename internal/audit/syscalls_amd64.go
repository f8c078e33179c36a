package audit

import "golang.org/x/sys/unix"

// legacySyscalls are the path calls x86_64 keeps beside their *at forms.
var legacySyscalls = map[int]string{
	unix.SYS_OPEN: "open", unix.SYS_CREAT: "creat",
	unix.SYS_RENAME: "rename", unix.SYS_UNLINK: "unlink", unix.SYS_RMDIR: "rmdir",
	unix.SYS_LINK: "link", unix.SYS_SYMLINK: "symlink", unix.SYS_MKDIR: "mkdir", unix.SYS_MKNOD: "mknod",
	unix.SYS_CHMOD: "chmod", unix.SYS_CHOWN: "chown", unix.SYS_LCHOWN: "lchown",
	unix.SYS_UTIMES: "utimes", unix.SYS_UTIME: "utime",
}
