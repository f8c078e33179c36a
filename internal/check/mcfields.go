package check

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/drift-monitor/drift-monitor/internal/drift"
	"github.com/drift-monitor/drift-monitor/internal/model"
	"github.com/drift-monitor/drift-monitor/internal/osstate"
)

// osView is what a check compares a MachineConfig's fields beyond Ignition
// with, read once per check: they change only across boots and stagings.
type osView struct {
	state     *osstate.State
	installed map[string]bool
	rpmErr    error
	// finalization is the notice of a failed ostree finalization in the
	// previous boot, or nil.
	finalization *drift.Drift
}

func (v *osView) compare(e *model.Entry) drift.MachineConfigResult {
	return drift.CompareMachineConfig(e, v.state, v.installed, v.rpmErr)
}

// notCompared: a MachineConfig field's notices say it was not compared
// with the host (it does not apply, or could not be read).
func notCompared(ns []drift.Drift) bool {
	return slices.ContainsFunc(ns, func(n drift.Drift) bool { return n.Kind == drift.NotApplicable || n.Kind == drift.Unverifiable })
}

// osCommandsTimeout bounds the programs one check runs for a
// MachineConfig's fields together (rpm, systemctl, journalctl; each has a
// longer bound of its own, osstate.Run and osstate.Installed): the daemon
// runs a full check on its event loop, which must answer the watchdog
// (units/drift-monitor.service: WatchdogSec=30s, pinged every 15 s). A
// program that does not answer in time is a "not checked" notice, not a
// watchdog kill (and, with systemd or the journal wedged, a restart loop).
const osCommandsTimeout = 10 * time.Second

// readOS reads the root's ostree and kernel state, and the packages of the
// entries' extensions in its rpm database (one rpm run for all of them).
// The previous boot's finalization is looked for on the live host only
// (Commands set): the journal under another root is not its own.
func (c *Checker) readOS(ctx context.Context, entries []model.Entry) *osView {
	v := &osView{state: osstate.Read(c.Root)}
	if !v.state.Ostree {
		return v
	}
	ctx, cancel := context.WithTimeout(ctx, osCommandsTimeout)
	defer cancel()
	var pkgs []string
	for i := range entries {
		if entries[i].Kind != model.KindExtension {
			continue
		}
		for _, set := range model.ExtensionPackages(entries[i].Arg) {
			for _, p := range set {
				if !slices.Contains(pkgs, p) {
					pkgs = append(pkgs, p)
				}
			}
		}
	}
	if len(pkgs) > 0 {
		v.installed, v.rpmErr = osstate.Installed(ctx, c.Root, pkgs)
	}
	if c.Commands != nil {
		text, err := osstate.FinalizationFailure(ctx, c.Commands)
		switch {
		case err != nil:
			n := drift.FinalizationNotice("")
			n.Kind = drift.Unverifiable
			n.Message = fmt.Sprintf("the previous boot's ostree finalization is not checked: %v", err)
			v.finalization = &n
		case text != "":
			n := drift.FinalizationNotice(text)
			v.finalization = &n
		}
	}
	return v
}
