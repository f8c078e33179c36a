package systemd_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/drift-monitor/drift-monitor/test/harness"
)

// TestAccountWritersUnderSystemd: the account files are read when their
// writers are done with them, under the shipped unit. The cases share one
// booted host declaring the user core:
//   - an identical rewrite of /etc/passwd in place (cat passwd.copy
//     >/etc/passwd), read half-way, reported `user "core": does not exist`
//     and its resolution;
//   - a change made while vipw holds its lock ("PID\0": taken for garbage,
//     the lock was ignored) is not reported while vipw lives, the status
//     saying what it waits for; once vipw is killed, its lock left behind,
//     the change is reported without any event;
//   - a lock of pid 1 (anyone who may write the lock file can write it) kept
//     a change unreported, the status clean, for ever: it is honoured, the
//     status says checking, and once it is older than its minute the change
//     is reported.
func TestAccountWritersUnderSystemd(t *testing.T) {
	t.Parallel()
	h := bootDaemon(t, setup{
		config: `{"ignition":{"version":"3.4.0"},"passwd":{"users":[{"name":"core","shell":"/bin/bash"}]},
 "storage":{"files":[{"path":"/etc/sentinel","mode":420,"contents":{"source":"data:,s%0A"}}]}}`,
		files:    []file{sentinelFile, {"/root/slow-editor", "#!/bin/sh\nexec sleep 600\n", 0o755}},
		commands: []string{"useradd --create-home --shell /bin/bash core", "cp /etc/passwd /root/passwd.copy"},
	})
	const clean = "No drift: watching 2 paths, 0 units"
	h.waitStatus(clean)
	shell := map[string]string{"DRIFT_USER": "core", "DRIFT_KIND": "shell", "DRIFT_PATH": "/etc/passwd"}
	checking := func(lock, pid string) string {
		return fmt.Sprintf("Checking: watching 2 paths, 0 units; users and groups wait for their writer's lock %s (PID %s)", lock, pid)
	}

	t.Run("an identical rewrite in place", func(t *testing.T) {
		h := h.in(t)
		m := h.mark()
		// A writer that pauses after the truncation (the behaviour under
		// test, as a loaded machine would have it), then back to back.
		h.sh(`exec 3>/etc/passwd; sleep 0.5; cat /root/passwd.copy >&3; exec 3>&-
for i in 1 2 3; do cat /root/passwd.copy >/etc/passwd; cp /root/passwd.copy /etc/passwd; done`)
		// A real change after them, renamed into place: checked at once,
		// so that what the rewrites gave is in the journal before it.
		h.MustRun(t, "usermod", "-s", "/bin/sh", "core")
		_, at := h.waitRecord(m, harness.DriftDetected, shell)
		passwd := map[string]string{"DRIFT_PATH": "/etc/passwd"}
		for _, id := range []string{harness.DriftDetected, harness.MsgDriftResolved} {
			if got := h.between(m, at, id, passwd); len(got) > 0 {
				t.Errorf("a rewrite of the same bytes: %s", got[0])
			}
		}
		m = h.mark()
		h.MustRun(t, "usermod", "-s", "/bin/bash", "core")
		h.waitRecord(m, harness.MsgDriftResolved, shell)
		h.waitStatus(clean)
	})

	t.Run("vipw's lock", func(t *testing.T) {
		h := h.in(t)
		// vipw holds /etc/passwd.lock while its editor runs.
		h.sh(`EDITOR=/root/slow-editor setsid vipw </dev/null >/dev/null 2>&1 & echo $! >/root/vipw.pid`)
		pid := strings.TrimSpace(h.MustRun(t, "cat", "/root/vipw.pid"))
		h.WaitFor(t, recordTimeout, "vipw's lock, its pid and a NUL", func() (bool, string) {
			out, _, err := h.Run(h.ctx, "sh", "-c", `tr '\0' @ </etc/passwd.lock`)
			return err == nil && out == pid+"@", fmt.Sprintf("%q", out)
		})
		m := h.mark()
		// Another writer, past the lock (usermod would wait for it).
		h.sh(`sed -i 's|^core:\(.*\):/bin/bash$|core:\1:/bin/sh|' /etc/passwd`)
		h.waitStatus(checking("/etc/passwd.lock", pid))
		h.noDriftSince(m, "/etc/passwd")
		if out, _, err := h.Run(h.ctx, "drift-monitor", "status"); err == nil {
			t.Errorf("drift-monitor status exits 0 while the accounts wait for a lock:\n%s", out)
		}

		m = h.mark()
		h.MustRun(t, "kill", "-KILL", pid) // its lock left behind, naming the dead
		h.waitRecord(m, harness.DriftDetected, shell)
		h.waitStatus("Drift: 1 path differs (user core: shell)")
		m = h.mark()
		h.sh(`rm -f /etc/passwd.lock; pkill -f '^sleep 600$'; usermod -s /bin/bash core`)
		h.waitRecord(m, harness.MsgDriftResolved, shell)
		h.waitStatus(clean)
	})

	t.Run("a lock of pid 1, until it is stale", func(t *testing.T) {
		h := h.in(t)
		h.sh(`printf '1\0' >/etc/group.lock`)
		m := h.mark()
		h.sh(`sed -i 's|^core:\(.*\):/bin/bash$|core:\1:/bin/sh|' /etc/passwd`)
		h.waitStatus(checking("/etc/group.lock", "1"))
		h.noDriftSince(m, "/etc/passwd")

		// Ten seconds short of its minute: still honoured. When the
		// minute runs out no event says so; the daemon looks.
		m = h.mark()
		h.sh(`touch -d '50 seconds ago' /etc/group.lock`)
		h.waitStatus(checking("/etc/group.lock", "1"))
		h.waitRecordWithin(10*time.Second+recordTimeout, m, harness.DriftDetected, shell)
		m = h.mark()
		h.sh(`rm /etc/group.lock; usermod -s /bin/bash core`)
		h.waitRecord(m, harness.MsgDriftResolved, shell)
		h.waitStatus(clean)
	})
}
