package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/drift-monitor/drift-monitor/internal/check"
	"github.com/drift-monitor/drift-monitor/internal/desired/discover"
	"github.com/drift-monitor/drift-monitor/internal/desired/machineconfig"
	"github.com/drift-monitor/drift-monitor/internal/drift"
	"github.com/drift-monitor/drift-monitor/internal/escape"
	"github.com/drift-monitor/drift-monitor/internal/journal"
	"github.com/drift-monitor/drift-monitor/internal/model"
	"github.com/drift-monitor/drift-monitor/internal/ondisk"
	"github.com/drift-monitor/drift-monitor/internal/watch"
)

// load reads the desired state and makes it current; on failure the last
// good state stays (loader.go: the work of a load is obtain, which may run
// off the loop, and apply, which runs on it).
func (d *Daemon) load(ctx context.Context) error {
	return d.apply(ctx, d.obtain())
}

// startLoad is the start's load: obtained off the loop, as a reload is,
// so that a stop while a large config loads is not held up by it (the
// load cannot be cancelled; Close leaves it to the process's exit). false
// when ctx ended first.
func (d *Daemon) startLoad(ctx context.Context) (bool, error) {
	d.obtainOffLoop()
	select {
	case r := <-d.loads.done:
		return true, d.apply(ctx, r)
	case <-ctx.Done():
		return false, nil
	}
}

// install makes st, a desired state just loaded (or the last good one,
// kept from an earlier run), the one checked against.
func (d *Daemon) install(ctx context.Context, st model.State) error {
	for _, w := range st.Warnings {
		d.log.Warn("config warning: " + w)
	}
	d.noticeIgnored(ctx)
	d.ix = newIndex(d.applyExclusions(ctx, machineconfig.ApplyMCDExemptions(st.Entries, !d.o.CheckMCDCertificates)))
	d.reads.reset() // their entries' indices and contents are the old state's
	d.checker.Declared = ondisk.Declare(d.ix.entries)
	d.refreshLabels()
	d.checker.Store = st.Store
	d.files = st.Files
	d.loadErr = nil
	d.good = goodState{have: true}
	d.noticeNothing(ctx)
	d.writes.reset()
	if err := d.w.Watch(d.ix.dirs); err != nil {
		d.watchError(ctx, err)
	}
	d.partsLoaded(ctx)
	return nil
}

// reload re-reads the desired state off the event loop (loader.go) and,
// once it is applied, checks everything against what is then in force.
func (d *Daemon) reload(ctx context.Context, why string) { d.reloadThen(ctx, why, nil) }

// reloaded checks everything once a reload was applied (err: refused), and
// says so.
func (d *Daemon) reloaded(ctx context.Context, why string, err error) {
	if err != nil {
		d.loadErr = err
		// Checked against the last good state, which the status line says
		// is kept: a reload follows events the loop dropped (all of them
		// while inhibited), and without a check the daemon would go on
		// saying what it found before them.
		d.fullCheck(ctx, "reload refused: checking against the last good state")
	} else {
		d.fullCheck(ctx, "reload")
		d.record(ctx, slog.LevelInfo, journal.MsgReloaded,
			fmt.Sprintf("Reloaded the desired state (%s): %d entries from %d config files", why, len(d.ix.entries), len(d.files)))
	}
	if d.o.Notify != nil {
		d.o.Notify.Ready(d.status())
	}
}

// handle checks, once each, the entries a batch of events can affect; after
// an overflow (events were lost), everything.
func (d *Daemon) handle(ctx context.Context, evs []watch.Event) {
	is, overflow := d.affectedBy(evs)
	if overflow {
		d.record(ctx, slog.LevelWarn, journal.MsgQueueOverflow, "inotify queue overflowed: running a full check")
		d.fullCheck(ctx, "inotify queue overflow")
		return
	}
	d.checkEntries(ctx, is)
}

// affectedBy maps a batch of events to the entries they can affect, in
// index order, leaving out the files whose write is still in progress
// (writes.completes); overflow when the batch says events were lost.
func (d *Daemon) affectedBy(evs []watch.Event) (is []int, overflow bool) {
	toCheck := map[int]bool{}
	for _, ev := range evs {
		if ev.Op&watch.Overflow != 0 {
			return nil, true
		}
		if d.accountFileWrite(ev.Path, ev.Op, ev.IsDir) {
			continue // checked once its writer is done (accountlock.go)
		}
		dirEvent := ev.IsDir || ev.Op&watch.Rewatched != 0
		d.ix.affected(ev.Path, dirEvent, func(i int) {
			e := &d.ix.entries[i]
			if e.Path == ev.Path && !ev.IsDir && e.Type == model.TypeRegular {
				if !d.writes.completes(e.Path, ev.Op, d.isRegular) {
					return
				}
			}
			toCheck[i] = true
		})
		// Offline, nothing tells the daemon that a unit was enabled but
		// the unit files themselves (systemd's UnitFilesChanged does
		// otherwise: unitsEvent).
		if d.unitFiles != nil && len(d.ix.enablement) > 0 && d.unitFiles.ChangedBy(ev.Path) {
			for _, i := range d.ix.enablement {
				toCheck[i] = true
			}
		}
	}
	// A write completed in the batch and begun again after it (the same
	// file rewritten, a loop of cp): checked when the last one completes.
	for p := range d.writes.pending {
		d.ix.affected(p, false, func(i int) { delete(toCheck, i) })
	}
	for i := range toCheck {
		is = append(is, i)
	}
	slices.Sort(is)
	return is, false
}

// isRegular reports whether host path p is a regular file now.
func (d *Daemon) isRegular(p string) bool {
	d.obs.Forget()
	return d.obs.TypeOf(p) == ondisk.Regular
}

// settle checks a file whose writer went quiet without closing it: content
// that stays wrong is reported even if the file is never closed.
func (d *Daemon) settle(ctx context.Context, p string) {
	if !d.writes.quiet(p) {
		return // completed meanwhile
	}
	var is []int
	d.ix.affected(p, false, func(i int) { is = append(is, i) })
	d.checkEntries(ctx, is)
}

// checkEntries checks the entries is, with one reading of the unit files
// for all of them (check.Batch).
func (d *Daemon) checkEntries(ctx context.Context, is []int) {
	b := d.checker.NewBatch()
	defer b.Close()
	for _, i := range is {
		d.checkEntryIn(ctx, b, i, nil)
	}
}

func (d *Daemon) checkEntry(ctx context.Context, i int) { d.checkEntryWith(ctx, i, nil) }

func (d *Daemon) checkEntryWith(ctx context.Context, i int, read *check.ContentRead) {
	b := d.checker.NewBatch()
	defer b.Close()
	d.checkEntryIn(ctx, b, i, read)
}

// checkEntryIn checks entry i, taking its content comparison from read
// (a background read's result) when that read is of the file as it is now.
// An entry whose state cannot be determined now (systemd is off the bus)
// keeps what was known of it: a bus error is not drift.
func (d *Daemon) checkEntryIn(ctx context.Context, b *check.Batch, i int, read *check.ContentRead) {
	e := &d.ix.entries[i]
	out := d.checker.OutcomeIn(b, d.obs, e, read)
	d.noteAccountOutcome(i, out.Lock)
	if out.Unknown {
		return
	}
	if read != nil && out.Stamp != read.Stamp {
		// Changed since it was read, and its event may still be queued: a
		// shell redirection truncates before it writes, and checked now
		// the empty file would be reported. The change's event (or the
		// poll, or an overflow's full check) checks it once its writer is
		// done.
		return
	}
	if read != nil {
		d.reads.verify(e.ID(), read.Stamp)
	}
	if len(out.Drift) > 0 && d.holdDrift(ctx, e.ID()) {
		return // held: the release's full check reports it if it persists
	}
	appeared, resolved := d.track.update(e.ID(), d.deferred(i, out.Drift, out))
	d.report(ctx, appeared, resolved)
}

// fullCheck checks every entry. Paths with a write in progress keep what was
// known of them: their half-written content is not a drift; so do entries
// whose state could not be determined (systemd off the bus). A content too
// large to be read on the loop is read in the background (contentReads), as
// after an event: the full check takes a bounded time however large the
// files are.
func (d *Daemon) fullCheck(ctx context.Context, why string) {
	start, cpu := time.Now(), processCPU()
	d.refreshLabels()
	res := d.checker.All(ctx, d.ix.entries)
	if ctx.Err() != nil {
		// Stopped during the pass: its result is partial (Checker.All),
		// the entries it did not reach look clean, and replacing the
		// drift known with it would resolve drift that is still there.
		return
	}
	d.lastCheck = time.Now()
	d.noteAccountLock(res.AccountLock)
	now := map[string][]drift.Drift{}
	for _, dr := range res.Drift {
		now[dr.EntryID] = append(now[dr.EntryID], dr)
	}
	reading := map[string]bool{}
	for _, df := range res.Deferred {
		id := d.ix.entries[df.Index].ID()
		reading[id] = true
		if ds := d.deferred(df.Index, now[id], check.Outcome{Deferred: true, Stamp: df.Stamp}); len(ds) > 0 {
			now[id] = ds
		}
	}
	d.reads.keepOnly(reading)
	keep := func(id string) {
		if old, ok := d.track.byEntry[id]; ok {
			now[id] = old
		} else {
			delete(now, id)
		}
	}
	for p := range d.writes.pending {
		d.ix.affected(p, false, func(i int) { keep(d.ix.entries[i].ID()) })
	}
	for _, id := range res.Unknown {
		keep(id)
	}
	d.partsFullCheck(ctx, now, &res.Notices)
	appeared, resolved := d.track.replace(now)
	d.report(ctx, appeared, resolved)
	d.reportNotices(ctx, res.Notices)
	// How long it took, and the process's CPU time meanwhile, for whoever
	// weighs a pass (drift-bench's part 8): on a loaded machine the CPU
	// time is what the wall-clock time is not, the pass's own.
	d.log.Debug(fmt.Sprintf("full check (%s): %d entries, %d differences, took %s, CPU %s", why, res.Checked, len(res.Drift),
		time.Since(start).Round(time.Microsecond), (processCPU() - cpu).Round(time.Microsecond)))
}

// noticeIgnored journals each file of the desired-state directories that is
// not loaded, once when it appears (see discover.IgnoredFiles): what it
// declares is not watched, and the admin may believe it is.
func (d *Daemon) noticeIgnored(ctx context.Context) {
	now := map[string]bool{}
	for _, ig := range discover.IgnoredFiles(d.root, d.o.Configs) {
		now[ig.File] = true
		if !d.ignored[ig.File] {
			d.record(ctx, journal.LevelNotice, journal.MsgConfigIgnored, escape.Name(ig.String()))
		}
	}
	d.ignored = now
}

// noticeNothing sets, from the state just loaded, whether there is
// nothing to watch, and journals it when that begins.
func (d *Daemon) noticeNothing(ctx context.Context) {
	was := d.nothing
	d.nothing = ""
	if len(d.files) == 0 {
		d.nothing = discover.NoConfigWhere(d.root, d.o.Configs)
	}
	if d.nothing != "" && d.nothing != was {
		d.record(ctx, slog.LevelWarn, journal.MsgNothingToWatch,
			"No desired configuration: "+escape.Name(d.nothing)+": nothing to watch")
	}
}
