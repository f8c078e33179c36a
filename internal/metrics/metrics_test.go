package metrics

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/drift-monitor/drift-monitor/internal/dbusapi"
	"github.com/drift-monitor/drift-monitor/internal/drift"
	dm "github.com/drift-monitor/drift-monitor/internal/model"
)

func TestWriteTextfile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "drift-monitor.prom")
	// The unit's umask (0077 under hardening) must not make the file
	// unreadable to node_exporter.
	old := syscall.Umask(0o077)
	defer syscall.Umask(old)
	s := Snapshot{State: "drifted", Drift: map[drift.Kind]int{drift.Content: 2, drift.Mode: 1, drift.UID: 1},
		Declared:  []dm.Kind{dm.KindFile, dm.KindEnablement},
		LastCheck: time.Unix(1700000000, 500000000), LastChange: time.Unix(1700000001, 0),
		WatchedPaths: 42, Units: 6, ExcludedPaths: 2, PolledDirs: 3, WatchesExhausted: true, Inhibitors: 3, InternalInhibitors: 1,
		LoadFailing: true, LoadFailures: 2}
	if err := WriteTextfile(p, s, "1.2.3"); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if got := fi.Mode().Perm(); got != 0o644 {
		t.Errorf("mode %o, want 644", got)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Errorf("left behind in the directory: %v", ents)
	}

	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	parser := expfmt.NewTextParser(model.LegacyValidation)
	mfs, err := parser.TextToMetricFamilies(f)
	if err != nil {
		t.Fatalf("the output does not parse: %v", err)
	}
	got := map[string]float64{}
	for name, mf := range mfs {
		for _, m := range mf.Metric {
			if m.TimestampMs != nil {
				t.Errorf("%s has a client-side timestamp", name)
			}
			key := name
			for _, l := range m.Label {
				if l.GetName() != "goversion" {
					key += "{" + l.GetName() + "=" + l.GetValue() + "}"
				}
			}
			switch {
			case m.Gauge != nil:
				got[key] = m.Gauge.GetValue()
			case m.Counter != nil:
				got[key] = m.Counter.GetValue()
			}
		}
	}
	want := map[string]float64{
		"drift_monitor_build_info{version=1.2.3}":         1,
		"drift_monitor_last_full_check_timestamp_seconds": 1700000000.5,
		"drift_monitor_last_change_timestamp_seconds":     1700000001,
		"drift_monitor_watched_paths":                     42,
		"drift_monitor_units":                             6,
		"drift_monitor_excluded_paths":                    2,
		"drift_monitor_polled_directories":                3,
		"drift_monitor_inotify_watches_exhausted":         1,
		"drift_monitor_inhibitors":                        3,
		"drift_monitor_internal_inhibitors":               1,
		"drift_monitor_desired_load_failing":              1,
		"drift_monitor_desired_load_failures_total":       2,
	}
	// Every state has its series, 0 but for the snapshot's, and so has
	// every kind of drift the declared kinds of entry report (their rows
	// of the model's table), from where they are defined, so that one
	// added there is shown; a kind counted has one too (uid: a user
	// declared by no entry of the snapshot, 1); kinds neither declared nor
	// counted have none (os-image, present...).
	for _, st := range dbusapi.States {
		want["drift_monitor_state{state="+st+"}"] = 0
	}
	want["drift_monitor_state{state=drifted}"] = 1
	for _, k := range append(dm.KindFile.Means().Drift, dm.KindEnablement.Means().Drift...) {
		want["drift_monitor_drift_entries{kind="+k+"}"] = 0
	}
	want["drift_monitor_drift_entries{kind=content}"] = 2
	want["drift_monitor_drift_entries{kind=mode}"] = 1
	want["drift_monitor_drift_entries{kind=uid}"] = 1
	for _, k := range []string{"os-image", "present", "kernel-argument", "hardlink"} {
		if _, ok := want["drift_monitor_drift_entries{kind="+k+"}"]; ok {
			t.Fatalf("the table says a file or an enablement entry reports %s: pick another kind for this test", k)
		}
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("metrics (-want +got):\n%s", d)
	}
	for name := range mfs {
		if !model.LegacyValidation.IsValidMetricName(name) || !strings.HasPrefix(name, "drift_monitor_") {
			t.Errorf("metric name %q", name)
		}
	}
}

// Before any check the timestamps are left out rather than published as
// 1970, which would read as a check that is 56 years stale.
func TestNoTimestampsBeforeACheck(t *testing.T) {
	mfs, err := Registry(Snapshot{State: "starting"}, "v").Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if strings.HasSuffix(mf.GetName(), "_timestamp_seconds") {
			t.Errorf("%s present before any check", mf.GetName())
		}
	}
}

func TestWriteTextfileNamesThePath(t *testing.T) {
	p := filepath.Join(t.TempDir(), "missing", "drift-monitor.prom")
	err := WriteTextfile(p, Snapshot{State: "clean"}, "v")
	if err == nil || !strings.Contains(err.Error(), p) {
		t.Errorf("error %v does not name %s", err, p)
	}
}
