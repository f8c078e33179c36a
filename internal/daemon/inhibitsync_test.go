package daemon

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/drift-monitor/drift-monitor/internal/inhibit"
	"github.com/drift-monitor/drift-monitor/internal/journal"
)

// TestSyncInhibitorsBeforeAnEvent: an update tool locks, then writes a
// declared file; the write's event can reach the loop before the lock's
// event reaches the inhibitor monitor (two inotify instances). The loop
// looks at the locks before it acts on the event: the half-way write is
// not drift, and the inhibitor is journaled.
func TestSyncInhibitorsBeforeAnEvent(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("inhibitor lock files count only when root's")
	}
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "inhibit.d")
	d, _, log := syntheticDaemon(t, Options{})
	d.fullCheck(ctx, "first check")
	d.ready = true
	m, err := inhibit.Watch(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	// The monitor's deliveries are never read: only the sync can tell.
	s := &sources{inhibitors: m}

	lock, err := inhibit.Take(dir, "my-updater", "applying v2", 4711)
	if err != nil {
		t.Fatal(err)
	}
	mark := log.mark()
	writeFile(t, filepath.Join(d.o.Root, "etc/a.conf"), []byte("half-"))
	if d.syncInhibitors(ctx, s) {
		t.Fatal("syncInhibitors: still active with a lock held")
	}
	log.wait(t, mark, journal.MsgInhibited, map[string]string{"INHIBIT_WHO": "my-updater"})
	if !d.inhibited() {
		t.Fatal("not inhibited after the sync")
	}
	if got := d.snapshotState(); got != "inhibited" {
		t.Errorf("state %s, want inhibited", got)
	}

	writeFile(t, filepath.Join(d.o.Root, "etc/a.conf"), []byte("a\n"))
	lock.Release()
	if !d.syncInhibitors(ctx, s) {
		t.Fatal("syncInhibitors: still inhibited after the release")
	}
	log.wait(t, mark, journal.MsgResumed, nil)
	if got := log.find(journal.RecordDriftDetected, "/etc/a.conf"); len(got) > 0 {
		t.Errorf("the transition was reported as drift: %v", got)
	}
}
