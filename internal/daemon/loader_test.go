package daemon

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/drift-monitor/drift-monitor/internal/dbusapi"
	"github.com/drift-monitor/drift-monitor/internal/desired/statekey"
	"github.com/drift-monitor/drift-monitor/internal/journal"
	"github.com/drift-monitor/drift-monitor/internal/model"
	"github.com/drift-monitor/drift-monitor/internal/ondisk"
	"github.com/drift-monitor/drift-monitor/internal/statecache"
)

// gatedCache is a state cache whose lookups wait at a gate once it is
// closed: a load that takes as long as the test wants.
type gatedCache struct {
	mu      sync.Mutex
	gate    chan struct{} // nil: open
	reached chan struct{}
}

func (g *gatedCache) close() {
	g.mu.Lock()
	g.gate, g.reached = make(chan struct{}), make(chan struct{}, 1)
	g.mu.Unlock()
}

// open lets the lookups at the gate go on, once.
func (g *gatedCache) open() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.gate != nil {
		close(g.gate)
		g.gate = nil
	}
}

func (g *gatedCache) Get(statekey.Key) (model.State, bool) {
	g.mu.Lock()
	gate, reached := g.gate, g.reached
	g.mu.Unlock()
	if gate != nil {
		reached <- struct{}{}
		<-gate
	}
	return model.State{}, false
}

func (g *gatedCache) Put(statekey.Key, *model.State) bool { return true }

// TestReloadOffTheLoop: while a reload's load takes its time, the event
// loop goes on: the watchdog is fed, the bus is answered, and the status
// line says the state is being read again; the reload is applied when the
// load ends (a load on the loop outlived WatchdogSec and had the daemon
// killed), and a slow one is journaled, naming its largest config file.
func TestReloadOffTheLoop(t *testing.T) {
	root := t.TempDir()
	cfg := syntheticConfig(t, root)
	cache := &gatedCache{}
	n := &fakeNotifier{ready: make(chan struct{}, 1), interval: 40 * time.Millisecond}
	log := &records{}
	d := runDaemon(t, Options{Root: root, Configs: []string{cfg}, Cache: cache, Log: slog.New(log)}, n)
	ctx := context.Background()
	d.do(ctx, func(context.Context) error { d.loads.slow = 0; return nil })

	cache.close()
	t.Cleanup(cache.open) // before the loop is stopped, should the test fail
	reloaded := make(chan error, 1)
	go func() { reloaded <- d.ReloadNow(ctx) }()
	select {
	case <-cache.reached:
	case <-time.After(20 * time.Second):
		t.Fatal("the reload did not start within 20s")
	}
	before := n.count()
	deadline := time.Now().Add(10 * time.Second)
	for n.count() < before+3 {
		if time.Now().After(deadline) {
			t.Fatalf("no watchdog ping while the load runs (%d before it)", before)
		}
		time.Sleep(10 * time.Millisecond) // a poll interval inside a bounded wait
	}
	var status string
	asked, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := d.do(asked, func(context.Context) error { status = d.status(); return nil }); err != nil {
		t.Fatalf("the loop did not answer while the load runs: %v", err)
	}
	if want := "No drift: watching 3 paths, 1 unit; reading the desired state again"; status != want {
		t.Errorf("status while the load runs:\nwant %q\ngot  %q", want, status)
	}
	select {
	case err := <-reloaded:
		t.Fatalf("ReloadNow returned before its load ended: %v", err)
	default:
	}
	// The reload's timeout (systemd's reload state, bounded by
	// TimeoutStartSec=) is extended from the loop while the load runs.
	during, started := n.extensions()
	during = during[started:] // the start's came before READY=1
	if len(during) == 0 {
		t.Error("no extension of the reload's timeout while its load runs")
	}
	for i, e := range during {
		if e != startExtension {
			t.Errorf("extension %d: %s, want %s", i, e, startExtension)
		}
	}

	cache.open()
	select {
	case err := <-reloaded:
		if err != nil {
			t.Fatalf("ReloadNow: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("ReloadNow did not return within 20s of the load's end")
	}
	if err := d.do(ctx, func(context.Context) error { status = d.status(); return nil }); err != nil {
		t.Fatal(err)
	}
	if want := "No drift: watching 3 paths, 1 unit"; status != want {
		t.Errorf("status after the reload:\nwant %q\ngot  %q", want, status)
	}
	// None once the load is applied: the pings that follow put off
	// nothing.
	after, _ := n.extensions()
	pinged := n.count()
	deadline = time.Now().Add(10 * time.Second)
	for n.count() < pinged+3 {
		if time.Now().After(deadline) {
			t.Fatal("no watchdog ping after the reload")
		}
		time.Sleep(10 * time.Millisecond) // a poll interval inside a bounded wait
	}
	if now, _ := n.extensions(); len(now) != len(after) {
		t.Errorf("%d extensions asked for after the reload was applied", len(now)-len(after))
	}
	slow := log.find(journal.MsgLoadSlow, "")
	if want := "(loaded; the largest config file " + cfg; len(slow) != 1 || !strings.Contains(slow[0]["MESSAGE"], want) {
		t.Errorf("records of the slow load: %v; want one saying %q", slow, want)
	}
}

// restartDaemon is a daemon of o as a restart starts it: its state loaded
// at start (refused or not), its first full check done.
func restartDaemon(t *testing.T, o Options) (*Daemon, *records) {
	t.Helper()
	log := &records{}
	o.Log = slog.New(log)
	d, err := newDaemon(o, func(*ondisk.Root) (eventSource, error) { return newFakeSource(), nil })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Close)
	d.load(context.Background())
	d.fullCheck(context.Background(), "first check")
	d.ready = true
	return d, log
}

// TestRestartWithARefusedConfig: a daemon restarted while the config in
// place is refused checks against the last good state an earlier run
// loaded, which the state cache keeps, and says so; a real edit is
// reported. Without that state (no cache, or nothing kept), it says that
// nothing is checked, and its state is an error: never "No drift" (which
// it said, watching 0 paths, claiming a last good state it did not have).
func TestRestartWithARefusedConfig(t *testing.T) {
	const bad = `{"ignition":{"version":"3.4.0"},"storage":{"files":[{"path":"/etc/x"},{"path":"/etc/x"}]}}`
	for _, c := range []struct {
		name           string
		cache          bool
		status, state  string
		recorded       string
		reportsTheEdit bool
	}{
		{"with the last good state kept", true,
			"Drift: 1 path differs (/etc/a.conf: content); config refused (" + `c.ign:1:72: $.storage.files.1: duplicate entry defined` +
				"), checking against the last good one, from an earlier run",
			dbusapi.StateDrifted, "checking against the last good one, loaded by an earlier run and kept in the state cache (4 entries from 1 config files)", true},
		{"without a state cache", false,
			"Not checking: config refused (c.ign:1:72: $.storage.files.1: duplicate entry defined), and no earlier config to check against",
			dbusapi.StateError, "there is no last good one: nothing is checked", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			cfg := syntheticConfig(t, root)
			o := Options{Root: root, Configs: []string{cfg}}
			if c.cache {
				o.Cache = &statecache.Cache{Dir: filepath.Join(t.TempDir(), "cache"), Mode: statecache.ModeLazy}
			}
			first, _ := restartDaemon(t, o)
			if got := first.status(); got != "No drift: watching 3 paths, 1 unit" {
				t.Fatalf("the first run: %q", got)
			}
			first.Close()

			writeFile(t, cfg, []byte(bad))
			writeFile(t, filepath.Join(root, "etc/a.conf"), []byte("edited\n"))
			d, log := restartDaemon(t, o)
			if got := strings.ReplaceAll(d.status(), root+"/", ""); got != c.status {
				t.Errorf("status:\nwant %q\ngot  %q", c.status, got)
			}
			if got := d.snapshotState(); got != c.state {
				t.Errorf("state %q, want %q", got, c.state)
			}
			refused := log.find(journal.MsgLoadFailed, "")
			if len(refused) != 1 || !strings.Contains(refused[0]["MESSAGE"], c.recorded) {
				t.Errorf("records of the refusal %v, want one saying %q", refused, c.recorded)
			}
			if got := len(log.find(journal.RecordDriftDetected, "/etc/a.conf")) == 1; got != c.reportsTheEdit {
				t.Errorf("the edit of /etc/a.conf reported: %v, want %v", got, c.reportsTheEdit)
			}
		})
	}
}

// TestLoadsBounded: the daemon bounds the memory of each load it runs, at
// start and on a reload, with the size of the configs it parses (the
// loader sets no limit of its own: the daemon is the caller that must), and
// lifts the bound before the load is applied.
func TestLoadsBounded(t *testing.T) {
	var mu sync.Mutex
	var sizes []int64
	lifted := 0
	was := loadBound
	loadBound = func(size int64) func() {
		mu.Lock()
		defer mu.Unlock()
		sizes = append(sizes, size)
		return func() {
			mu.Lock()
			defer mu.Unlock()
			lifted++
		}
	}
	t.Cleanup(func() { loadBound = was })
	root := t.TempDir()
	cfg := syntheticConfig(t, root)
	raw, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	n := &fakeNotifier{ready: make(chan struct{}, 1)}
	d := runDaemon(t, Options{Root: root, Configs: []string{cfg}}, n)
	if err := d.ReloadNow(context.Background()); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	want := []int64{int64(len(raw)), int64(len(raw))}
	if !slices.Equal(sizes, want) || lifted != len(want) {
		t.Errorf("bounds asked for %v, %d lifted; want %v, all lifted", sizes, lifted, want)
	}
}
