package daemon

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// A stop while the desired configuration loads is not held up by the load,
// which nothing can cancel (a config of many files takes longer than
// systemd's TimeoutStopSec=, and a stop that waits for it ends in SIGKILL):
// Run and Close return, say that the load was abandoned, and the load,
// released later, touches nothing that was closed.
func TestStopDoesNotWaitForALoad(t *testing.T) {
	cache := &gatedCache{}
	root := t.TempDir()
	cfg := syntheticConfig(t, root)
	cache.close()
	t.Cleanup(cache.open)
	log := &records{}
	n := &fakeNotifier{ready: make(chan struct{}, 1)}
	d, err := New(Options{Root: root, Configs: []string{cfg}, Cache: cache, Log: slog.New(log), Notify: n})
	if err != nil {
		t.Fatal(err)
	}
	d.closeWait = 50 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx, nil) }()
	select {
	case <-cache.reached:
	case <-time.After(20 * time.Second):
		t.Fatal("the start's load did not start within 20s")
	}
	cancel()
	closed := make(chan struct{})
	go func() {
		<-done
		d.Close()
		close(closed)
	}()
	select {
	case <-closed:
	case <-time.After(20 * time.Second):
		t.Fatal("Run and Close did not return within 20s of the stop while a load waited")
	}
	found := false
	log.mu.Lock()
	for _, r := range log.got {
		found = found || strings.Contains(r["MESSAGE"], "loading the desired configuration was abandoned")
	}
	log.mu.Unlock()
	if !found {
		t.Error("no record that the load under way was abandoned")
	}
}
