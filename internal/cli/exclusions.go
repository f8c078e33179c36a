package cli

import (
	"github.com/drift-monitor/drift-monitor/internal/exclude"
	"github.com/drift-monitor/drift-monitor/internal/model"
	"github.com/drift-monitor/drift-monitor/internal/ondisk"
)

// applyExclusions reads a command's exclusions inside root (package
// exclude: the daemon's rules, from the same exclude.conf by default) and
// takes out of state the entries they leave alone entirely, which it
// returns: check, reconcile and audit-rules list them, and never check,
// write or audit them. A file that cannot be used is the command's error:
// it names the file and what is wrong.
func applyExclusions(root *ondisk.Root, o exclude.Options, state *model.State) (*exclude.Rules, []model.Entry, error) {
	rules, err := o.Load(root)
	if err != nil {
		return nil, nil, err
	}
	var left []model.Entry
	state.Entries, left = rules.Split(state.Entries)
	return rules, left, nil
}
