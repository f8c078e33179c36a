package daemon

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	"github.com/drift-monitor/drift-monitor/internal/daemon/mcdfollow"
	"github.com/drift-monitor/drift-monitor/internal/daemon/part"
	"github.com/drift-monitor/drift-monitor/internal/image"
	"github.com/drift-monitor/drift-monitor/internal/inhibit"
	"github.com/drift-monitor/drift-monitor/internal/journal"
	"github.com/drift-monitor/drift-monitor/internal/model"
	"github.com/drift-monitor/drift-monitor/internal/ondisk"
)

// fakeHolder is a part that holds reports when a test says so: how the
// daemon takes a part's hold, without the part's own machinery.
type fakeHolder struct {
	h        part.Host
	on       bool
	holdNew  bool // what HoldDrift answers
	asked    int  // HoldDrift calls
	activity int
	changed  int
	loaded   [][]model.Entry
}

func (f *fakeHolder) Name() string                         { return "fake" }
func (f *fakeHolder) Start(_ context.Context, h part.Host) { f.h = h }
func (f *fakeHolder) Stop()                                {}
func (f *fakeHolder) Held() (inhibit.Inhibitor, bool) {
	return inhibit.Inhibitor{Who: "fake-part", Why: "testing", File: "(internal) fake"}, f.on
}
func (f *fakeHolder) Activity()                                  { f.activity++ }
func (f *fakeHolder) HoldDrift(context.Context) bool             { f.asked++; return f.holdNew }
func (f *fakeHolder) ConfigChanged(context.Context)              { f.changed++ }
func (f *fakeHolder) Caveat() string                             { return "fake caveat" }
func (f *fakeHolder) Loaded(_ context.Context, es []model.Entry) { f.loaded = append(f.loaded, es) }

// withFakePart adds a fakeHolder to d's parts, started.
func withFakePart(t *testing.T, d *Daemon) *fakeHolder {
	t.Helper()
	f := &fakeHolder{}
	d.parts.add(f)
	f.Start(context.Background(), partHost{d})
	return f
}

// TestPartHoldBesideLockFiles: a part's hold is one more inhibitor: held
// with a lock file's, the release of either leaves the other, and the last
// release reloads and checks.
func TestPartHoldBesideLockFiles(t *testing.T) {
	ctx := context.Background()
	d, _, log := syntheticDaemon(t, Options{})
	d.fullCheck(ctx, "first check")
	d.ready = true
	f := withFakePart(t, d)
	d.setInhibitors(ctx, []inhibit.Inhibitor{{Who: "updater", Why: "test", File: "/run/x.lock"}})
	f.on = true
	f.h.HoldChanged(ctx)
	log.wait(t, 0, journal.MsgInhibited, map[string]string{"INHIBIT_WHO": "fake-part"})
	if got := len(d.inhibitors); got != 2 {
		t.Fatalf("%d inhibitors, want the lock file's and the part's: %v", got, d.inhibitors)
	}
	if s := d.metricsSnapshot(); s.Inhibitors != 2 || s.InternalInhibitors != 1 {
		t.Errorf("metrics: %d inhibitors, %d internal; want 2 and 1 (the part's)", s.Inhibitors, s.InternalInhibitors)
	}
	d.setInhibitors(ctx, nil) // the lock file released
	if !d.inhibited() || d.inhibitors[0].Who != "fake-part" {
		t.Fatalf("after the lock file's release: %v, want the part's held", d.inhibitors)
	}
	m := log.mark()
	f.on = false
	f.h.HoldChanged(ctx)
	if d.inhibited() {
		t.Fatalf("still inhibited: %v", d.inhibitors)
	}
	reloadApplied(t, d)
	log.wait(t, m, journal.MsgReloaded, nil)
	if f.changed != 0 {
		t.Errorf("ConfigChanged called %d times without a change of the desired-state files", f.changed)
	}
}

// TestPartHoldsNewDrift: a drift that appears outside a full check is
// offered to the parts that hold; one that takes it keeps it from the
// journal until the release's full check, and a drift already known is
// never offered.
func TestPartHoldsNewDrift(t *testing.T) {
	ctx := context.Background()
	d, _, log := syntheticDaemon(t, Options{})
	d.fullCheck(ctx, "first check")
	d.ready = true
	f := withFakePart(t, d)
	f.holdNew = true
	i := slices.IndexFunc(d.ix.entries, func(e model.Entry) bool { return e.Path == "/etc/a.conf" })
	writeFile(t, filepath.Join(d.o.Root, "etc/a.conf"), []byte("edited\n"))
	d.checkEntry(ctx, i)
	if got := log.find(journal.RecordDriftDetected, "/etc/a.conf"); len(got) != 0 || f.asked != 1 {
		t.Fatalf("a held new drift: reported %v, HoldDrift asked %d times; want held, asked once", got, f.asked)
	}
	f.holdNew = false
	d.checkEntry(ctx, i)
	log.wait(t, 0, journal.RecordDriftDetected, map[string]string{"DRIFT_PATH": "/etc/a.conf"})
	f.holdNew = true
	d.checkEntry(ctx, i) // known now: not offered again
	if f.asked != 2 {
		t.Errorf("HoldDrift asked %d times, want 2: a known drift is not new", f.asked)
	}
}

// TestPartHooks: the status line carries a part's caveat, Loaded gets the
// entries of every load, and events while held are the holders' activity.
func TestPartHooks(t *testing.T) {
	ctx := context.Background()
	d, _, _ := syntheticDaemon(t, Options{})
	f := withFakePart(t, d)
	if err := d.load(ctx); err != nil {
		t.Fatal(err)
	}
	if len(f.loaded) != 1 || len(f.loaded[0]) != len(d.ix.entries) {
		t.Errorf("Loaded got %d loads, want 1 of the %d entries", len(f.loaded), len(d.ix.entries))
	}
	d.fullCheck(ctx, "first check")
	d.ready = true
	if got, want := d.status(), "No drift: watching 3 paths, 1 unit; fake caveat"; got != want {
		t.Errorf("status %q, want %q", got, want)
	}
	d.heldActivity()
	d.configChanged(ctx)
	if f.activity != 1 || f.changed != 1 {
		t.Errorf("activity %d, config changes %d; want 1 and 1", f.activity, f.changed)
	}
}

// TestPartTable: each row of the table makes its part only when the
// options ask for it, under the row's name.
func TestPartTable(t *testing.T) {
	root := t.TempDir()
	d, err := newDaemon(Options{Root: root}, func(*ondisk.Root) (eventSource, error) { return newFakeSource(), nil })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Close)
	// The image's comparison is on by default (its mode is the settings
	// file's); every other part is asked for.
	if len(d.parts.all) != 1 || d.parts.all[0].Name() != "image" {
		t.Errorf("default options made parts: %v, want the image's alone", d.parts.all)
	}
	if ps := newParts(Options{Root: root, Image: image.ModeOff}, d); len(ps.all) != 0 {
		t.Errorf("--image=off made parts: %v", ps.all)
	}
	on := Options{Root: root, Attribution: AttributionAudit, Configs: []string{mcdfollow.CurrentConfig}}
	ps := newParts(on, d)
	var names []string
	for _, p := range ps.all {
		names = append(names, p.Name())
	}
	var want []string
	for _, row := range partTable {
		want = append(want, row.name)
	}
	if !slices.Equal(names, want) {
		t.Errorf("parts %v, want every row of the table: %v", names, want)
	}
	if ps.attr == nil || len(ps.holders) != 1 || len(ps.loaders) != 2 || len(ps.caveats) != 3 {
		t.Errorf("hooks: attributor %v, %d holders, %d loaders, %d caveats; want one, 1, 2, 3", ps.attr != nil, len(ps.holders), len(ps.loaders), len(ps.caveats))
	}
	if len(ps.checkers) != 1 || len(ps.counters) != 1 || len(ps.explainers) != 1 || len(ps.pollers) != 1 {
		t.Errorf("hooks: %d checkers, %d counters, %d explainers, %d pollers; want the image's, 1 each", len(ps.checkers), len(ps.counters), len(ps.explainers), len(ps.pollers))
	}
}
