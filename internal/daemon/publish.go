package daemon

import (
	"github.com/drift-monitor/drift-monitor/internal/dbusapi"
	"github.com/drift-monitor/drift-monitor/internal/drift"
)

// snapshot is the state the bus shows: the first dbusapi.MaxDrift drifts and
// their count, whatever the number of drifts.
func (d *Daemon) snapshot() dbusapi.Snapshot {
	if d.busHead == nil || d.busGen != d.track.gen {
		d.busHead, d.busGen = d.track.busPage(0, dbusapi.MaxDrift), d.track.gen
	}
	s := dbusapi.Snapshot{StatusText: d.status(), WatchedPaths: uint32(d.ix.paths), Units: uint32(d.ix.units),
		Drift: d.withWriters(d.busHead), DriftCount: uint32(d.track.count()), DriftGeneration: d.track.gen}
	if !d.lastCheck.IsZero() {
		s.LastCheck = uint64(d.lastCheck.UnixMicro())
	}
	for _, h := range d.inhibitors {
		s.Inhibitors = append(s.Inhibitors, dbusapi.Inhibitor{Who: h.Who, Why: h.Why, PID: uint32(h.PID)})
	}
	s.State = d.snapshotState()
	return s
}

// snapshotState is the State the bus and the metrics show.
func (d *Daemon) snapshotState() string {
	switch {
	case !d.ready:
		return dbusapi.StateStarting
	case d.inhibited():
		return dbusapi.StateInhibited
	case d.track.count() > 0:
		return dbusapi.StateDrifted
	case d.loadErr != nil && !d.good.have:
		return dbusapi.StateError
	case d.nothing != "":
		return dbusapi.StateUnconfigured
	case d.reads.pendingCount() > 0 && !d.judged:
		// READY=1 came after the first check, but a large file it left
		// to the background reader is not judged yet.
		return dbusapi.StateStarting
	case d.reads.pendingCount() > 0, d.acct.lock != nil:
		return dbusapi.StateChecking
	default:
		return dbusapi.StateClean
	}
}

// noteJudged marks the first check done once a full check ran and no entry
// waits for its content to be judged. Called after every step of the loop.
func (d *Daemon) noteJudged() {
	if !d.judged && !d.lastCheck.IsZero() && d.reads.pendingCount() == 0 {
		d.judged = true
	}
}

// busPage is page as the bus carries it.
func (t *tracker) busPage(offset, limit int) []dbusapi.Drift {
	return pageOf(t, offset, limit, func(dr *drift.Drift) dbusapi.Drift {
		return dbusapi.Drift{Kind: string(dr.Kind), Entry: string(dr.Entry), Path: dr.Path, Unit: dr.Unit, Message: dr.Message}
	})
}

func (d *Daemon) publish() {
	if d.pub != nil {
		d.pub.Update(d.snapshot())
	}
	d.metricsChanged()
}
