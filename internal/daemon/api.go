package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/drift-monitor/drift-monitor/internal/dbusapi"
	"github.com/drift-monitor/drift-monitor/internal/drift"
	"github.com/drift-monitor/drift-monitor/internal/escape"
	"github.com/drift-monitor/drift-monitor/internal/inhibit"
	"github.com/drift-monitor/drift-monitor/internal/journal"
)

func (d *Daemon) inhibited() bool { return len(d.inhibitors) > 0 }

// setInhibitors takes the held set from the inhibitor monitor: new holders
// are journaled; when the last one is released, the desired state is read
// again (the transition may have changed it) and everything is checked.
func (d *Daemon) setInhibitors(ctx context.Context, held []inhibit.Inhibitor) {
	was := map[string]bool{}
	for _, h := range d.inhibitors {
		was[h.File] = true
	}
	is := map[string]bool{}
	for _, h := range held {
		is[h.File] = true
		if !was[h.File] {
			d.record(ctx, slog.LevelInfo, journal.MsgInhibited,
				fmt.Sprintf("Monitoring inhibited by %s", escape.Name(h.String())), inhibitorAttrs(h)...)
		}
	}
	wasInhibited := d.inhibited()
	var released []string
	for _, h := range d.inhibitors {
		if !is[h.File] {
			released = append(released, escape.Name(h.Who))
		}
	}
	d.inhibitors = held
	if !wasInhibited || d.inhibited() {
		if !wasInhibited && d.inhibited() {
			// Writes under way belong to the transition now, and so
			// do the large files being read.
			for p, t := range d.pending {
				t.Stop()
				delete(d.pending, p)
			}
			d.reads.reset()
		}
		return
	}
	d.record(ctx, slog.LevelInfo, journal.MsgResumed,
		fmt.Sprintf("Monitoring resumed: %s released; re-reading the desired state", strings.Join(released, ", ")))
	if d.ready {
		d.reload(ctx, "the last inhibitor was released")
	}
}

func inhibitorAttrs(h inhibit.Inhibitor) []slog.Attr {
	a := []slog.Attr{slog.String("INHIBIT_WHO", escape.Name(h.Who)), slog.String("INHIBIT_WHY", escape.Name(h.Why))}
	if h.PID > 0 {
		a = append(a, slog.Int("INHIBIT_PID", h.PID))
	}
	return a
}

// snapshot is the state the bus shows: the first dbusapi.MaxDrift drifts and
// their count, whatever the number of drifts.
func (d *Daemon) snapshot() dbusapi.Snapshot {
	if d.busHead == nil || d.busGen != d.track.gen {
		d.busHead, d.busGen = d.track.busPage(0, dbusapi.MaxDrift), d.track.gen
	}
	s := dbusapi.Snapshot{StatusText: d.status(), WatchedPaths: uint32(d.ix.paths), Units: uint32(d.ix.units),
		Drift: d.busHead, DriftCount: uint32(d.track.count()), DriftGeneration: d.track.gen}
	if !d.lastCheck.IsZero() {
		s.LastCheck = uint64(d.lastCheck.UnixMicro())
	}
	for _, h := range d.inhibitors {
		s.Inhibitors = append(s.Inhibitors, dbusapi.Inhibitor{Who: h.Who, Why: h.Why, PID: uint32(h.PID)})
	}
	switch {
	case !d.ready:
		s.State = "starting"
	case d.inhibited():
		s.State = "inhibited"
	case s.DriftCount > 0:
		s.State = "drifted"
	case d.loadFailed != "" && len(d.files) == 0:
		s.State = "error"
	default:
		s.State = "clean"
	}
	return s
}

// busPage is page as the bus carries it.
func (t *tracker) busPage(offset, limit int) []dbusapi.Drift {
	return pageOf(t, offset, limit, func(dr *drift.Drift) dbusapi.Drift {
		return dbusapi.Drift{Kind: string(dr.Kind), Entry: string(dr.Entry), Path: dr.Path, Unit: dr.Unit, Message: dr.Message}
	})
}

// DriftPage returns at most limit drifts from offset on (for the bus's
// GetDrift), with the total and the generation of the set they belong to.
func (d *Daemon) DriftPage(ctx context.Context, offset, limit int) (gen uint64, total int, page []dbusapi.Drift, err error) {
	err = d.do(ctx, func(context.Context) error {
		gen, total, page = d.track.gen, d.track.count(), d.track.busPage(offset, limit)
		return nil
	})
	return gen, total, page, err
}

func (d *Daemon) publish() {
	if d.pub != nil {
		d.pub.Update(d.snapshot())
	}
}

// errInhibited refuses a check while an update tool holds an inhibitor.
var errInhibited = errors.New("monitoring is inhibited")

// do runs f on the event loop and waits for it.
func (d *Daemon) do(ctx context.Context, f func(context.Context) error) error {
	res := make(chan error, 1)
	select {
	case d.requests <- func(lctx context.Context) { res <- f(lctx) }:
	case <-ctx.Done():
		return ctx.Err()
	case <-d.done:
		return errors.New("the daemon is stopping")
	}
	select {
	case err := <-res:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// CheckNow runs a full check (for the bus's Check method).
func (d *Daemon) CheckNow(ctx context.Context) (clean bool, n int, err error) {
	err = d.do(ctx, func(lctx context.Context) error {
		if d.inhibited() {
			return fmt.Errorf("%w by %s", errInhibited, d.inhibitorNames())
		}
		d.fullCheck(lctx, "check requested over D-Bus")
		n = d.track.count()
		return nil
	})
	return err == nil && n == 0, n, err
}

// ReloadNow re-reads the desired state (for the bus's Reload method).
func (d *Daemon) ReloadNow(ctx context.Context) error {
	return d.do(ctx, func(lctx context.Context) error {
		if d.inhibited() {
			return fmt.Errorf("%w by %s: the release reloads", errInhibited, d.inhibitorNames())
		}
		d.reload(lctx, "reload requested over D-Bus")
		if d.loadFailed != "" {
			return errors.New(d.loadFailed)
		}
		return nil
	})
}

func (d *Daemon) inhibitorNames() string {
	var names []string
	for _, h := range d.inhibitors {
		names = append(names, h.String())
	}
	return strings.Join(names, "; ")
}
