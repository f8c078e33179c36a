// Package auditlock is the one lock on the kernel's audit state (its rules,
// its enabled flag, its backlog limit) for everything in this repository
// that changes it: the audit tests (harness.AuditHost) and the benchmark's
// part 7. That state is one per host, and go test runs packages in
// parallel (rpmbuild's %check may run beside the tiers, a benchmark beside
// both): one user at a time changes it. The lock is not a promise about
// anything else on the host (auditd, augenrules).
package auditlock

import (
	"fmt"
	"os"
	"syscall"
)

// Path is the lock's fixed place, not under TMPDIR, which each runner may
// set differently. Its users run as root, so /run is writable.
const Path = "/run/drift-monitor-audit-tests.lock"

// Take waits for the lock and returns its release.
func Take() (release func(), err error) {
	f, err := os.OpenFile(Path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening the audit state's lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("locking the host's audit state (%s): %w", Path, err)
	}
	return func() { f.Close() }, nil
}
