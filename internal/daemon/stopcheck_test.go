package daemon

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/drift-monitor/drift-monitor/internal/journal"
)

// A full check cut short by a stop is partial (check.Checker.All): the
// entries it did not reach look clean. Taking it as the pass's verdict
// journaled "Resolved" for drift that was still there, at every stop
// during a periodic check, a reload's or the first.
func TestStoppedFullCheckResolvesNothing(t *testing.T) {
	d, _, log := syntheticDaemon(t, Options{})
	if err := os.WriteFile(filepath.Join(d.o.Root, "etc/a.conf"), []byte("changed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	d.fullCheck(context.Background(), "test")
	if len(d.track.byEntry) == 0 {
		t.Fatal("the changed file is no drift")
	}
	known := len(d.track.byEntry)
	m := log.mark()
	stopped, cancel := context.WithCancel(context.Background())
	cancel()
	d.fullCheck(stopped, "stopped")
	if got := len(d.track.byEntry); got != known {
		t.Errorf("after a stopped pass %d drifts known, want %d", got, known)
	}
	log.mu.Lock()
	defer log.mu.Unlock()
	for _, r := range log.got[m:] {
		if r["MESSAGE_ID"] == journal.MsgDriftResolved {
			t.Errorf("a stopped pass journaled %q", r["MESSAGE"])
		}
	}
}
