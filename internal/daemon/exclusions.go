package daemon

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/drift-monitor/drift-monitor/internal/exclude"
	"github.com/drift-monitor/drift-monitor/internal/journal"
	"github.com/drift-monitor/drift-monitor/internal/model"
)

// exclusions is what the daemon leaves alone (package exclude, the rules
// every command shares) and how sure it is of them.
type exclusions struct {
	// rules are the rules in force: the last good reading of the
	// exclusion file with the --exclude patterns, or those alone while the
	// file has never been read well.
	rules *exclude.Rules
	// refused says why the file in place is refused (nil when it is not):
	// the rules in force are then not what it says.
	refused error
	// good: rules hold a good reading of the file.
	good bool
	// paths counts the distinct declared paths left alone entirely.
	paths int
}

// applyExclusions reads the rules and returns the entries the daemon
// watches and checks: those the rules do not leave alone entirely. It
// never blinds the daemon: a file that cannot be used is journaled, said
// in the status line and the metrics, and the last good rules stay in
// force (at start, the --exclude patterns alone): a path the admin meant to
// exclude may then be reported, none that is declared goes unwatched.
func (d *Daemon) applyExclusions(ctx context.Context, entries []model.Entry) []model.Entry {
	x := &d.excl
	rules, err := d.o.Exclude.Load(d.root)
	switch {
	case err == nil:
		x.rules, x.refused, x.good = rules, nil, true
	case x.good:
		x.refused = err
		d.m.loadFailures++
		d.record(ctx, slog.LevelError, journal.MsgLoadFailed,
			fmt.Sprintf("Refusing the exclusions, keeping the last good ones (%d patterns): %v", len(x.rules.Patterns()), err),
			journal.ConfigError(err.Error()))
	default:
		x.rules, x.refused = d.o.Exclude.Flags(), err
		d.m.loadFailures++
		d.record(ctx, slog.LevelError, journal.MsgLoadFailed,
			fmt.Sprintf("Refusing the exclusions: none of the file's patterns apply until it is fixed (--exclude's %d do): %v", len(x.rules.Patterns()), err),
			journal.ConfigError(err.Error()))
	}
	kept, left := x.rules.Split(entries)
	x.paths = exclude.LeftPaths(left)
	d.checker.Exclude = x.rules.DriftFilter()
	return kept
}
