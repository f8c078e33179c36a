package daemon

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/drift-monitor/drift-monitor/internal/inhibit"
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

// TestInhibitDirStatusJournaled: what happens to the inhibitor directory
// is journaled once per change: followed anew, cannot be followed (once
// for one cause), followed again.
func TestInhibitDirStatusJournaled(t *testing.T) {
	ctx := context.Background()
	d, _, log := syntheticDaemon(t, Options{InhibitDir: "/run/x/inhibit.d"})
	gone := errors.New("creating /run/x/inhibit.d: not a directory")
	for _, st := range []inhibit.DirStatus{
		{Replaced: 1, Why: "removed"},
		{Replaced: 1, Why: "removed", Err: gone},
		{Replaced: 1, Why: "removed", Err: gone},
		{Replaced: 1, Why: "removed"},
	} {
		d.inhibitDirStatus(ctx, st)
	}
	var got []string
	log.mu.Lock()
	defer log.mu.Unlock()
	for _, m := range log.got {
		if id := m["MESSAGE_ID"]; id == journal.MsgInhibitorsRewatched || id == journal.MsgInhibitorsUnwatched {
			got = append(got, m["MESSAGE"])
		}
	}
	want := []string{
		"The inhibitor directory /run/x/inhibit.d was removed: following the new one (inhibitors held in the old one no longer count)",
		"cannot follow inhibitors in /run/x/inhibit.d: creating /run/x/inhibit.d: not a directory; trying again every 1s",
		"Following inhibitors in /run/x/inhibit.d again",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("records (-want +got):\n%s", diff)
	}
}
