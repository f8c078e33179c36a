package check

import (
	"fmt"

	"github.com/drift-monitor/drift-monitor/internal/drift"
	"github.com/drift-monitor/drift-monitor/internal/enablement"
	"github.com/drift-monitor/drift-monitor/internal/model"
)

// enablement judges a unit's enablement entry in state, as the pass's
// UnitStates report it (err: a failure to ask). `enabled: true` is judged
// by enablement.Tree.WantEnabled against the pass's reading of the unit
// files, which systemd has no question for on the bus, so that a state from
// systemd and one computed offline are judged alike; what the first-boot
// record kept of the unit (e.FirstBoot) tells a unit that could not be
// enabled when its config was applied from one disabled since. A failure to
// read the unit files leaves the answer to the state.
func (p *passUnits) enablement(e *model.Entry, state string, err error) Outcome {
	if err != nil || e.Enabled == nil || !*e.Enabled {
		return Outcome{Drift: drift.CompareEnablement(e, state, err)}
	}
	t, terr := p.reading()
	if terr != nil {
		return Outcome{Drift: drift.CompareEnablement(e, state, nil)}
	}
	record, recorded := "", ""
	if fb := e.FirstBoot; fb != nil && fb.Enablement != "" {
		record, recorded = fb.Record, fb.Enablement
	}
	v, en, werr := t.WantEnabled(e.Unit, state, recorded)
	switch {
	case werr != nil:
		return Outcome{Drift: drift.CompareEnablement(e, state, nil)}
	case v == enablement.Satisfied:
		return Outcome{}
	case v == enablement.CannotEnable:
		why := en.Why
		switch {
		case len(en.Held) == 0:
		case record == "":
			why += "; whether that was so when its config was applied or the link has been replaced since (which disables it) cannot be told: no first-boot record (drift-monitor adopt) kept its enablement"
		default:
			why += fmt.Sprintf("; it was %s at the first boot too (recorded in %q)", recorded, record)
		}
		return Outcome{Notices: []drift.Drift{drift.CannotEnableNotice(e, state, why)}}
	case en.Settled:
		// Enabled at the first boot, and nothing can enable it now.
		return Outcome{Drift: drift.EnablementLost(e, state, fmt.Sprintf("it was %s at the first boot (recorded in %q), and now %s", recorded, record, en.Why))}
	}
	return Outcome{Drift: drift.CompareEnablement(e, state, nil)}
}
