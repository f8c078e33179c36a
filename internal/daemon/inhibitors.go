package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"sort"
	"strings"

	"github.com/drift-monitor/drift-monitor/internal/drift"
	"github.com/drift-monitor/drift-monitor/internal/escape"
	"github.com/drift-monitor/drift-monitor/internal/inhibit"
	"github.com/drift-monitor/drift-monitor/internal/journal"
	"github.com/drift-monitor/drift-monitor/internal/reconcile"
)

func (d *Daemon) inhibited() bool { return len(d.inhibitors) > 0 }

// internalInhibitors counts the held inhibitors that are parts' holds (the
// MCD follower's), not lock files'.
func (d *Daemon) internalInhibitors() int { return len(d.inhibitors) - len(d.locks) }

// setInhibitors takes the held set from the inhibitor monitor (with the
// parts' holds): new holders are journaled; when the last one is released,
// the desired state is read again (the transition may have changed it) and
// everything is checked.
func (d *Daemon) setInhibitors(ctx context.Context, locks []inhibit.Inhibitor) {
	d.locks = locks
	held := d.withHolds(locks)
	was := map[string]inhibit.Inhibitor{}
	for _, h := range d.inhibitors {
		was[h.File] = h
	}
	is := map[string]bool{}
	for _, h := range held {
		is[h.File] = true
		// Journaled when it appears, and again when its holder becomes
		// known: the shell protocol locks the file before it writes who
		// and why in it, and the monitor may look in between.
		if old, ok := was[h.File]; !ok || old.Who != h.Who || old.Why != h.Why || old.PID != h.PID {
			d.record(ctx, slog.LevelInfo, journal.MsgInhibited,
				fmt.Sprintf("Monitoring inhibited by %s", escape.Name(h.String())), journal.Inhibitor(escape.Name(h.Who), escape.Name(h.Why), h.PID)...)
		}
	}
	wasInhibited := d.inhibited()
	var released []string
	for _, h := range d.inhibitors {
		if !is[h.File] {
			released = append(released, escape.Name(h.Who))
			if h.Who == reconcile.InhibitorWho {
				d.reconcilers = append(d.reconcilers, h)
			}
		}
	}
	d.inhibitors = held
	if !wasInhibited || d.inhibited() {
		if !wasInhibited && d.inhibited() {
			// Writes under way belong to the transition now, and so
			// do the large files being read.
			d.writes.reset()
			d.reads.reset()
		}
		return
	}
	d.record(ctx, slog.LevelInfo, journal.MsgResumed,
		fmt.Sprintf("Monitoring resumed: %s released; re-reading the desired state", strings.Join(released, ", ")))
	by := d.reconcilers
	d.reconcilers = nil
	if d.ready {
		before := maps.Clone(d.track.byEntry)
		d.reloadThen(ctx, "the last inhibitor was released", func(ctx context.Context) { d.reconciled(ctx, by, before) })
	}
}

// reconciled journals what a `drift-monitor reconcile` (one of the released
// inhibitors) repaired: the drift known before it that is gone now.
func (d *Daemon) reconciled(ctx context.Context, by []inhibit.Inhibitor, before map[string][]drift.Drift) {
	if len(by) == 0 {
		return
	}
	var fixed []string
	for id, ds := range before {
		if _, still := d.track.byEntry[id]; !still && len(ds) > 0 {
			fixed = append(fixed, ds[0].Subject())
		}
	}
	if len(fixed) == 0 {
		return
	}
	sort.Strings(fixed)
	h := by[0]
	d.record(ctx, slog.LevelInfo, journal.MsgReconciled,
		fmt.Sprintf("Drift repaired by %s: %s", escape.Name(h.String()), strings.Join(fixed, ", ")),
		append(journal.Inhibitor(escape.Name(h.Who), escape.Name(h.Why), h.PID), journal.ReconciledEntries(len(fixed)))...)
}

func (d *Daemon) inhibitorNames() string {
	var names []string
	for _, h := range d.inhibitors {
		names = append(names, h.String())
	}
	return strings.Join(names, "; ")
}

// inhibitDirStatus journals what happened to the inhibitor directory: it
// was removed or replaced and the new one is followed, it cannot be
// followed (the monitor tries again), or it is followed again.
func (d *Daemon) inhibitDirStatus(ctx context.Context, st inhibit.DirStatus) {
	was := d.inhibitDir
	d.inhibitDir = st
	dir := escape.Name(d.o.InhibitDir)
	switch {
	case st.Err != nil:
		if was.Err == nil || was.Err.Error() != st.Err.Error() {
			d.record(ctx, slog.LevelError, journal.MsgInhibitorsUnwatched,
				fmt.Sprintf("cannot follow inhibitors in %s: %s; trying again every %s", dir, escape.Text(st.Err.Error()), inhibit.Retry))
		}
	case st.Replaced > was.Replaced:
		d.record(ctx, slog.LevelWarn, journal.MsgInhibitorsRewatched,
			fmt.Sprintf("The inhibitor directory %s was %s: following the new one (inhibitors held in the old one no longer count)", dir, st.Why))
	case was.Err != nil:
		d.record(ctx, slog.LevelInfo, journal.MsgInhibitorsRewatched, fmt.Sprintf("Following inhibitors in %s again", dir))
	}
}
