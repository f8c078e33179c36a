package systemd_test

import (
	"strings"
	"testing"
	"time"

	"github.com/drift-monitor/drift-monitor/test/harness"
)

// TestAncestorMovedAway proves that moving away a directory on the way to
// declared paths — /etc/storm, which holds only the declared directories d1
// and d2, in an /etc that holds no declared path — is reported at once as
// missing drift, and that a tree re-created at the old place with tampered
// content is looked at at once too. The periodic check is a day away: only
// real-time detection passes.
func TestAncestorMovedAway(t *testing.T) {
	t.Parallel()
	const (
		f1 = "/etc/storm/d1/f"
		f2 = "/etc/storm/d2/f"
	)
	h := bootDaemon(t, setup{
		config: `{"ignition":{"version":"3.4.0"},"storage":{"files":[
 {"path":"` + f1 + `","mode":420,"contents":{"source":"data:,one%0A"}},
 {"path":"` + f2 + `","mode":420,"contents":{"source":"data:,two%0A"}}]}}`,
		files: []file{{f1, "one\n", 0o644}, {f2, "two\n", 0o644}},
		flags: []string{"--interval", "24h"},
	})
	if got := h.prop("ExecStart"); !strings.Contains(got, "argv[]=/usr/bin/drift-monitor daemon --interval 24h ") {
		t.Fatalf("the drop-in is not in force: ExecStart=%s", got)
	}
	const clean = "No drift: watching 2 paths, 0 units"
	h.waitStatus(clean)

	t.Run("moved away is missing", func(t *testing.T) {
		h := h.in(t)
		m := h.mark()
		start := time.Now()
		h.sh(`mv /etc/storm /etc/storm.gone`)
		for _, p := range []string{f1, f2} {
			h.waitRecord(m, harness.DriftDetected, map[string]string{"DRIFT_PATH": p, "DRIFT_KIND": "missing"})
		}
		t.Logf("the move reported after %v", time.Since(start).Round(time.Millisecond))
		h.waitStatus("Drift: 2 paths differ (/etc/storm/d1/f: missing; /etc/storm/d2/f: missing)")
	})

	t.Run("re-created with tampered content", func(t *testing.T) {
		h := h.in(t)
		m := h.mark()
		start := time.Now()
		h.sh(`mkdir -p /etc/storm/d1 /etc/storm/d2 && printf 'tampered\n' >"$1" && printf 'two\n' >"$2"`, f1, f2)
		h.waitRecord(m, harness.DriftDetected, map[string]string{"DRIFT_PATH": f1, "DRIFT_KIND": "content"})
		h.waitRecord(m, harness.MsgDriftResolved, map[string]string{"DRIFT_PATH": f2, "DRIFT_KIND": "missing"})
		t.Logf("the re-created tree reported after %v", time.Since(start).Round(time.Millisecond))
		h.waitStatus("Drift: 1 path differs (/etc/storm/d1/f: content)")
		// The watches are on the new tree: a later change there is seen.
		m = h.mark()
		h.sh(`printf 'edited\n' >"$1"`, f2)
		h.waitRecord(m, harness.DriftDetected, map[string]string{"DRIFT_PATH": f2, "DRIFT_KIND": "content"})
	})

	t.Run("the old tree moved back", func(t *testing.T) {
		h := h.in(t)
		m := h.mark()
		h.sh(`rm -rf /etc/storm && mv /etc/storm.gone /etc/storm`)
		h.waitRecord(m, harness.MsgDriftResolved, map[string]string{"DRIFT_PATH": f1, "DRIFT_KIND": "content"})
		h.waitRecord(m, harness.MsgDriftResolved, map[string]string{"DRIFT_PATH": f2, "DRIFT_KIND": "content"})
		h.waitStatus(clean)
	})
}
