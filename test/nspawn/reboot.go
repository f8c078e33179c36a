package nspawn

import (
	"errors"
	"os/exec"
	"testing"
	"time"
)

// RebootExitStatus is how systemd-nspawn exits when the container's systemd
// reboots (`systemctl reboot` inside): systemd-nspawn@.service restarts it
// on that status (RestartForceExitStatus=133).
const RebootExitStatus = 133

// WaitRebooted waits (bounded) until the container rebooted: systemd-nspawn
// exited with RebootExitStatus. Boot the same tree again with Boot and the
// same Options: what the container keeps across the reboot is what its
// Bind mounts keep (a host directory bound at /etc and /var, say); /run
// and everything else of the volatile root start empty, as on a host.
func (m *Machine) WaitRebooted(t testing.TB, timeout time.Duration) {
	t.Helper()
	if !m.waitExited(timeout) {
		t.Fatalf("%s: no reboot within %v\n%s", m.Name, timeout, m.logTail(40))
	}
	var ee *exec.ExitError
	if err := m.exitErr(); !errors.As(err, &ee) || ee.ExitCode() != RebootExitStatus {
		t.Fatalf("%s: systemd-nspawn exited (%v), not with %d (a reboot)\n%s", m.Name, err, RebootExitStatus, m.logTail(40))
	}
}
