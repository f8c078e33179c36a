package daemon

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/drift-monitor/drift-monitor/internal/inhibit"
	"github.com/drift-monitor/drift-monitor/internal/journal"
	"github.com/drift-monitor/drift-monitor/internal/model"
	"github.com/drift-monitor/drift-monitor/internal/ondisk"
	"github.com/drift-monitor/drift-monitor/test/harness"
	"github.com/google/go-cmp/cmp"
)

// TestFlagSweepCompare: which entries a sweep re-checks, over successive
// sweeps of one index and then a new one.
func TestFlagSweepCompare(t *testing.T) {
	ix := newIndex([]model.Entry{
		{Kind: model.KindFile, Path: "/etc/a", Type: model.TypeRegular},
		{Kind: model.KindFile, Path: "/etc/b", Type: model.TypeRegular},
		{Kind: model.KindDirectory, Path: "/etc/d", Type: model.TypeDirectory},
		{Kind: model.KindEnablement, Path: "/etc/systemd/system/x.service", Unit: "x.service", Type: model.TypeNone},
	})
	type reading struct {
		f  ondisk.Flags
		ok bool
	}
	const (
		none = ondisk.Flags(0)
		imm  = ondisk.FlagImmutable
		app  = ondisk.FlagAppend
	)
	var s flagSweep
	for _, c := range []struct {
		name  string
		ix    *index
		read  map[string]reading // by path; the enablement entry must not be read
		known map[string]bool    // fileattr drift tracked
		want  []int
	}{
		{"first sweep: what the check knows stands", ix,
			map[string]reading{"/etc/a": {none, true}, "/etc/b": {imm, true}, "/etc/d": {none, true}},
			map[string]bool{"/etc/b": true}, nil},
		{"nothing changed", ix,
			map[string]reading{"/etc/a": {none, true}, "/etc/b": {imm, true}, "/etc/d": {none, true}},
			map[string]bool{"/etc/b": true}, nil},
		{"chattr +i, chattr -i", ix,
			map[string]reading{"/etc/a": {imm, true}, "/etc/b": {none, true}, "/etc/d": {none, true}},
			map[string]bool{"/etc/b": true}, []int{0, 1}},
		{"immutable to append-only", ix,
			map[string]reading{"/etc/a": {app, true}, "/etc/b": {none, true}, "/etc/d": {none, true}},
			map[string]bool{"/etc/a": true}, []int{0}},
		{"still append-only, whatever the check made of it (excluded)", ix,
			map[string]reading{"/etc/a": {app, true}, "/etc/b": {none, true}, "/etc/d": {none, true}},
			nil, nil},
		{"gone: its deletion's event re-checks it", ix,
			map[string]reading{"/etc/a": {app, true}, "/etc/b": {none, false}, "/etc/d": {none, true}},
			nil, nil},
		{"back, flagged before a sweep saw it: re-checked", ix,
			map[string]reading{"/etc/a": {app, true}, "/etc/b": {imm, true}, "/etc/d": {none, true}},
			nil, []int{1}},
		{"a new index: a new baseline against what the check knows", newIndex(append([]model.Entry(nil), ix.entries...)),
			map[string]reading{"/etc/a": {app, true}, "/etc/b": {imm, true}, "/etc/d": {imm, true}},
			map[string]bool{"/etc/a": true, "/etc/b": true}, []int{2}},
	} {
		got := s.compare(c.ix,
			func(i int) (ondisk.Flags, bool) {
				r, ok := c.read[c.ix.entries[i].Path]
				if !ok {
					t.Fatalf("%s: %s read", c.name, c.ix.entries[i].Path)
				}
				return r.f, r.ok
			},
			func(i int) bool { return c.known[c.ix.entries[i].Path] })
		if diff := cmp.Diff(c.want, got); diff != "" {
			t.Errorf("%s: re-checked (-want +got):\n%s", c.name, diff)
		}
	}
}

// TestNextSweep: sweeps are spaced by the interval, or further apart when
// one takes long, so that they cost at most 1/flagSweepDuty of the time.
func TestNextSweep(t *testing.T) {
	for _, c := range []struct{ every, took, want time.Duration }{
		{2 * time.Second, time.Millisecond, 2 * time.Second},
		{2 * time.Second, 6 * time.Millisecond, 12 * time.Second},
		{2 * time.Second, 100 * time.Millisecond, 200 * time.Second},
		// A stall during one sweep does not put the next off for hours.
		{2 * time.Second, 5 * time.Second, 5 * time.Minute},
	} {
		if got := nextSweep(c.every, c.took); got != c.want {
			t.Errorf("nextSweep(%v, %v) = %v, want %v", c.every, c.took, got, c.want)
		}
	}
}

// TestFlagSweepPaused: no sweep while an inhibitor is held, nor while file
// events wait to be handled; the next one is armed all the same.
func TestFlagSweepPaused(t *testing.T) {
	for _, c := range []struct {
		name      string
		inhibited bool
		pending   int
	}{{"inhibited", true, 0}, {"events waiting", false, 1}} {
		d, _, _ := syntheticDaemon(t, Options{FileattrInterval: time.Hour})
		s := &sources{events: make(chan readResult, 1)}
		for range c.pending {
			s.events <- readResult{}
		}
		if c.inhibited {
			d.inhibitors = []inhibit.Inhibitor{{Who: "test", Why: "testing"}}
		}
		d.startFlagSweep(s)
		d.sweepFlags(context.Background(), s)
		if d.flags.ix != nil {
			t.Errorf("%s: a sweep ran", c.name)
		}
		if !d.flags.timer.Stop() {
			t.Errorf("%s: the next sweep was not armed", c.name)
		}
	}
	d, _, _ := syntheticDaemon(t, Options{FileattrInterval: time.Hour})
	s := &sources{events: make(chan readResult, 1)}
	d.startFlagSweep(s)
	d.sweepFlags(context.Background(), s)
	if d.flags.ix != d.ix {
		t.Errorf("active and idle: no sweep ran")
	}
	// Events that never stop waiting put sweeps off a few times, not for
	// good.
	d, _, _ = syntheticDaemon(t, Options{FileattrInterval: time.Hour})
	s = &sources{events: make(chan readResult, 1)}
	s.events <- readResult{}
	d.startFlagSweep(s)
	for range flagSweepPutOff {
		d.sweepFlags(context.Background(), s)
	}
	if d.flags.ix != nil {
		t.Fatalf("a sweep ran with events waiting before %d were put off", flagSweepPutOff)
	}
	d.sweepFlags(context.Background(), s)
	if d.flags.ix != d.ix || d.flags.putOff != 0 {
		t.Errorf("a steady stream of events keeps the sweep off")
	}
}

// TestFlagSweepSeesChattr: with no periodic check and no event (the kernel
// raises none for chattr), the daemon reports an immutable and then an
// append-only flag, and each one's removal, within a few sweeps.
func TestFlagSweepSeesChattr(t *testing.T) {
	harness.RequireRoot(t, "setting the immutable and append-only flags (CAP_LINUX_IMMUTABLE)")
	n := &fakeNotifier{ready: make(chan struct{}, 1)}
	d, _, log := syntheticDaemon(t, Options{Notify: n, FileattrInterval: 20 * time.Millisecond})
	p := filepath.Join(d.o.Root, "etc/a.conf")
	t.Cleanup(func() { harness.SetInodeFlags(t, p, 0) }) // or the temporary directory stays
	runUntilReady(t, d, n)
	for _, c := range []struct {
		flags int
		value string
	}{{harness.FlagImmutable, "immutable"}, {harness.FlagAppend, "append-only"}} {
		m := log.mark()
		harness.SetInodeFlags(t, p, c.flags)
		log.wait(t, m, journal.RecordDriftDetected, map[string]string{"DRIFT_PATH": "/etc/a.conf", "DRIFT_KIND": "fileattr", "DRIFT_FILEATTR": c.value})
		m = log.mark()
		harness.SetInodeFlags(t, p, 0)
		log.wait(t, m, journal.MsgDriftResolved, map[string]string{"DRIFT_PATH": "/etc/a.conf", "DRIFT_KIND": "fileattr"})
	}
}
