package daemon

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// startGated starts a daemon whose start-up load waits at cache's gate,
// with the start's timeout extended by step for at most limit, and returns
// once the load is at the gate.
func startGated(t *testing.T, cache *gatedCache, n *fakeNotifier, log *records, step, limit time.Duration) {
	t.Helper()
	root := t.TempDir()
	cfg := syntheticConfig(t, root)
	cache.close()
	d, err := New(Options{Root: root, Configs: []string{cfg}, Cache: cache, Log: slog.New(log), Notify: n})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Close)
	d.startExt = startExtend{step: step, max: limit}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx, nil) }()
	t.Cleanup(func() { cancel(); <-done })
	t.Cleanup(cache.open) // before the loop is stopped, should the test fail
	select {
	case <-cache.reached:
	case <-time.After(20 * time.Second):
		t.Fatal("the start's load did not start within 20s")
	}
}

// waitExtensions waits (bounded) until at least k extensions were asked for.
func waitExtensions(t *testing.T, n *fakeNotifier, k int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got, _ := n.extensions()
		if len(got) >= k {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d extensions of the start's timeout within 10s, want %d", len(got), k)
		}
		time.Sleep(5 * time.Millisecond) // a poll interval inside a bounded wait
	}
}

// While the start's load takes its time, systemd is asked again and again
// to extend the start's timeout (a large config outlasted TimeoutStartSec
// and had the daemon killed at every start), each time by the extension;
// the requests stop before READY=1, after which they would put off the
// watchdog.
func TestStartExtendsItsTimeoutWhileLoading(t *testing.T) {
	cache := &gatedCache{}
	n := &fakeNotifier{ready: make(chan struct{}, 1)}
	log := &records{}
	startGated(t, cache, n, log, 60*time.Millisecond, time.Minute)
	waitExtensions(t, n, 4)
	if _, before := n.extensions(); before >= 0 {
		t.Fatal("READY=1 while the start's load waits")
	}
	cache.open()
	select {
	case <-n.ready:
	case <-time.After(20 * time.Second):
		t.Fatal("not ready within 20s of the load's end")
	}
	got, before := n.extensions()
	if before != len(got) {
		t.Errorf("%d extensions asked for after READY=1 (of %d)", len(got)-before, len(got))
	}
	for i, d := range got {
		if d != 60*time.Millisecond {
			t.Errorf("extension %d: %s, want the step, 60ms", i, d)
		}
	}
}

// A start stuck for good is not kept alive for ever: the requests stop
// after the limit, with a record, and systemd's timeout then ends it.
func TestStartStopsExtendingAfterTheLimit(t *testing.T) {
	cache := &gatedCache{}
	n := &fakeNotifier{ready: make(chan struct{}, 1)}
	log := &records{}
	startGated(t, cache, n, log, 30*time.Millisecond, 150*time.Millisecond)
	ended := func() bool {
		log.mu.Lock()
		defer log.mu.Unlock()
		for _, r := range log.got {
			if strings.Contains(r["MESSAGE"], "no longer asking systemd to extend the start's timeout") {
				return true
			}
		}
		return false
	}
	deadline := time.Now().Add(10 * time.Second)
	for !ended() {
		if time.Now().After(deadline) {
			t.Fatal("no record of the extensions' end within 10s")
		}
		time.Sleep(5 * time.Millisecond) // a poll interval inside a bounded wait
	}
	// The record is the extender's last act: none can follow it.
	got, _ := n.extensions()
	given := len(got)
	// At most one a third of the step, and the first at once.
	// (One more for a tick the scheduler delayed past the limit's timer.)
	if most := int(150/10) + 2; given > most {
		t.Errorf("%d extensions within the limit, want at most %d", given, most)
	}
	cache.open()
	select {
	case <-n.ready:
	case <-time.After(20 * time.Second):
		t.Fatal("not ready within 20s of the load's end")
	}
	if got, _ := n.extensions(); len(got) != given {
		t.Errorf("%d extensions asked for after the record of their end", len(got)-given)
	}
}
