package daemon

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// fakeNotifier records sd_notify calls.
type fakeNotifier struct {
	mu        sync.Mutex
	watchdogs int
	ready     chan struct{}
	interval  time.Duration
	// extends are the extensions asked for (EXTEND_TIMEOUT_USEC), and
	// readyAfter how many of them came before the first READY=1 (once
	// readied).
	extends    []time.Duration
	readied    bool
	readyAfter int
}

func (f *fakeNotifier) Ready(string) error {
	f.mu.Lock()
	if !f.readied {
		f.readied, f.readyAfter = true, len(f.extends)
	}
	f.mu.Unlock()
	select {
	case f.ready <- struct{}{}:
	default:
	}
	return nil
}
func (f *fakeNotifier) Status(string) error { return nil }
func (f *fakeNotifier) Reloading() error    { return nil }
func (f *fakeNotifier) Stopping() error     { return nil }
func (f *fakeNotifier) Watchdog() error {
	f.mu.Lock()
	f.watchdogs++
	f.mu.Unlock()
	return nil
}
func (f *fakeNotifier) WatchdogInterval() (time.Duration, bool) { return f.interval, true }
func (f *fakeNotifier) ExtendTimeout(d time.Duration) error {
	f.mu.Lock()
	f.extends = append(f.extends, d)
	f.mu.Unlock()
	return nil
}

// extensions returns the extensions asked for so far, and how many came
// before the first READY=1 (-1 before it).
func (f *fakeNotifier) extensions() ([]time.Duration, int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	before := -1
	if f.readied {
		before = f.readyAfter
	}
	return append([]time.Duration(nil), f.extends...), before
}
func (f *fakeNotifier) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.watchdogs
}

// runDaemon runs a daemon with o and the notifier n until the test ends,
// and returns once it is ready (its first check done).
func runDaemon(t *testing.T, o Options, n *fakeNotifier) *Daemon {
	t.Helper()
	o.Notify = n
	d, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Close)
	runUntilReady(t, d, n)
	return d
}

// runUntilReady runs d's loop until the test ends (before the cleanups
// registered earlier, such as d.Close), and returns once d told n it is
// ready (its first check done).
func runUntilReady(t *testing.T, d *Daemon, n *fakeNotifier) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx, nil) }()
	t.Cleanup(func() { cancel(); <-done })
	select {
	case <-n.ready:
	case <-time.After(20 * time.Second):
		t.Fatal("not ready within 20s")
	}
}

// WATCHDOG=1 is sent only while the event loop answers: a stuck loop stops
// the pings, and systemd restarts the service.
func TestWatchdogOnlyWhileTheLoopIsAlive(t *testing.T) {
	root := t.TempDir()
	cfg := filepath.Join(root, "c.ign")
	os.WriteFile(cfg, []byte(`{"ignition":{"version":"3.4.0"}}`), 0o644)
	n := &fakeNotifier{ready: make(chan struct{}, 1), interval: 40 * time.Millisecond}
	d := runDaemon(t, Options{Root: root, Configs: []string{cfg}}, n)
	ctx := context.Background()
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s", what)
			}
			time.Sleep(5 * time.Millisecond) // a poll interval inside a bounded wait
		}
	}
	waitFor("watchdog pings from a live loop", func() bool { return n.count() >= 3 })

	// Block the loop: the pings must stop.
	block := make(chan struct{})
	blocked := make(chan struct{})
	go d.do(ctx, func(context.Context) error { close(blocked); <-block; return nil })
	<-blocked
	time.Sleep(2 * n.interval) // let a ping already under way finish
	before := n.count()
	time.Sleep(5 * n.interval) // five intervals of a stuck loop: the behaviour under test
	if after := n.count(); after != before {
		t.Errorf("WATCHDOG=1 sent %d times while the loop was stuck", after-before)
	}
	close(block)
	waitFor("pings again once the loop is free", func() bool { return n.count() > before })
}
