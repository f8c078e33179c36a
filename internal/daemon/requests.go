package daemon

import (
	"context"
	"errors"
	"fmt"

	"github.com/drift-monitor/drift-monitor/internal/dbusapi"
)

// The calls the bus makes (dbusapi's server): each runs on the event loop,
// as a message, so that it sees and changes the state as the loop does.

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

// CheckNow runs a full check (for the bus's Check method). It is clean only
// when every entry was judged: a large file the check left to the
// background reader, not read yet on this version, makes it not clean with
// the drift known so far (n may then be 0).
func (d *Daemon) CheckNow(ctx context.Context) (clean bool, n int, err error) {
	pending := 0
	err = d.do(ctx, func(lctx context.Context) error {
		if d.inhibited() {
			return fmt.Errorf("%w by %s", errInhibited, d.inhibitorNames())
		}
		d.fullCheck(lctx, "check requested over D-Bus")
		n, pending = d.track.count(), d.reads.pendingCount()
		if d.acct.lock != nil {
			pending++ // the user and group entries are not judged
		}
		return nil
	})
	return err == nil && n == 0 && pending == 0, n, err
}

// ReloadNow re-reads the desired state (for the bus's Reload method) and
// returns once it is applied and checked: the load runs off the loop
// (loader.go), and the reply waits for it here.
func (d *Daemon) ReloadNow(ctx context.Context) error {
	applied := make(chan error, 1)
	err := d.do(ctx, func(lctx context.Context) error {
		if d.inhibited() {
			return fmt.Errorf("%w by %s: the release reloads", errInhibited, d.inhibitorNames())
		}
		d.reloadThen(lctx, "reload requested over D-Bus", func(context.Context) {
			if d.inhibited() {
				applied <- fmt.Errorf("%w by %s: the release reloads", errInhibited, d.inhibitorNames())
				return
			}
			applied <- d.loadErr
		})
		return nil
	})
	if err != nil {
		return err
	}
	select {
	case err := <-applied:
		return err
	case <-ctx.Done():
		return ctx.Err()
	case <-d.done:
		return errors.New("the daemon is stopping")
	}
}

// DriftPage returns at most limit drifts from offset on (for the bus's
// GetDrift), with the total and the generation of the set they belong to.
func (d *Daemon) DriftPage(ctx context.Context, offset, limit int) (gen uint64, total int, page []dbusapi.Drift, err error) {
	err = d.do(ctx, func(context.Context) error {
		gen, total, page = d.track.gen, d.track.count(), d.withWriters(d.track.busPage(offset, limit))
		return nil
	})
	return gen, total, page, err
}

// DriftPageEx is DriftPage with each drift's writers, as its journal record
// named them (for the bus's GetDriftEx).
func (d *Daemon) DriftPageEx(ctx context.Context, offset, limit int) (gen uint64, total int, page []dbusapi.DriftEx, err error) {
	err = d.do(ctx, func(context.Context) error {
		gen, total = d.track.gen, d.track.count()
		page = d.withWritersEx(d.track.busPage(offset, limit))
		return nil
	})
	return gen, total, page, err
}
