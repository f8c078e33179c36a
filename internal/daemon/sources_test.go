package daemon

import (
	"path/filepath"
	"testing"

	"github.com/drift-monitor/drift-monitor/internal/journal"
)

// TestInhibitorsUnwatched: inhibitor files that cannot be followed are said
// with a record of their own type, and the daemon monitors all the same.
func TestInhibitorsUnwatched(t *testing.T) {
	n := &fakeNotifier{ready: make(chan struct{}, 1)}
	d, _, log := syntheticDaemon(t, Options{Notify: n})
	// Under a regular file: the directory can be neither made nor watched.
	d.o.InhibitDir = filepath.Join(d.o.Root, "etc/a.conf/inhibit.d")
	runUntilReady(t, d, n)
	log.wait(t, 0, journal.MsgInhibitorsUnwatched, nil)
	log.wait(t, 0, journal.MsgReady, nil)
	log.mu.Lock()
	defer log.mu.Unlock()
	for _, m := range log.got {
		if m["MESSAGE_ID"] == journal.MsgCheckFailed || m["MESSAGE_ID"] == journal.MsgLoadFailed {
			t.Errorf("a record of another type: %v", m)
		}
	}
}
