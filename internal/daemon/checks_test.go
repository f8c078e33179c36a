package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/drift-monitor/drift-monitor/internal/journal"
	"github.com/drift-monitor/drift-monitor/internal/ondisk"
	"github.com/drift-monitor/drift-monitor/internal/watch"
	"github.com/google/go-cmp/cmp"
)

// fakeSource is an event source that delivers the batches a test sends,
// and watches nothing.
type fakeSource struct {
	evs     chan []watch.Event
	closed  chan struct{}
	closing sync.Once
}

func newFakeSource() *fakeSource {
	return &fakeSource{evs: make(chan []watch.Event), closed: make(chan struct{})}
}

func (f *fakeSource) Read([]byte) ([]watch.Event, error) {
	select {
	case evs := <-f.evs:
		return evs, nil
	case <-f.closed:
		return nil, os.ErrClosed
	}
}
func (f *fakeSource) Watch([]string) error { return nil }
func (f *fakeSource) Polled() []string     { return nil }
func (f *fakeSource) Retry() error         { return nil }
func (f *fakeSource) Close() error {
	f.closing.Do(func() { close(f.closed) })
	return nil
}

// send hands a batch to the loop, within a bound.
func (f *fakeSource) send(t *testing.T, evs ...watch.Event) {
	t.Helper()
	select {
	case f.evs <- evs:
	case <-time.After(20 * time.Second):
		t.Fatal("the loop did not read events within 20s")
	}
}

// syntheticConfig declares a file, a directory, a link and a unit's
// enablement, all present and as declared on the root it writes.
func syntheticConfig(t *testing.T, root string) string {
	t.Helper()
	owner := fmt.Sprintf(`"user":{"id":%d},"group":{"id":%d}`, os.Getuid(), os.Getgid())
	cfg := filepath.Join(root, "c.ign")
	writeFile(t, cfg, []byte(`{"ignition":{"version":"3.4.0"},"storage":{
 "files":[{"path":"/etc/a.conf","mode":420,`+owner+`,"contents":{"source":"data:,a%0A"}}],
 "directories":[{"path":"/etc/d","mode":493,`+owner+`}],
 "links":[{"path":"/etc/l","target":"/etc/a.conf",`+owner+`}]},
 "systemd":{"units":[{"name":"x.service","enabled":false}]}}`))
	writeFile(t, filepath.Join(root, "etc/a.conf"), []byte("a\n"))
	if err := os.Mkdir(filepath.Join(root, "etc/d"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc/a.conf", filepath.Join(root, "etc/l")); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// syntheticDaemon is a daemon on a root declaring syntheticConfig, its
// events from a fakeSource, its state loaded (not running).
func syntheticDaemon(t *testing.T, o Options) (*Daemon, *fakeSource, *records) {
	t.Helper()
	o.Root = t.TempDir()
	o.Configs = []string{syntheticConfig(t, o.Root)}
	return loadedDaemon(t, o)
}

// loadedDaemon is a daemon of o, its events from a fakeSource and its
// records kept, its state loaded (not running).
func loadedDaemon(t *testing.T, o Options) (*Daemon, *fakeSource, *records) {
	t.Helper()
	log := &records{}
	o.Log = slog.New(log)
	src := newFakeSource()
	d, err := newDaemon(o, func(*ondisk.Root) (eventSource, error) { return src, nil })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Close)
	if err := d.load(context.Background()); err != nil {
		t.Fatal(err)
	}
	return d, src, log
}

// reloadApplied does what the loop does for a daemon a test drives
// without it: waits for the reload under way (off the loop) and applies it.
func reloadApplied(t *testing.T, d *Daemon) {
	t.Helper()
	if !d.loads.running {
		t.Fatal("no reload under way")
	}
	select {
	case r := <-d.loads.done:
		d.reloadDone(context.Background(), r)
	case <-time.After(20 * time.Second):
		t.Fatal("the reload did not end within 20s")
	}
}

// TestAffectedBy: which entries a batch of events makes the loop check.
func TestAffectedBy(t *testing.T) {
	const (
		file   = "file:/etc/a.conf"
		dir    = "directory:/etc/d"
		link   = "link:/etc/l"
		enable = "enablement:x.service"
	)
	ev := func(p string, op watch.Op) watch.Event { return watch.Event{Path: p, Op: op} }
	cases := []struct {
		name     string
		evs      []watch.Event
		systemd  bool // systemd answers for enablement (not the unit files)
		want     []string
		overflow bool
	}{
		{name: "close after write", evs: []watch.Event{ev("/etc/a.conf", watch.Write)}, want: []string{file}},
		{name: "written, not yet closed", evs: []watch.Event{ev("/etc/a.conf", watch.Modify)}},
		{name: "written, then its mode changed", evs: []watch.Event{ev("/etc/a.conf", watch.Modify), ev("/etc/a.conf", watch.Attrib)}},
		{name: "written and closed in one batch", evs: []watch.Event{ev("/etc/a.conf", watch.Modify), ev("/etc/a.conf", watch.Write)}, want: []string{file}},
		{name: "a regular file created", evs: []watch.Event{ev("/etc/a.conf", watch.Create)}},
		{name: "its mode changed", evs: []watch.Event{ev("/etc/a.conf", watch.Attrib)}, want: []string{file}},
		{name: "a link is complete when it appears", evs: []watch.Event{ev("/etc/l", watch.Create)}, want: []string{link}},
		{name: "a directory event", evs: []watch.Event{{Path: "/etc/d", Op: watch.Attrib, IsDir: true}}, want: []string{dir}},
		{name: "watches under a directory changed", evs: []watch.Event{ev("/etc", watch.Rewatched)}, want: []string{file, dir, link, enable}},
		{name: "each entry once", evs: []watch.Event{ev("/etc/l", watch.Attrib), ev("/etc/l", watch.Remove), ev("/etc/a.conf", watch.Write)},
			want: []string{file, link}},
		{name: "unrelated", evs: []watch.Event{ev("/etc/other", watch.Write)}},
		{name: "unit files change offline enablement",
			evs: []watch.Event{ev("/etc/systemd/system/multi-user.target.wants/x.service", watch.Create)}, want: []string{enable}},
		{name: "systemd says itself when unit files changed", systemd: true,
			evs: []watch.Event{ev("/etc/systemd/system/multi-user.target.wants/x.service", watch.Create)}},
		{name: "overflow", evs: []watch.Event{ev("/etc/a.conf", watch.Write), ev("/", watch.Overflow)}, overflow: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := Options{}
			if c.systemd {
				o.Units = newFakeUnits(map[string]string{"x.service": "disabled"})
			}
			d, _, _ := syntheticDaemon(t, o)
			defer d.writes.reset()
			is, overflow := d.affectedBy(c.evs)
			var got []string
			for _, i := range is {
				got = append(got, d.ix.entries[i].ID())
			}
			if diff := cmp.Diff(c.want, got); diff != "" || overflow != c.overflow {
				t.Errorf("affectedBy: overflow %v, want %v; entries (-want +got):\n%s", overflow, c.overflow, diff)
			}
		})
	}
}

// TestSettle: a write that went quiet is checked, and its drift reported,
// once; one that completed meanwhile is not checked again.
func TestSettle(t *testing.T) {
	ctx := context.Background()
	d, _, log := syntheticDaemon(t, Options{Settle: time.Hour})
	d.fullCheck(ctx, "first check")
	writeFile(t, filepath.Join(d.o.Root, "etc/a.conf"), []byte("half"))
	d.handle(ctx, []watch.Event{{Path: "/etc/a.conf", Op: watch.Modify}})
	if got := log.find(journal.RecordDriftDetected, "/etc/a.conf"); len(got) != 0 {
		t.Fatalf("drift reported while the write is in progress: %v", got)
	}
	d.settle(ctx, "/etc/a.conf")
	if got := log.find(journal.RecordDriftDetected, "/etc/a.conf"); len(got) != 1 {
		t.Fatalf("after the write went quiet: %d drift records, want 1", len(got))
	}
	writeFile(t, filepath.Join(d.o.Root, "etc/a.conf"), []byte("a\n"))
	d.handle(ctx, []watch.Event{{Path: "/etc/a.conf", Op: watch.Modify}})
	d.handle(ctx, []watch.Event{{Path: "/etc/a.conf", Op: watch.Write}})
	if got := log.find(journal.MsgDriftResolved, "/etc/a.conf"); len(got) != 1 {
		t.Fatalf("after the write was closed: %d resolved records, want 1", len(got))
	}
	writeFile(t, filepath.Join(d.o.Root, "etc/a.conf"), []byte("other"))
	d.settle(ctx, "/etc/a.conf") // a timer of the completed write, late
	if got := log.find(journal.RecordDriftDetected, "/etc/a.conf"); len(got) != 1 {
		t.Errorf("a settle after the close checked again: %d drift records, want 1", len(got))
	}
}

// TestLoopWithSyntheticEvents runs the loop on synthetic events: a write is
// reported when it is closed, and a write never closed once it is quiet.
func TestLoopWithSyntheticEvents(t *testing.T) {
	n := &fakeNotifier{ready: make(chan struct{}, 1)}
	d, src, log := syntheticDaemon(t, Options{Notify: n, Settle: 50 * time.Millisecond})
	runUntilReady(t, d, n)
	m := log.mark()
	writeFile(t, filepath.Join(d.o.Root, "etc/a.conf"), []byte("changed\n"))
	src.send(t, watch.Event{Path: "/etc/a.conf", Op: watch.Modify}, watch.Event{Path: "/etc/a.conf", Op: watch.Write})
	log.wait(t, m, journal.RecordDriftDetected, map[string]string{"DRIFT_PATH": "/etc/a.conf", "DRIFT_KIND": "content"})

	m = log.mark()
	writeFile(t, filepath.Join(d.o.Root, "etc/a.conf"), []byte("a\n"))
	src.send(t, watch.Event{Path: "/etc/a.conf", Op: watch.Modify}) // never closed
	log.wait(t, m, journal.MsgDriftResolved, map[string]string{"DRIFT_PATH": "/etc/a.conf", "DRIFT_KIND": "content"})
}

// secondConfig adds a config to d's desired state; the func it returns
// declares files (JSON objects, comma-separated) in it and loads.
func secondConfig(t *testing.T, d *Daemon) func(files string) {
	remote := filepath.Join(d.o.Root, "remote.ign")
	d.o.Configs = append(d.o.Configs, remote)
	return func(files string) {
		t.Helper()
		writeFile(t, remote, []byte(`{"ignition":{"version":"3.4.0"},"storage":{"files":[`+files+`]}}`))
		if err := d.load(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
}

// TestNoticesJournaledOnce: a notice (here content that cannot be verified
// offline) is journaled when it appears, not at every full check; once gone
// from the desired state and back, it is journaled again.
func TestNoticesJournaledOnce(t *testing.T) {
	ctx := context.Background()
	d, _, log := syntheticDaemon(t, Options{})
	declare := secondConfig(t, d)
	count := func() int { return len(log.find(journal.MsgNotice, "/etc/remote.conf")) }
	declare(`{"path":"/etc/remote.conf","contents":{"source":"https://example.com/remote.conf"}}`)
	d.fullCheck(ctx, "first check")
	d.fullCheck(ctx, "periodic check")
	if n := count(); n != 1 {
		t.Fatalf("after two full checks: %d notice records, want 1", n)
	}
	log.mu.Lock()
	for _, m := range log.got {
		if m["MESSAGE_ID"] == journal.MsgNotice && m["DRIFT_KIND"] != "unverifiable" {
			t.Errorf("notice record with DRIFT_KIND %q, want unverifiable", m["DRIFT_KIND"])
		}
	}
	log.mu.Unlock()
	declare("")
	d.fullCheck(ctx, "reload")
	declare(`{"path":"/etc/remote.conf","contents":{"source":"https://example.com/remote.conf"}}`)
	d.fullCheck(ctx, "reload")
	if n := count(); n != 2 {
		t.Errorf("after the notice went away and came back: %d notice records, want 2", n)
	}
}
