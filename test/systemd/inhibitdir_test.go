package systemd_test

import (
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/drift-monitor/drift-monitor/test/harness"
)

// TestInhibitDirRecreated: /run/drift-monitor/inhibit.d removed under the
// running daemon (rm -rf) and made again by the next `drift-monitor
// inhibit`. The daemon follows the new directory: the inhibitor taken in
// it is released when its holder exits (as the man page says, within a
// second, also when it dies of SIGKILL), what the holder changed is
// reported at the release, later edits are reported, no descriptor of a
// removed lock file stays open, and the directory's removal is journaled.
func TestInhibitDirRecreated(t *testing.T) {
	t.Parallel()
	h := bootDaemon(t, setup{
		config:    etcFileAndSentinel,
		files:     []file{etcFileOK, sentinelFile},
		busPolicy: true,
	})
	const clean = "No drift: watching 2 paths, 0 units"
	h.waitStatus(clean)
	evs := h.watchBus(h.hostBus())
	start := h.mark()

	t.Run("an update tool's inhibitor in the new directory is released at its end", func(t *testing.T) {
		h := h.in(t)
		h.MustRun(t, "rm", "-rf", inhibitDir)
		from := evs.mark()
		out, errOut, code := h.run("drift-monitor", "inhibit", "--who", "upd", "--why", "v2", "--",
			"sh", "-c", `echo changed >>/etc/etc-file; sleep 1`)
		ended := time.Now()
		if code != 0 {
			t.Fatalf("drift-monitor inhibit: exit %d, want 0\n%s%s", code, out, errOut)
		}
		// Inhibited while it ran, and the release's full check reports
		// the change it made.
		evs.wait(t, from, recordTimeout, "State inhibited", changed("State", "inhibited"))
		const drifted = "Drift: 1 path differs (/etc/etc-file: content)"
		e, _ := evs.wait(t, from, recordTimeout, "State drifted", changed("State", "drifted"))
		t.Logf("released and checked %v after drift-monitor inhibit returned", e.at.Sub(ended).Round(time.Millisecond))
		if e.at.Sub(ended) > 2*time.Second {
			t.Errorf("the release came %v after the holder ended, want within a second (and its check)", e.at.Sub(ended))
		}
		h.waitStatus(drifted)
		h.waitRecord(start, harness.MsgResumed, nil)
		h.waitRecord(start, harness.DriftDetected, map[string]string{"DRIFT_PATH": etcFile})
		h.sh(`printf 'hello world\n' >/etc/etc-file`)
		h.waitStatus(clean)
	})

	t.Run("a later edit is reported", func(t *testing.T) {
		h := h.in(t)
		m := h.mark()
		h.MustRun(t, "chmod", "0600", sentinel)
		h.waitRecord(m, harness.DriftDetected, map[string]string{"DRIFT_PATH": sentinel, "DRIFT_KIND": "mode"})
		h.MustRun(t, "chmod", "0644", sentinel)
		h.waitStatus(clean)
	})

	t.Run("no removed lock file is held open", func(t *testing.T) {
		h := h.in(t)
		pid := h.prop("MainPID")
		out := h.sh(`ls -l /proc/"$1"/fd`, pid)
		if strings.Contains(out, "(deleted)") {
			t.Errorf("the daemon holds removed files open:\n%s", out)
		}
	})

	t.Run("a holder killed in a directory made again releases within a second", func(t *testing.T) {
		h := h.in(t)
		h.MustRun(t, "rm", "-rf", inhibitDir)
		x := h.inhibitHolder("dm-hold-after-rm", "after-rm", "held")
		h.waitStatus(fmt.Sprintf("Inhibited by after-rm (pid %d): held", x.pid))
		from := evs.mark()
		killed := time.Now()
		if err := syscall.Kill(h.hostPID(x.pid), syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		e, _ := evs.wait(t, from, recordTimeout, "StatusText "+clean, changed("StatusText", clean))
		t.Logf("released %v after SIGKILL", e.at.Sub(killed).Round(time.Microsecond))
		if e.at.Sub(killed) > time.Second {
			t.Errorf("released %v after SIGKILL, want within a second", e.at.Sub(killed))
		}
	})

	t.Run("the removal is journaled", func(t *testing.T) {
		h := h.in(t)
		// Removed, and made again by drift-monitor inhibit or by the
		// daemon, whichever came first.
		r, _ := h.waitRecord(start, harness.MsgInhibitorsRewatched, nil)
		removed := "The inhibitor directory " + inhibitDir + " was removed: following the new one (inhibitors held in the old one no longer count)"
		again := "The inhibitor directory " + inhibitDir + " was removed and made again: following the new one (inhibitors held in the old one no longer count)"
		if (r["MESSAGE"] != removed && r["MESSAGE"] != again) || r["PRIORITY"] != "4" {
			t.Errorf("record %q at priority %s, want %q or %q at 4 (warning)", r["MESSAGE"], r["PRIORITY"], removed, again)
		}
	})
}
