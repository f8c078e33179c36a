package daemon

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/drift-monitor/drift-monitor/internal/buslink"
	"github.com/drift-monitor/drift-monitor/internal/dbusapi"
	"github.com/drift-monitor/drift-monitor/internal/drift"
)

// readMetrics returns the textfile's samples of drift_monitor_state and
// drift_monitor_drift_entries{kind="enablement"}; ok is false while there is
// no file.
func readMetrics(t *testing.T, p string) (got map[string]float64, ok bool) {
	t.Helper()
	f, err := os.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	parser := expfmt.NewTextParser(model.LegacyValidation)
	mfs, err := parser.TextToMetricFamilies(f)
	if err != nil {
		t.Fatalf("%s: %v", p, err)
	}
	got = map[string]float64{}
	for _, m := range mfs["drift_monitor_state"].GetMetric() {
		got["state="+m.GetLabel()[0].GetValue()] = m.GetGauge().GetValue()
	}
	for _, m := range mfs["drift_monitor_drift_entries"].GetMetric() {
		if m.GetLabel()[0].GetValue() == "enablement" {
			got["enablement"] = m.GetGauge().GetValue()
		}
	}
	return got, true
}

// TestMetricsNeverCleanBeforeTheFirstCheck: a daemon restarted on a drifted
// host removes its previous run's textfile (which said clean), writes
// nothing while its first check runs, and then says drifted; a repair is
// written too.
func TestMetricsNeverCleanBeforeTheFirstCheck(t *testing.T) {
	prom := filepath.Join(t.TempDir(), "drift-monitor.prom")
	if err := os.WriteFile(prom, []byte("drift_monitor_state{state=\"clean\"} 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	u := newFakeUnits(map[string]string{"a.service": "disabled"})
	u.hold = make(chan struct{})
	d, p, _ := unitDaemon(t, u, func(o *Options) { o.MetricsTextfile = prom })
	p.waitSnapshot(t, 0, "starting", func(s dbusapi.Snapshot) bool { return s.State == "starting" })
	// The stale file goes before the desired state is loaded, that is
	// before the first snapshot.
	if _, ok := readMetrics(t, prom); ok {
		t.Fatal("the previous run's metrics are still there while the first check runs")
	}
	// GetMetrics (the /metrics endpoint) is answered by the loop, which
	// is in the first check: its answer comes after it, from it.
	served := make(chan []byte, 1)
	go func() {
		b, err := d.MetricsText(context.Background())
		if err != nil {
			t.Errorf("MetricsText: %v", err)
		}
		served <- b
	}()
	u.mu.Lock()
	close(u.hold)
	u.hold = nil
	u.mu.Unlock()
	select {
	case b := <-served:
		if !strings.Contains(string(b), `drift_monitor_state{state="drifted"} 1`+"\n") {
			t.Errorf("MetricsText after the first check:\n%s", b)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("MetricsText did not answer within 20s")
	}

	wantDrifted := map[string]float64{"state=starting": 0, "state=clean": 0, "state=drifted": 1,
		"state=inhibited": 0, "state=error": 0, "state=checking": 0, "enablement": 1}
	var got map[string]float64
	waitFor(t, "the textfile after the first check", func() bool {
		var ok bool
		got, ok = readMetrics(t, prom)
		return ok
	})
	// The first file written is already the first check's result.
	if d := cmp.Diff(wantDrifted, got); d != "" {
		t.Errorf("first textfile (-want +got):\n%s", d)
	}

	u.set(false, "a.service", "enabled")
	send(t, u.events, buslink.Event{Up: true, Changed: true})
	wantClean := map[string]float64{"state=starting": 0, "state=clean": 1, "state=drifted": 0,
		"state=inhibited": 0, "state=error": 0, "state=checking": 0, "enablement": 0}
	waitFor(t, "the repair in the textfile", func() bool {
		got, _ = readMetrics(t, prom)
		return cmp.Equal(wantClean, got)
	})
}

// TestMetricsRewrittenWhenNothingChanges: with nothing changing, the file is
// still rewritten every MetricsRefresh, so its mtime (what node_exporter
// exports) shows the loop alive.
func TestMetricsRewrittenWhenNothingChanges(t *testing.T) {
	prom := filepath.Join(t.TempDir(), "drift-monitor.prom")
	u := newFakeUnits(map[string]string{"a.service": "enabled"})
	unitDaemon(t, u, func(o *Options) { o.MetricsTextfile, o.MetricsRefresh = prom, 20*time.Millisecond })
	mtime := func() int64 {
		fi, err := os.Stat(prom)
		if err != nil {
			return 0
		}
		return fi.ModTime().UnixNano()
	}
	waitFor(t, "the first textfile", func() bool { return mtime() != 0 })
	seen := map[int64]bool{mtime(): true}
	waitFor(t, "three rewrites", func() bool {
		seen[mtime()] = true
		return len(seen) > 3
	})
}

// TestMetricsCountNotices: a notice is no drift, but the metrics count it
// by kind, and a reload that drops it drops it from the count.
func TestMetricsCountNotices(t *testing.T) {
	ctx := context.Background()
	d, _, _ := syntheticDaemon(t, Options{})
	load := secondConfig(t, d)
	declare := func(files string) {
		t.Helper()
		load(files)
		d.fullCheck(ctx, "reload")
	}
	declare(`{"path":"/etc/remote.conf","contents":{"source":"https://example.com/remote.conf"}}`)
	s := d.metricsSnapshot()
	if got := s.Drift[drift.Unverifiable]; got != 1 || s.State == dbusapi.StateDrifted {
		t.Errorf("with one unverifiable content: unverifiable %d, state %s; want 1 and not drifted", got, s.State)
	}
	declare("")
	if got := d.metricsSnapshot().Drift[drift.Unverifiable]; got != 0 {
		t.Errorf("after the reload that drops it: unverifiable %d, want 0", got)
	}
}
