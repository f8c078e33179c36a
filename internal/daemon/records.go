package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"time"

	"github.com/drift-monitor/drift-monitor/internal/drift"
	"github.com/drift-monitor/drift-monitor/internal/escape"
	"github.com/drift-monitor/drift-monitor/internal/journal"
	"github.com/drift-monitor/drift-monitor/internal/model"
)

// record writes one journal record of the type id (a journal.Msg* constant,
// or journal.DriftDetected of a kind of entry: one per record type, see
// journal.Catalog), with its type's name.
func (d *Daemon) record(ctx context.Context, level slog.Level, id, msg string, attrs ...slog.Attr) {
	attrs = append([]slog.Attr{journal.MessageID(id), journal.Record(id)}, attrs...)
	d.log.LogAttrs(ctx, level, msg, attrs...)
}

// report writes one record per drift that appeared or was resolved, and
// starts the on-drift hook.
func (d *Daemon) report(ctx context.Context, appeared, resolved []drift.Drift) {
	ws := d.attribute(ctx, appeared)
	for i := range appeared {
		dr := &appeared[i]
		// The journal's record only: the tracker's drift is what check
		// finds, the same with or without attribution.
		// A part may explain it (the image's: an OS update's /etc merge
		// did it); the message, not the drift check finds, says so.
		explained := *dr
		d.explain(&explained)
		msg, attrs := explained.Message, driftAttrs(dr)
		if ws != nil {
			msg += ws[i].Suffix
			attrs = append(attrs, ws[i].Attrs...)
			d.noteWriters(dr, &ws[i])
		}
		d.record(ctx, slog.LevelWarn, journal.DriftDetected(dr.Entry), msg, append(attrs, journal.Diff(dr.Diff))...)
	}
	for i := range resolved {
		dr := &resolved[i]
		d.noteWriters(dr, nil)
		d.record(ctx, journal.LevelNotice, journal.MsgDriftResolved, "Resolved: "+dr.Message, driftAttrs(dr)...)
	}
	if len(appeared) > 0 && d.o.OnDrift != "" && d.o.Hook != nil {
		d.startHook(ctx)
	}
}

// contentDriftKnown reports whether a content drift of e is known: its
// diff was journaled when it appeared, and a drift that persists is not
// journaled again (tracker.update), so a new diff of it would go unshown.
// A full check's workers call it while the loop waits for them: nothing
// changes the tracker meanwhile.
func (d *Daemon) contentDriftKnown(e *model.Entry) bool {
	for _, dr := range d.track.byEntry[e.ID()] {
		if dr.Kind == drift.Content {
			return true
		}
	}
	return false
}

// reportNotices journals each of a full check's notices (what cannot be
// verified, a kernel argument that takes effect at the next boot) once when
// it appears: they come from the desired state, not from a change on disk,
// so every full check finds them again. One that goes away and comes back
// is journaled again.
func (d *Daemon) reportNotices(ctx context.Context, ns []drift.Drift) {
	now := make(map[string]bool, len(ns))
	kinds := map[drift.Kind]int{}
	for i := range ns {
		n := &ns[i]
		now[n.Key()] = true
		kinds[n.Kind]++
		if !d.notices[n.Key()] {
			d.record(ctx, journal.LevelNotice, journal.MsgNotice, n.Message, driftAttrs(n)...)
		}
	}
	d.notices = now
	if !maps.Equal(kinds, d.noticeKinds) {
		d.noticeKinds = kinds
		d.noticeGen++
	}
}

func (d *Daemon) startHook(ctx context.Context) {
	unit := d.o.OnDrift
	go func() {
		hctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		if err := d.o.Hook.StartUnit(hctx, unit); err != nil {
			d.record(ctx, slog.LevelError, journal.MsgHookFailed, fmt.Sprintf("Starting the on-drift unit %s failed: %v", escape.Name(unit), err),
				journal.Unit(unit))
		}
	}()
}

// driftAttrs are a drift's fields, every name in them escaped.
func driftAttrs(dr *drift.Drift) []slog.Attr {
	a := []slog.Attr{
		journal.Kind(string(dr.Kind)),
		journal.Entry(string(dr.Entry)),
		journal.Path(escape.Name(dr.Path)),
	}
	if dr.Unit != "" {
		a = append(a, journal.Unit(escape.Name(dr.Unit)))
	}
	if dr.User != "" {
		a = append(a, journal.User(escape.Name(dr.User)))
	}
	if dr.Group != "" {
		a = append(a, journal.Group(escape.Name(dr.Group)))
	}
	if dr.Want != "" {
		a = append(a, journal.Want(escape.Name(dr.Want)))
	}
	if dr.Got != "" {
		a = append(a, journal.Got(escape.Name(dr.Got)))
	}
	if at, ok := journal.Attribute(string(dr.Kind), escape.Name(dr.Attribute)); ok && dr.Attribute != "" {
		a = append(a, at)
	}
	return a
}
