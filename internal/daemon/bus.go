package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/drift-monitor/drift-monitor/internal/buslink"
	"github.com/drift-monitor/drift-monitor/internal/dbusapi"
	"github.com/drift-monitor/drift-monitor/internal/journal"
)

// The values of the BUS_LINK field of MsgBusLost and MsgBusRestored.
const (
	linkSystemd = "systemd"
	linkAPI     = "api"
)

// unitsEvent takes what happened to the connection to systemd. While it is
// down, enablement is not checked (entries keep what was known) and the
// status line says so; when it is back after a loss, every enablement entry
// is checked again: a change made meanwhile sent a signal nobody received.
func (d *Daemon) unitsEvent(ctx context.Context, ev buslink.Event, active bool) {
	if !ev.Up {
		if !d.unitsDown {
			d.unitsDown = true
			d.record(ctx, slog.LevelWarn, journal.MsgBusLost,
				fmt.Sprintf("The connection to systemd over D-Bus is down (%v): the enablement of %s is not checked until it is back; reconnecting",
					ev.Err, plural(len(d.ix.enablement), "unit")),
				journal.BusLink(linkSystemd))
		}
		return
	}
	if d.unitsDown || ev.Missed {
		// Missed without a loss seen: lost and back before the loop looked.
		d.unitsDown = false
		d.record(ctx, slog.LevelInfo, journal.MsgBusRestored,
			fmt.Sprintf("Connected to systemd over D-Bus again: checking the enablement of %s", plural(len(d.ix.enablement), "unit")),
			journal.BusLink(linkSystemd))
	}
	// While inhibited, the release re-reads and checks everything anyway.
	if active && (ev.Missed || ev.Changed) {
		d.checkEntries(ctx, d.ix.enablement)
	}
}

// apiEvent takes what happened to the daemon's own connection to the bus:
// while it is down, `drift-monitor status` cannot reach the daemon, and the
// status line says so. The publisher restores its object by itself.
func (d *Daemon) apiEvent(ctx context.Context, ev buslink.Event) {
	var refused *dbusapi.NameError
	switch {
	case !ev.Up && errors.As(ev.Err, &refused):
		// Not the bus being away: a policy that is not installed, or
		// another daemon. Said once, as the status line cannot help.
		if !d.apiRefused {
			d.apiRefused = true
			d.log.Warn(fmt.Sprintf("no D-Bus API (drift-monitor status will not reach this daemon): %v; retrying", ev.Err))
		}
	case !ev.Up && !d.apiDown:
		d.apiDown = true
		d.record(ctx, slog.LevelWarn, journal.MsgBusLost,
			fmt.Sprintf("The daemon's connection to the system bus is down (%v): drift-monitor status cannot reach it until it is back; reconnecting", ev.Err),
			journal.BusLink(linkAPI))
	case ev.Up:
		switch {
		case d.apiDown || ev.Missed && !d.apiRefused:
			// Missed without a loss seen: lost and back before the loop
			// looked (the server exported itself again meanwhile).
			d.record(ctx, slog.LevelInfo, journal.MsgBusRestored, "Back on the system bus: the D-Bus API answers again",
				journal.BusLink(linkAPI))
		case d.apiRefused:
			d.log.Info("The D-Bus API owns its name now")
		}
		d.apiDown, d.apiRefused = false, false
	}
}
