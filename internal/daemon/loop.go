package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/drift-monitor/drift-monitor/internal/journal"
)

// Run runs the event loop until ctx ends.
func (d *Daemon) Run(ctx context.Context, reload <-chan struct{}) error {
	defer close(d.done)
	s := &sources{reload: reload}
	defer s.stop()
	if !d.start(ctx, s) {
		return nil
	}
	for {
		// After the first check, then after each message handled: what the
		// work freed goes back to the kernel once the loop is quiet.
		d.gc.active()
		d.pacePolling(ctx, s)
		if !d.step(ctx, s) {
			return nil
		}
		d.noteJudged()
		d.updateStatus()
		d.publish()
	}
}

// start loads the desired state, starts the event sources, runs the first
// check and says the daemon is ready.
func (d *Daemon) start(ctx context.Context, s *sources) bool {
	stopExtending := d.extendStart()
	d.record(ctx, slog.LevelInfo, journal.MsgStarted, fmt.Sprintf("Starting drift-monitor %s", d.o.Version))
	d.followInhibitors(ctx, s)
	d.startParts(ctx, s)
	d.removeStaleMetrics(ctx)
	loaded, err := d.startLoad(ctx)
	if !loaded {
		stopExtending()
		d.stopping()
		return false
	}
	if err != nil && !d.good.have {
		// Refused, and no last good state to check against (loader.go):
		// the parts are told the entries in force at start, none.
		d.partsLoaded(ctx)
	}
	// Until the first check is done, the status line and the bus say so:
	// no drift known is not no drift.
	d.setStatus(d.status())
	d.publish()

	s.events = make(chan readResult, 16)
	go d.readEvents(s.events)
	d.followConfig(ctx, s)
	// Before the first check, which may defer reads: a large file is
	// read while the daemon is already ready and watching.
	d.reads.start(ctx)

	if !d.inhibited() {
		// While inhibited (inhibitors survive restarts), the first check
		// waits for the release: a half-applied transition is not drift.
		d.fullCheck(ctx, "first check")
	}
	if ctx.Err() != nil {
		// Stopped during the first check: not ready, and nothing judged.
		stopExtending()
		d.stopping()
		return false
	}
	d.ready = true
	d.noteJudged()
	stopExtending()
	if d.o.Notify != nil {
		d.o.Notify.Ready(d.status())
	}
	d.record(ctx, slog.LevelInfo, journal.MsgReady, fmt.Sprintf("Started: %s", d.status()))
	d.startMetrics(ctx)
	d.publish()

	if d.o.Interval > 0 {
		t := time.NewTicker(d.o.Interval)
		s.stops = append(s.stops, t.Stop)
		s.periodic = t.C
	}
	s.flags = d.startFlagSweep(s)
	s.pings = d.startWatchdog(ctx)
	if d.o.Units != nil {
		s.units = d.o.Units.Events()
	}
	if d.pub != nil {
		s.api = d.pub.Events()
	}
	return true
}

// stopping tells systemd and the journal that the daemon stops.
func (d *Daemon) stopping() {
	if d.o.Notify != nil {
		d.o.Notify.Stopping()
	}
	d.record(context.Background(), slog.LevelInfo, journal.MsgStopping, "Stopping drift-monitor")
}

// step waits for one message and handles it; false once ctx ended. While
// inhibited, file events, quiet writes, config changes and timers are
// dropped: the release re-reads the desired state and checks everything.
func (d *Daemon) step(ctx context.Context, s *sources) bool {
	active := !d.inhibited()
	select {
	case <-ctx.Done():
		d.stopping()
		return false
	case r := <-s.events:
		switch {
		case d.loads.running:
			// A reload is under way, and a full check against what it
			// loads follows it (reloadDone): checked now, the change
			// would be judged by the state it replaces (an update tool's
			// write, read after its release, by the old config).
		case active && d.syncInhibitors(ctx, s):
			d.handle(ctx, r.evs)
		default:
			d.heldActivity()
		}
		if r.err != nil {
			d.watchError(ctx, r.err)
		}
	case p := <-d.writes.settled:
		if active && d.syncInhibitors(ctx, s) {
			d.settle(ctx, p)
		}
	case held := <-s.inhibit:
		d.setInhibitors(ctx, held)
	case st := <-s.inhibitDir:
		d.inhibitDirStatus(ctx, st)
	case <-d.cfg.Changed():
		// The parts that hold first (the MCD's rename of currentconfig:
		// a rollback, a change no start line announced).
		d.configChanged(ctx)
		if active && d.syncInhibitors(ctx, s) {
			d.reload(ctx, "the desired-state files changed")
		}
		d.cfg.Rewatch()
	case _, ok := <-s.reload:
		if !ok {
			s.reload = nil
			return true
		}
		if active {
			d.reload(ctx, "reload requested")
		} else if d.o.Notify != nil {
			// Nothing to do until the release, which reloads anyway.
			d.o.Notify.Reloading()
			d.o.Notify.Ready(d.status())
		}
		d.cfg.Rewatch()
	case ev := <-s.units:
		d.unitsEvent(ctx, ev, active)
	case ev := <-s.api:
		d.apiEvent(ctx, ev)
	case <-s.periodic:
		if active {
			d.fullCheck(ctx, "periodic check")
		}
	case <-s.flags:
		d.sweepFlags(ctx, s)
	case <-s.pollC():
		if active {
			d.pollUnwatched(ctx)
		}
	case r := <-d.reads.done:
		d.contentRead(ctx, r)
	case r := <-d.loads.done:
		d.reloadDone(ctx, r)
	case <-d.acct.C():
		if active {
			d.recheckAccounts(ctx)
		}
	case req := <-d.requests:
		req(ctx)
	case reply := <-s.pings:
		close(reply)
	case <-d.loads.tickC():
		d.extendReload()
	}
	return true
}
