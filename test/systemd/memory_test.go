package systemd_test

import (
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/drift-monitor/drift-monitor/test/harness"
)

// stormScript, run as `sh stormScript N PREFIX` in the container, writes
// the N files of the storm config, each "PREFIX I\n" and 500 x's, from one
// shell (thousands of nsenter calls would take minutes).
const stormScript = "/root/storm.sh"

const stormFiles = `set -e
x=$(printf '%0500d' 0 | tr 0 x)
i=0
while [ $i -lt "$1" ]; do
	d=/etc/storm/d$(printf %02d $((i / 100)))
	mkdir -p $d
	printf '%s %d\n%s' "$2" $i "$x" >$d/f$(printf %04d $i).conf
	i=$((i + 1))
done`

// TestMemoryAfterStormsUnderSystemd: the service through three storms of
// drift and repair of thousands of files comes back, once quiet, to the
// resident memory it had before them (a GC tuner whose limit rose at
// every collection under load would not: internal/daemon/gc.go).
func TestMemoryAfterStormsUnderSystemd(t *testing.T) {
	t.Parallel()
	const n = 3000
	var cfg strings.Builder
	cfg.WriteString(`{"ignition":{"version":"3.4.0"},"storage":{"files":[`)
	for i := range n {
		if i > 0 {
			cfg.WriteByte(',')
		}
		content := fmt.Sprintf("file %d\n%s", i, strings.Repeat("x", 500))
		fmt.Fprintf(&cfg, `{"path":"/etc/storm/d%02d/f%04d.conf","mode":420,"contents":{"source":"data:;base64,%s"}}`,
			i/100, i, base64.StdEncoding.EncodeToString([]byte(content)))
	}
	cfg.WriteString("]}}")
	h := bootDaemon(t, setup{config: cfg.String(), files: []file{{stormScript, stormFiles, 0o644}},
		commands: []string{fmt.Sprintf("sh %s %d file", stormScript, n)}})
	clean := fmt.Sprintf("No drift: watching %d paths, 0 units", n)
	h.waitStatus(clean)

	rss := func() int64 {
		t.Helper()
		pid := h.prop("MainPID")
		out := h.MustRun(t, "grep", "^VmRSS:", "/proc/"+pid+"/status")
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(strings.TrimPrefix(out, "VmRSS:")), " kB"), 10, 64)
		if err != nil {
			t.Fatalf("VmRSS of %s: %q: %v", pid, out, err)
		}
		return kb << 10
	}
	drifts := func() int {
		t.Helper()
		out := h.sh(`journalctl --sync && journalctl -q --no-pager -o json --output-fields=MESSAGE_ID _SYSTEMD_INVOCATION_ID="$1" DRIFT_MONITOR_RECORD="$2" | wc -l`,
			h.inv, harness.DriftDetected)
		c, err := strconv.Atoi(strings.TrimSpace(out))
		if err != nil {
			t.Fatalf("counting drift records: %q: %v", out, err)
		}
		return c
	}
	baseline := rss()
	// Bounds, not expectations: a storm takes seconds on a loaded machine.
	const stormTimeout = 3 * time.Minute
	var after []string
	for k := range 3 {
		h.MustRun(t, "sh", stormScript, strconv.Itoa(n), fmt.Sprintf("storm%d", k))
		h.WaitFor(t, stormTimeout, fmt.Sprintf("%d drift records", n*(k+1)), func() (bool, string) {
			c := drifts()
			return c >= n*(k+1), fmt.Sprintf("%d drift records", c)
		})
		h.MustRun(t, "sh", stormScript, strconv.Itoa(n), "file")
		h.WaitFor(t, stormTimeout, "StatusText "+clean, func() (bool, string) {
			got, err := h.status()
			return err == nil && got == clean, fmt.Sprintf("StatusText %q (%v)", got, err)
		})
		after = append(after, fmt.Sprintf("%.0f MB", float64(rss())/1e6))
	}
	// A daemon that gives back what a storm took stays within a few MB of
	// the baseline; the ratchet kept hundreds more.
	bound := baseline + 32<<20
	var quiet int64
	h.WaitFor(t, time.Minute, fmt.Sprintf("VmRSS at most %.0f MB (%.0f MB before the storms, %v right after each)",
		float64(bound)/1e6, float64(baseline)/1e6, after), func() (bool, string) {
		quiet = rss()
		return quiet <= bound, fmt.Sprintf("VmRSS %.0f MB", float64(quiet)/1e6)
	})
	t.Logf("VmRSS %.0f MB before the storms, %v right after each, %.0f MB once quiet", float64(baseline)/1e6, after, float64(quiet)/1e6)
}
