package harness

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"testing"
)

// RequireInitialNetNS calls Unavailable unless the test runs in the
// machine's initial network namespace; why says what needs it. The kernel
// delivers its audit records to listeners of the multicast group only
// there: kauditd_send_multicast_skb sends on init_net's audit socket
// (linux kernel/audit.c), so a reader in any other namespace binds the
// group without an error and receives nothing. `make rpm` runs rpmbuild,
// and so the %check of drift-monitor.spec, in a network namespace of its
// own (packaging/build-rpm.sh: unshare --net).
func RequireInitialNetNS(t testing.TB, why string) {
	t.Helper()
	if ok, how := initialNetNS("/proc"); !ok {
		Unavailable(t, "%s needs the initial network namespace, and %s", why, how)
	}
}

// initialNetNS says whether this process is in the initial network
// namespace, as far as procfs (mounted at proc) tells: it compares this
// process's namespace with that of kthreadd, which is a kernel thread and
// in the initial namespaces whenever it is visible (PID 2 in the initial
// PID namespace), or, in a PID namespace of its own where no kernel thread
// is visible, with that of its PID 1: a namespace that is not even PID 1's
// is not the initial one. When neither can be read it says yes, with why
// it could not tell: a test then runs and fails if it needed more.
func initialNetNS(proc string) (ok bool, how string) {
	self, err := os.Readlink(proc + "/self/ns/net")
	if err != nil {
		return true, fmt.Sprintf("cannot tell (%v)", err)
	}
	if kernelThread(proc, 2, "kthreadd") {
		init, err := os.Readlink(proc + "/2/ns/net")
		if err == nil {
			if init != self {
				return false, fmt.Sprintf("this process is in %s, not the kernel's %s (kthreadd's)", self, init)
			}
			return true, "the kernel's (kthreadd's)"
		}
	}
	pid1, err := os.Readlink(proc + "/1/ns/net")
	if err != nil {
		return true, fmt.Sprintf("cannot tell (%v)", err)
	}
	if pid1 != self {
		return false, fmt.Sprintf("this process is in %s, not even PID 1's %s", self, pid1)
	}
	return true, "PID 1's"
}

// pfKthread is the kernel's PF_KTHREAD task flag (include/linux/sched.h),
// the ninth field of /proc/PID/stat.
const pfKthread = 0x00200000

// kernelThread reports whether pid is the kernel thread name: its stat says
// so by name, a parent of 0 and the PF_KTHREAD flag.
func kernelThread(proc string, pid int, name string) bool {
	b, err := os.ReadFile(proc + "/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// "2 (kthreadd) S 0 0 0 0 -1 2129984 ...": the name is in parentheses
	// and may hold anything, so the fields are counted after the last ")".
	open, end := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
	if open < 0 || end < open || string(b[open+1:end]) != name {
		return false
	}
	f := bytes.Fields(b[end+1:])
	if len(f) < 7 {
		return false
	}
	// After the name: state, ppid, pgrp, session, tty_nr, tpgid, flags.
	flags, err := strconv.ParseUint(string(f[6]), 10, 64)
	return err == nil && string(f[1]) == "0" && flags&pfKthread != 0
}
