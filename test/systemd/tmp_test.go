package systemd_test

import (
	"strings"
	"testing"

	"github.com/drift-monitor/drift-monitor/test/harness"
)

// TestTemporaryDirectories proves that the daemon sees the host's /tmp and
// /var/tmp, not directories of its own (PrivateTmp=): a declared file in
// each, present and right, is clean; changed, it is drift; put back, the
// drift is resolved.
func TestTemporaryDirectories(t *testing.T) {
	t.Parallel()
	const (
		varTmp = "/var/tmp/drift-monitor-test.conf"
		tmp    = "/tmp/drift-monitor-test.conf"
	)
	h := bootDaemon(t, setup{
		config: `{"ignition":{"version":"3.4.0"},"storage":{"files":[
 {"path":"` + varTmp + `","mode":420,"contents":{"source":"data:,declared%0A"}},
 {"path":"` + tmp + `","mode":420,"contents":{"source":"data:,declared%0A"}}]}}`,
		files: []file{{varTmp, "declared\n", 0o644}, {tmp, "declared\n", 0o644}},
	})
	const clean = "No drift: watching 2 paths, 0 units"
	h.waitStatus(clean)
	// Seen, not shared: the daemon's view of them is read-only
	// (ProtectSystem=strict).
	for _, dir := range []string{"/tmp", "/var/tmp"} {
		if out, errOut, err := h.Run(h.ctx, "nsenter", "-t", h.prop("MainPID"), "-m", "touch", dir+"/drift-monitor-probe"); err == nil ||
			!strings.Contains(errOut, "Read-only file system") {
			t.Errorf("touch %s/drift-monitor-probe in the daemon's mount namespace: %v %s%s, want EROFS", dir, err, out, errOut)
		}
	}
	for _, p := range []string{varTmp, tmp} {
		t.Run(p, func(t *testing.T) {
			h := h.in(t)
			m := h.mark()
			h.sh(`printf 'changed\n' >"$1"`, p)
			h.waitRecord(m, harness.DriftDetected, map[string]string{"DRIFT_PATH": p, "DRIFT_KIND": "content"})
			h.waitStatus("Drift: 1 path differs (" + p + ": content)")
			m = h.mark()
			h.sh(`printf 'declared\n' >"$1"`, p)
			h.waitRecord(m, harness.MsgDriftResolved, map[string]string{"DRIFT_PATH": p, "DRIFT_KIND": "content"})
			h.waitStatus(clean)
		})
	}
}
