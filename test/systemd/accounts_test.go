package systemd_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/drift-monitor/drift-monitor/test/harness"
)

// TestAccountsOnALiveHost: on a live host, `usermod -s` of a declared user
// is reported by a daemon whose periodic check is an hour away, within the
// bound an inotify event's check keeps (the watch on /etc, where usermod
// renames /etc/passwd+ over /etc/passwd), and `chpasswd -e` is reported
// without the hash reaching the journal; `drift-monitor reconcile` puts
// both back.
func TestAccountsOnALiveHost(t *testing.T) {
	t.Parallel()
	const (
		within   = 10 * time.Second // milliseconds in fact; the margin is a loaded CI machine's
		wantHash = "$6$sdWantSalt$LiveHostWantedHashNeverJournaled"
		gotHash  = "$6$sdGotSalt$LiveHostOtherHashNeverJournaled"
	)
	h := bootDaemon(t, setup{
		config: fmt.Sprintf(`{"ignition":{"version":"3.4.0"},"passwd":{"users":[
 {"name":"core","shell":"/bin/bash","passwordHash":%q}]}}`, wantHash),
		// The image's core, as Ignition leaves it.
		commands: []string{"useradd --create-home --shell /bin/bash core", "echo 'core:" + wantHash + "' | chpasswd -e"},
		flags:    []string{"--interval", "1h"},
	})
	const clean = "No drift: watching 1 path, 0 units"
	h.waitStatus(clean)
	want := map[string]string{"DRIFT_ENTRY": "user", "DRIFT_USER": "core", "DRIFT_KIND": "shell", "DRIFT_PATH": "/etc/passwd"}

	m := h.mark()
	start := time.Now()
	h.MustRun(t, "usermod", "-s", "/bin/sh", "core")
	r, _ := h.waitRecordWithin(within, m, harness.DriftDetected, want)
	t.Logf("usermod -s reported after %v", time.Since(start).Round(time.Millisecond))
	if !strings.Contains(r["MESSAGE"], `user "core": shell is "/bin/sh", want "/bin/bash"`) {
		t.Errorf("MESSAGE = %q", r["MESSAGE"])
	}
	h.waitStatus("Drift: 1 path differs (user core: shell)")

	m = h.mark()
	h.sh(`echo "core:$1" | chpasswd -e`, gotHash)
	h.waitRecordWithin(within, m, harness.DriftDetected, map[string]string{"DRIFT_USER": "core", "DRIFT_KIND": "password-hash", "DRIFT_PATH": "/etc/shadow"})

	// reconcile on the live host puts both back, with usermod and
	// chpasswd -e (--root /), under its inhibitor.
	m = h.mark()
	out := h.MustRun(t, "drift-monitor", "reconcile")
	if !strings.Contains(out, "usermod --shell /bin/bash core") || strings.Contains(out, "NeverJournaled") {
		t.Errorf("reconcile printed:\n%s", out)
	}
	h.waitRecordWithin(within, m, harness.MsgDriftResolved, want)
	h.waitStatus(clean)
	if got := h.sh(`grep '^core:' /etc/passwd; grep -c "^core:$1:" /etc/shadow`, wantHash); !strings.Contains(got, ":/bin/bash\n1") {
		t.Errorf("after reconcile: %q", got)
	}

	journal := h.MustRun(t, "journalctl", "-u", service, "--no-pager", "-o", "json", "--all")
	for _, s := range []string{"LiveHostWantedHashNeverJournaled", "LiveHostOtherHashNeverJournaled", "sdWantSalt", "sdGotSalt"} {
		if strings.Contains(journal, s) {
			t.Errorf("a password hash reached the journal (%s)", s)
		}
	}
}
