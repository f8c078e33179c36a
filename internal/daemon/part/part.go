// Package part is how the daemon's optional features plug into its event
// loop: each is a Part, made by its own package (attribution, mcdfollow,
// imagewatch),
// listed once in the daemon's table of parts (internal/daemon/parts.go) and
// turned off by not being made. A part sees the daemon only through Host,
// and the daemon sees a part only through Part and the hooks below that it
// implements, so that each can be read, tested with a fake Host and left
// out alone — the way Ignition registers its stages
// (internal/exec/stages/stages.go: Stage, StageCreator, Register) and
// node_exporter its collectors (collector/collector.go: Collector's one
// method, registerCollector).
//
// The daemon calls every method of a part on its event loop, one at a time:
// a part's state needs no lock against the loop, only against the
// part's own goroutines. A part's goroutines reach the loop through
// Host.Do.
//
// It does not promise an order between parts beyond their order in the
// table, nor that a hook is called for every intermediate state (Loaded is
// called with the entries in force, which a failed load leaves as they were).
package part

import (
	"context"
	"log/slog"
	"time"

	"github.com/drift-monitor/drift-monitor/internal/check"
	"github.com/drift-monitor/drift-monitor/internal/dbusapi"
	"github.com/drift-monitor/drift-monitor/internal/drift"
	"github.com/drift-monitor/drift-monitor/internal/inhibit"
	"github.com/drift-monitor/drift-monitor/internal/model"
	"github.com/drift-monitor/drift-monitor/internal/ondisk"
)

// Part is one optional feature of the daemon.
type Part interface {
	// Name names the part ("attribution", "mcd") in the daemon's table.
	Name() string
	// Start starts the part, on the loop, before the first load of the
	// desired state. A part that cannot do its job says why (Host.Record)
	// and runs on degraded: it never stops the daemon.
	Start(ctx context.Context, h Host)
	// Stop stops the part's goroutines and releases what it holds; the
	// loop has ended, or is ending.
	Stop()
}

// Host is what a part may ask of the daemon.
type Host interface {
	// Record journals one record of the type id (a journal.Msg* constant),
	// from the loop or from any goroutine.
	Record(ctx context.Context, level slog.Level, id, msg string, attrs ...slog.Attr)
	// RecordDrift journals one record of the type id about dr: msg, with
	// dr's fields (DRIFT_KIND, DRIFT_PATH, …) as every drift record has
	// them, names escaped.
	RecordDrift(ctx context.Context, level slog.Level, id, msg string, dr *drift.Drift)
	// Log is the daemon's logger, for lines that are no record of their
	// own (no MESSAGE_ID: debugging, a failure at stop).
	Log() *slog.Logger
	// Do runs f on the event loop and waits for it; it fails once the
	// daemon is stopping or ctx ends. Only a part's own goroutines call
	// it: from the loop (a hook, or f itself) it would wait for itself.
	Do(ctx context.Context, f func(context.Context)) error
	// HoldChanged makes the daemon ask the Holders again whether they
	// hold reports (on the loop): after a part's hold may have changed.
	HoldChanged(ctx context.Context)

	// The rest are for a part that checks something of its own (a
	// Checker), on the loop.

	// Active reports whether reports are acted on: no inhibitor (nor a
	// Holder's hold) holds them. While they are held, a Checker drops its
	// events: the release's full check compares everything.
	Active() bool
	// Report makes ds the drift known of the part's entry id (nil: none)
	// and reports what appeared and was resolved, as the daemon reports a
	// declared entry's drift (a Holder may hold a new one).
	Report(ctx context.Context, id string, ds []drift.Drift)
	// FullCheck runs a full check now (why says why, in the log).
	FullCheck(ctx context.Context, why string)
	// Excluded reports whether the exclusions in force leave dr
	// unreported (the rules every command shares).
	Excluded(dr *drift.Drift) bool
	// CountsChanged says that what a Counter counts changed: the metrics
	// are written again.
	CountsChanged()
}

// Loader is told the entries in force: after every load the daemon makes
// current, and once at start whether or not the first load succeeded.
type Loader interface {
	Loaded(ctx context.Context, entries []model.Entry)
}

// Caveat is a part that may limit what the daemon can claim: what it
// returns ("" nothing) is added to the status line.
type Caveat interface {
	Caveat() string
}

// Holder is a part that holds reports, as an inhibitor does (the
// machine-config daemon's follower): while it says so, its hold is one
// more inhibitor, and its release re-reads the desired state and checks
// everything, as any inhibitor's does.
type Holder interface {
	// Held reports whether reports are held, and the inhibitor that says
	// by whom and why (its File names the part: no lock file is held).
	Held() (inhibit.Inhibitor, bool)
	// Activity says that file events came while reports were held.
	Activity()
	// HoldDrift is asked about a drift that appeared outside a full
	// check at an entry with no drift known: true holds it, and the
	// release's full check reports it if it persists.
	HoldDrift(ctx context.Context) bool
	// ConfigChanged says that the desired-state files changed.
	ConfigChanged(ctx context.Context)
}

// Checker is a part that checks something of its own, beside the
// declared entries: every full check asks it for its drift and notices.
type Checker interface {
	// FullCheck compares everything the part checks. Its drift (each
	// with its EntryID, the part's own) joins the full check's: the drift
	// known of those entries is replaced by it, as any entry's is; its
	// notices are journaled once when they appear, as the full check's.
	FullCheck(ctx context.Context) (ds, notices []drift.Drift)
}

// Counter is a part whose reports the metrics count (drift_monitor_drift_entries).
type Counter interface {
	// Count adds to kinds what the part reports that is no drift the
	// daemon knows (notices of its own), by kind.
	Count(kinds map[drift.Kind]int)
	// Kinds are the kinds of entry the part checks now: each has its
	// series, 0 or not, as a declared kind's.
	Kinds() []model.Kind
}

// Explainer adds to a declared entry's drift record what explains it.
type Explainer interface {
	// Explain says why e's drift dr is there ("" : nothing to say), with
	// the daemon's checker and observer to look at the host with.
	Explain(c *check.Checker, o *ondisk.Observer, e *model.Entry, dr *drift.Drift) string
}

// Poller is a part with directories of its own that inotify could not
// watch (the limit reached): the daemon polls them with its own, says so
// in its status line and metrics, and says when all are watched again.
type Poller interface {
	// Polled lists the part's directories without a watch.
	Polled() []string
	// Poll tries to watch them again and compares what is in those still
	// without one; the daemon calls it every poll interval while Polled
	// is not empty.
	Poll(ctx context.Context)
}

// Attributor names the writers of drift.
type Attributor interface {
	// Attribute says who wrote each drift of appeared (those of one
	// report): what its journal record adds, index by index. It may wait
	// a bounded time for what tells it (audit records on their way).
	Attribute(ctx context.Context, appeared []drift.Drift, r Report) []Writers
	// State is the attribution's state, for the metric; "" when there is
	// none to show.
	State() string
}

// Report is what an Attributor is told of the report it attributes.
type Report struct {
	// Ready: the daemon's first check is done (drift it finds before was
	// written before the daemon started).
	Ready bool
	// LastCheck is when the last full check ended.
	LastCheck time.Time
}

// Writers is what an Attributor says of one drift's writers.
type Writers struct {
	// Suffix is added to the drift's message in its journal record and on
	// the bus: " changed by …", or " (writer unknown: …)".
	Suffix string
	// Attrs are the record's DRIFT_WRITER_* fields.
	Attrs []slog.Attr
	// Writers are the writers found, newest first, as the bus and
	// `status --format json` give them; Unknown says why none is known
	// when there are none ("" when there are).
	Writers []dbusapi.Writer
	Unknown string
}
