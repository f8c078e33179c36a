package systemd_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/drift-monitor/drift-monitor/test/harness"
)

// TestNothingToWatch: under real systemd, a daemon whose last config file
// is removed says it has nothing to watch — systemctl status's line, a
// journal record, and `drift-monitor status` over the system bus, exit 1 —
// and a Butane fragment put in its place is watched: the file it declares,
// removed, is drift.
func TestNothingToWatch(t *testing.T) {
	t.Parallel()
	h := bootDaemon(t, setup{config: etcFileAndSentinel, files: []file{etcFileOK, sentinelFile}, busPolicy: true})
	h.waitStatus("No drift: watching 2 paths, 0 units")

	m := h.mark()
	h.MustRun(t, "rm", configPath)
	const nothing = "Nothing to watch: no config file in /usr/lib/drift-monitor/desired.d or /etc/drift-monitor/desired.d"
	h.waitStatus(nothing)
	h.waitRecord(m, harness.MsgNothingToWatch, nil)
	out, errOut, code := h.run("drift-monitor", "status", "--format", "summary")
	if code != 1 || strings.TrimSpace(out) != nothing {
		t.Errorf("drift-monitor status --format summary: exit %d, %q, %q; want 1 and %q", code, out, errOut, nothing)
	}

	m = h.mark()
	h.WriteFile(t, "/etc/drift-monitor/desired.d/50-site.bu", []byte("variant: fcos\nversion: 1.7.0\nstorage:\n  files:\n    - path: "+
		etcFileOK.path+"\n      mode: 0644\n      contents:\n        inline: "+strconv.Quote(etcFileOK.content)+"\n"), 0o600)
	h.waitStatus("No drift: watching 1 path, 0 units")
	h.MustRun(t, "rm", etcFileOK.path)
	h.waitRecord(m, harness.DriftDetected, map[string]string{"DRIFT_PATH": etcFileOK.path, "DRIFT_KIND": "missing"})
}
