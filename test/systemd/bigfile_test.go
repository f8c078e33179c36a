package systemd_test

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/drift-monitor/drift-monitor/test/harness"
)

// TestLargeFiles proves, under the shipped unit (WatchdogSec=30s), that one
// writable declared file cannot stall the daemon: a declared file replaced
// by a 74 GiB sparse file, with another declared file tampered at the same
// moment, has both drifts reported promptly — well within the watchdog —
// and the 74 GiB are never read (the size says it all); a verification hash
// over a 74 GiB file is computed in the background while the loop goes on
// reporting other drift and feeding the watchdog, and is dropped when the
// file is restored; a background read that finishes reports its drift; and
// through all of it systemd never restarts the daemon.
func TestLargeFiles(t *testing.T) {
	t.Parallel()
	const (
		exact  = "/etc/big/exact.conf"
		remote = "/etc/big/remote.bin"
		other  = "/etc/other.conf"
		// promptly bounds the wait for a drift the daemon owes at once: it
		// comes within milliseconds; half the watchdog leaves the margin
		// for a loaded machine, and a loop stuck on reading 74 GiB (minutes)
		// is far beyond it.
		promptly = 15 * time.Second
	)
	remoteSum := sha256.Sum256([]byte("remote\n"))
	h := bootDaemon(t, setup{
		config: `{"ignition":{"version":"3.4.0"},"storage":{"files":[
 {"path":"` + exact + `","mode":420,"contents":{"source":"data:,exact%0A"}},
 {"path":"` + remote + `","mode":420,"contents":{"source":"https://example.com/remote.bin","verification":{"hash":"sha256-` + hex.EncodeToString(remoteSum[:]) + `"}}},
 {"path":"` + other + `","mode":420,"contents":{"source":"data:,other%0A"}},
 {"path":"/etc/sentinel","mode":420,"contents":{"source":"data:,s%0A"}}]}}`,
		files: []file{{exact, "exact\n", 0o644}, {remote, "remote\n", 0o644}, {other, "other\n", 0o644}, sentinelFile},
	})
	const clean = "No drift: watching 4 paths, 0 units"
	h.waitStatus(clean)
	pid := h.prop("MainPID")
	if got := h.prop("WatchdogUSec"); got != "30s" {
		t.Fatalf("WatchdogUSec=%s, want the shipped 30s", got)
	}

	t.Run("a 74 GiB file of another size is not read", func(t *testing.T) {
		h := h.in(t)
		m := h.mark()
		start := time.Now()
		h.sh(`truncate -s 74G "$1" && printf 'tampered\n' >"$2"`, exact, other)
		h.waitRecordWithin(promptly, m, harness.DriftDetected, map[string]string{"DRIFT_PATH": other, "DRIFT_KIND": "content"})
		r, _ := h.waitRecordWithin(promptly, m, harness.DriftDetected, map[string]string{"DRIFT_PATH": exact, "DRIFT_KIND": "content"})
		t.Logf("both drifts reported within %v", time.Since(start).Round(time.Millisecond))
		if got, want := r["DRIFT_GOT"], fmt.Sprintf("%d bytes", int64(74)<<30); got != want {
			t.Errorf("DRIFT_GOT=%q, want %q", got, want)
		}
		m = h.mark()
		h.sh(`printf 'exact\n' >"$1" && printf 'other\n' >"$2"`, exact, other)
		h.waitRecord(m, harness.MsgDriftResolved, map[string]string{"DRIFT_PATH": exact})
		h.waitRecord(m, harness.MsgDriftResolved, map[string]string{"DRIFT_PATH": other})
		h.waitStatus(clean)
	})

	t.Run("a verification hash over 74 GiB is computed in the background", func(t *testing.T) {
		h := h.in(t)
		m := h.mark()
		h.sh(`truncate -s 74G "$1" && printf 'tampered\n' >"$2"`, remote, other)
		h.waitRecordWithin(promptly, m, harness.DriftDetected, map[string]string{"DRIFT_PATH": other, "DRIFT_KIND": "content"})
		// Not judged yet: named as being verified (TestNotCleanWhileVerifying).
		const reading = "Drift: 1 path differs (/etc/other.conf: content); verifying 1 large file (/etc/big/remote.bin)"
		h.waitStatus(reading)
		// The loop answers the watchdog while the 74 GiB are hashed (that
		// takes minutes): systemd records a ping after the read began.
		since := h.prop("WatchdogTimestampMonotonic")
		h.WaitFor(t, 2*time.Minute, "a watchdog ping during the background read", func() (bool, string) {
			out, _, err := h.Run(h.ctx, "systemctl", "show", "-p", "WatchdogTimestampMonotonic", "--value", service)
			now := strings.TrimSpace(out)
			return err == nil && now != since && now != "0", "WatchdogTimestampMonotonic=" + now
		})
		if st, err := h.status(); err != nil || st != reading {
			t.Fatalf("status after a watchdog ping: %q (%v), want still %q", st, err, reading)
		}
		// Restored while it is read: the read is dropped, and nothing is
		// reported of the version it was reading.
		h.sh(`printf 'remote\n' >"$1" && printf 'other\n' >"$2"`, remote, other)
		h.waitStatus(clean)
		h.noDriftSince(m, remote)
	})

	t.Run("a background read reports its drift", func(t *testing.T) {
		h := h.in(t)
		m := h.mark()
		h.sh(`truncate -s 64M "$1"`, remote) // over what the loop reads itself
		r, _ := h.waitRecord(m, harness.DriftDetected, map[string]string{"DRIFT_PATH": remote, "DRIFT_KIND": "content"})
		if got, want := r["DRIFT_GOT"], fmt.Sprintf("%d bytes", 64<<20); got != want {
			t.Errorf("DRIFT_GOT=%q, want %q", got, want)
		}
		h.waitStatus("Drift: 1 path differs (/etc/big/remote.bin: content)")
		m = h.mark()
		h.sh(`printf 'remote\n' >"$1"`, remote)
		h.waitRecord(m, harness.MsgDriftResolved, map[string]string{"DRIFT_PATH": remote})
		h.waitStatus(clean)
	})

	if got := h.prop("NRestarts"); got != "0" {
		t.Errorf("NRestarts=%s, want 0", got)
	}
	if got := h.prop("MainPID"); got != pid {
		t.Errorf("MainPID=%s, was %s: the daemon was restarted", got, pid)
	}
	if got := h.prop("ActiveState"); got != "active" {
		t.Errorf("ActiveState=%s", got)
	}
}

// TestNotCleanWhileVerifying proves, under the shipped unit, that a daemon
// whose first check left a large file to the background reader does not
// call the host clean before that file is judged (after a restart,
// `status` must not answer clean while a large remote-source file with a
// mismatching verification hash is still being hashed). From READY=1 until
// the drift is reported, every `drift-monitor status --format summary` (what
// node-problem-detector runs) says "Starting: …", names the file being
// verified and exits 4; none says clean; then it says drift and exits 1.
func TestNotCleanWhileVerifying(t *testing.T) {
	t.Parallel()
	const big = "/var/big.img"
	sum := sha256.Sum256([]byte("what the remote source serves\n"))
	start := time.Now()
	h := bootDaemon(t, setup{
		config: `{"ignition":{"version":"3.4.0"},"storage":{"files":[
 {"path":"` + big + `","mode":420,"contents":{"source":"https://example.com/big.img","verification":{"hash":"sha256-` + hex.EncodeToString(sum[:]) + `"}}}]}}`,
		// Sparse: hashing its 16 GiB of zeros takes seconds, reading
		// the disk nothing.
		commands:  []string{"truncate -s 16G " + big + " && chmod 0644 " + big},
		busPolicy: true,
	})
	ready := time.Now()
	const verifying = "Starting: first check of 1 path, 0 units; verifying 1 large file (" + big + ")"
	var starting, polls int
	h.WaitFor(t, 5*time.Minute, "the drift of "+big+" in drift-monitor status", func() (bool, string) {
		out, errOut, code := h.run("drift-monitor", "status", "--format", "summary", "--timeout", "8s")
		out = strings.TrimSpace(out)
		polls++
		switch {
		case code == 4 && out == verifying:
			starting++
			return false, out
		case code == 1 && out == "Drift: 1 path differs ("+big+": content)":
			return true, ""
		case code == 0:
			t.Fatalf("drift-monitor status said clean (exit 0) while %s was not judged: %q", big, out)
		}
		t.Fatalf("drift-monitor status: exit %d, %q (%s); want exit 4 %q, then exit 1 and its drift", code, out, errOut, verifying)
		return false, ""
	})
	t.Logf("%d of %d status polls said starting; the drift came %v after READY=1 (%v after boot)", starting, polls,
		time.Since(ready).Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
	if starting == 0 {
		t.Errorf("no status poll saw the file being verified: hashing 16 GiB took less than one poll")
	}
	r, _ := h.waitRecord(0, harness.DriftDetected, map[string]string{"DRIFT_PATH": big, "DRIFT_KIND": "content"})
	t.Logf("drift record: %s", r["MESSAGE"])
	// READY=1 came before the file was judged, and said so.
	if r, _ := h.waitRecord(0, harness.MsgReady, nil); r["MESSAGE"] != "Started: "+verifying {
		t.Errorf("ready record %q, want %q", r["MESSAGE"], "Started: "+verifying)
	}
}
