package daemon

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	"github.com/drift-monitor/drift-monitor/internal/inhibit"
	"github.com/drift-monitor/drift-monitor/internal/journal"
	"github.com/drift-monitor/drift-monitor/internal/model"
	"github.com/drift-monitor/drift-monitor/internal/ondisk"
)

// TestReleaseWithABadConfigStillChecks: an update tool's transition leaves
// a drifted file and a desired state that cannot be loaded. Events were
// dropped while it held its inhibitor, so the release must check against
// the last good state at once: otherwise the daemon says clean (and
// status exits 0) about a host it has not looked at.
func TestReleaseWithABadConfigStillChecks(t *testing.T) {
	ctx := context.Background()
	d, _, log := syntheticDaemon(t, Options{})
	d.fullCheck(ctx, "first check")
	d.ready = true
	held := []inhibit.Inhibitor{{Who: "updater", Why: "test", File: "/run/x.lock"}}
	d.setInhibitors(ctx, held)
	if !d.inhibited() {
		t.Fatal("not inhibited with an inhibitor held")
	}
	writeFile(t, filepath.Join(d.o.Root, "etc/a.conf"), []byte("changed by the transition\n"))
	writeFile(t, d.o.Configs[0], []byte(`{"ignition":{"version":"3.4.0"},`))
	m := log.mark()
	d.setInhibitors(ctx, nil)
	reloadApplied(t, d)
	log.wait(t, m, journal.MsgLoadFailed, nil)
	log.wait(t, m, journal.RecordDriftDetected, map[string]string{"DRIFT_PATH": "/etc/a.conf", "DRIFT_KIND": "content"})
	if got := d.snapshotState(); got != "drifted" {
		t.Errorf("state after the release: %s, want drifted", got)
	}
}

// TestInhibitorJournaledWhenItsHolderIsKnown: the shell protocol locks the
// file, then writes who and why in it; a monitor that looked in between
// reports a holder named after the file. Once who and why are written, the
// record says who holds it; a holder that stays the same is not journaled
// again.
func TestInhibitorJournaledWhenItsHolderIsKnown(t *testing.T) {
	ctx := context.Background()
	d, _, log := syntheticDaemon(t, Options{})
	d.fullCheck(ctx, "first check")
	d.ready = true
	d.setInhibitors(ctx, []inhibit.Inhibitor{{Who: "updater", File: "/run/drift-monitor/inhibit.d/updater.lock"}})
	m := log.mark()
	known := []inhibit.Inhibitor{{Who: "rpm-ostree", Why: "deploying", PID: 42, File: "/run/drift-monitor/inhibit.d/updater.lock"}}
	d.setInhibitors(ctx, known)
	log.wait(t, m, journal.MsgInhibited, map[string]string{"INHIBIT_WHO": "rpm-ostree", "INHIBIT_WHY": "deploying", "INHIBIT_PID": "42"})
	n := len(log.find(journal.MsgInhibited, ""))
	d.setInhibitors(ctx, known)
	if got := len(log.find(journal.MsgInhibited, "")); got != n {
		t.Errorf("the same holder again: %d inhibited records, want %d", got, n)
	}
}

// TestStaleReadWaitsForItsEvent: a background read's result arrives for a
// file that changed since it was read — truncated by a shell redirection
// whose write has not come yet. Nothing is reported: the change's own
// event checks the file when its writer is done.
func TestStaleReadWaitsForItsEvent(t *testing.T) {
	ctx := context.Background()
	d, _, log := syntheticDaemon(t, Options{})
	d.fullCheck(ctx, "first check")
	i := slices.IndexFunc(d.ix.entries, func(e model.Entry) bool { return e.Path == "/etc/a.conf" })
	if i < 0 {
		t.Fatal("no /etc/a.conf entry")
	}
	read := d.checker.ReadContent(ctx, ondisk.NewObserver(d.root), &d.ix.entries[i])
	if read == nil {
		t.Fatal("nothing read of /etc/a.conf")
	}
	writeFile(t, filepath.Join(d.o.Root, "etc/a.conf"), nil) // truncated, not yet written
	d.checkEntryWith(ctx, i, read)
	if got := log.find(journal.RecordDriftDetected, "/etc/a.conf"); len(got) != 0 {
		t.Errorf("a stale read's file checked half-written: %v", got)
	}
}
