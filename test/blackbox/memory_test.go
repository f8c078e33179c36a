package blackbox

import (
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/drift-monitor/drift-monitor/test/harness"
)

// vmRSS is a process's resident memory, in bytes.
func vmRSS(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			n, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				t.Fatalf("VmRSS line %q: %v", l, err)
			}
			return n << 10
		}
	}
	t.Fatalf("no VmRSS in /proc/%d/status", pid)
	return 0
}

// waitAll waits until a record with the MESSAGE_ID, after the first `from`
// records, has named every path in want.
func (d *daemonProc) waitAll(from int, id string, want map[string]bool, timeout time.Duration) {
	d.t.Helper()
	next := from
	d.wait(fmt.Sprintf("%d records %s", len(want), id), timeout, func() bool {
		d.mu.Lock()
		defer d.mu.Unlock()
		for ; next < len(d.recs); next++ {
			if r := d.recs[next]; r.Matches(id, nil) {
				delete(want, r["DRIFT_PATH"])
			}
		}
		return len(want) == 0
	})
}

// TestMemoryReturnsAfterStorms: storm after storm of drift and repair
// leaves the daemon's resident memory where it was before the first, once
// it is quiet (a GC tuner whose limit rose at every collection under load
// kept it higher storm after storm: internal/daemon/gc.go, quietLimit).
func TestMemoryReturnsAfterStorms(t *testing.T) {
	const n = 3000
	var cfg strings.Builder
	cfg.WriteString(`{"ignition":{"version":"3.4.0"},"storage":{"files":[`)
	content := func(i int) string { return fmt.Sprintf("file %d\n%s", i, strings.Repeat("x", 500)) }
	path := func(i int) string { return fmt.Sprintf("/etc/storm/d%02d/f%04d.conf", i/100, i) }
	for i := range n {
		if i > 0 {
			cfg.WriteByte(',')
		}
		fmt.Fprintf(&cfg, `{"path":%q,"mode":420,"contents":{"source":"data:;base64,%s"}}`, path(i), base64.StdEncoding.EncodeToString([]byte(content(i))))
	}
	cfg.WriteString("]}}")
	f := newFixture(t, cfg.String())
	for i := range n {
		f.write(path(i), content(i), 0o644)
	}
	// The daemon as deployed: with a state cache (its own), so that
	// declared contents are read back from the entry for each diff.
	d := startDaemonWith(t, f.root, daemonOpts{env: []string{"CACHE_DIRECTORY=" + filepath.Join(t.TempDir(), "cache")}})
	d.waitStatus(fmt.Sprintf("No drift: watching %d paths, 0 units", n))
	pid := d.cmd.Process.Pid
	baseline := vmRSS(t, pid)

	// Bounds, not expectations: a storm takes seconds on a loaded machine.
	const stormTimeout = 3 * time.Minute
	var after []string
	for k := range 3 {
		want := map[string]bool{}
		m := d.mark()
		for i := range n {
			f.write(path(i), fmt.Sprintf("storm %d\n", k)+content(i)[8:], 0o644)
			want[path(i)] = true
		}
		d.waitAll(m, harness.DriftDetected, want, stormTimeout)
		m = d.mark()
		for i := range n {
			f.write(path(i), content(i), 0o644)
			want[path(i)] = true
		}
		d.waitAll(m, harness.MsgDriftResolved, want, stormTimeout)
		after = append(after, fmt.Sprintf("%.0f MB", float64(vmRSS(t, pid))/1e6))
	}

	// A daemon that gives back what a storm took stays within a few MB of
	// the baseline; the ratchet kept hundreds more.
	bound := baseline + 32<<20
	deadline := time.Now().Add(time.Minute)
	for {
		rss := vmRSS(t, pid)
		if rss <= bound {
			t.Logf("VmRSS %.0f MB before the storms, %v right after each, %.0f MB once quiet",
				float64(baseline)/1e6, after, float64(rss)/1e6)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("VmRSS %.0f MB a minute after three storms (%v right after each), %.0f MB before them; want at most %.0f MB",
				float64(rss)/1e6, after, float64(baseline)/1e6, float64(bound)/1e6)
		}
		time.Sleep(100 * time.Millisecond) // polling /proc, bounded by the deadline
	}
}
