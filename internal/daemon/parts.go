package daemon

import (
	"context"
	"log/slog"
	"os"
	"slices"
	"strings"

	"github.com/drift-monitor/drift-monitor/internal/daemon/attribution"
	"github.com/drift-monitor/drift-monitor/internal/daemon/imagewatch"
	"github.com/drift-monitor/drift-monitor/internal/daemon/mcdfollow"
	"github.com/drift-monitor/drift-monitor/internal/daemon/part"
	"github.com/drift-monitor/drift-monitor/internal/dbusapi"
	"github.com/drift-monitor/drift-monitor/internal/desired/discover"
	"github.com/drift-monitor/drift-monitor/internal/drift"
	"github.com/drift-monitor/drift-monitor/internal/image"
	"github.com/drift-monitor/drift-monitor/internal/inhibit"
	"github.com/drift-monitor/drift-monitor/internal/mcd"
	"github.com/drift-monitor/drift-monitor/internal/model"
)

// The daemon's optional features are parts (package part): each made by its
// own code, seen by the loop only through part.Part and the hooks it
// implements, and off when not made. This table lists them all, in the
// order they start: the MCD's follower first, since its hold must be in
// place before the first load and check.
var partTable = []struct {
	name string
	// build makes the part o asks for, nil when o turns it off.
	build func(o Options, d *Daemon) part.Part
}{
	{"mcd", func(o Options, _ *Daemon) part.Part {
		p := mcdfollow.Path(o.Configs, o.MCD.Mode)
		if p == "" {
			return nil
		}
		return mcdfollow.New(mcdfollow.Options{Path: p, Timeouts: o.MCD.Timeouts, Journalctl: o.MCD.Journalctl, NotesFile: o.MCD.NotesFile})
	}},
	{"attribution", func(o Options, d *Daemon) part.Part {
		if o.Attribution != AttributionAudit {
			return nil
		}
		// The exclusions in force when the entries are loaded (both on
		// the loop): an excluded path gets no audit rule.
		leave := func(p string) bool { return d.excl.rules != nil && d.excl.rules.Forbids(p) }
		return attribution.New(attribution.Options{Root: d.root, Key: o.AuditKey, Canary: o.AuditCanary, Sessions: o.Sessions, Leave: leave})
	}},
	{"image", func(o Options, d *Daemon) part.Part {
		if o.Image == image.ModeOff {
			return nil
		}
		// The settings file is held to the rule configs are: root's
		// alone may say what is reported.
		trust := func(p string, f *os.File) error { return discover.CheckWriters(d.root, p, f) }
		return imagewatch.New(imagewatch.Options{Root: d.root, Mode: o.Image, Key: o.DigestKey, Trust: trust})
	}},
}

// Attribution modes (--attribution).
const (
	AttributionOff   = "off"
	AttributionAudit = "audit"
)

// MCDOptions configure the part that follows the machine-config daemon's
// updates (package mcdfollow).
type MCDOptions struct {
	// Mode: "auto" (on when a --config is the MCD's currentconfig), "on",
	// "off"; "" is auto.
	Mode string
	// Timeouts of the phases; zero fields take mcd.DefaultTimeouts'.
	Timeouts mcd.Timeouts
	// Journalctl is the journalctl binary ("" : on $PATH).
	Journalctl string
	// NotesFile keeps what the follower journaled in this boot, so that a
	// restart does not journal it again ("" : nothing is kept).
	NotesFile string
}

// parts are the daemon's parts and the hooks they implement.
type parts struct {
	all        []part.Part
	holders    []part.Holder
	loaders    []part.Loader
	caveats    []part.Caveat
	checkers   []part.Checker
	counters   []part.Counter
	explainers []part.Explainer
	pollers    []part.Poller
	// attr names the writers of drift; nil without attribution.
	attr part.Attributor
}

// newParts makes the parts o asks for.
func newParts(o Options, d *Daemon) parts {
	var ps parts
	for _, row := range partTable {
		if p := row.build(o, d); p != nil {
			ps.add(p)
		}
	}
	return ps
}

// add takes p, and the hooks it implements.
func (ps *parts) add(p part.Part) {
	ps.all = append(ps.all, p)
	if h, ok := p.(part.Holder); ok {
		ps.holders = append(ps.holders, h)
	}
	if l, ok := p.(part.Loader); ok {
		ps.loaders = append(ps.loaders, l)
	}
	if c, ok := p.(part.Caveat); ok {
		ps.caveats = append(ps.caveats, c)
	}
	if c, ok := p.(part.Checker); ok {
		ps.checkers = append(ps.checkers, c)
	}
	if c, ok := p.(part.Counter); ok {
		ps.counters = append(ps.counters, c)
	}
	if e, ok := p.(part.Explainer); ok {
		ps.explainers = append(ps.explainers, e)
	}
	if pl, ok := p.(part.Poller); ok {
		ps.pollers = append(ps.pollers, pl)
	}
	if a, ok := p.(part.Attributor); ok && ps.attr == nil {
		ps.attr = a
	}
}

// startParts starts every part; each stops with the loop.
func (d *Daemon) startParts(ctx context.Context, s *sources) {
	for _, p := range d.parts.all {
		p.Start(ctx, partHost{d})
		s.stops = append(s.stops, p.Stop)
	}
}

// partsLoaded tells the Loaders the entries in force.
func (d *Daemon) partsLoaded(ctx context.Context) {
	for _, l := range d.parts.loaders {
		l.Loaded(ctx, d.ix.entries)
	}
}

// partHost is the daemon as its parts see it (part.Host).
type partHost struct{ d *Daemon }

func (h partHost) Record(ctx context.Context, level slog.Level, id, msg string, attrs ...slog.Attr) {
	h.d.record(ctx, level, id, msg, attrs...)
}

func (h partHost) RecordDrift(ctx context.Context, level slog.Level, id, msg string, dr *drift.Drift) {
	h.d.record(ctx, level, id, msg, driftAttrs(dr)...)
}

func (h partHost) Log() *slog.Logger { return h.d.log }

func (h partHost) Do(ctx context.Context, f func(context.Context)) error {
	return h.d.do(ctx, func(lctx context.Context) error { f(lctx); return nil })
}

func (h partHost) HoldChanged(ctx context.Context) { h.d.setInhibitors(ctx, h.d.locks) }

func (h partHost) Active() bool { return !h.d.inhibited() }

func (h partHost) Report(ctx context.Context, id string, ds []drift.Drift) {
	if len(ds) > 0 && h.d.holdDrift(ctx, id) {
		return // held: the release's full check reports it if it persists
	}
	appeared, resolved := h.d.track.update(id, ds)
	h.d.report(ctx, appeared, resolved)
}

func (h partHost) FullCheck(ctx context.Context, why string) { h.d.fullCheck(ctx, why) }

func (h partHost) Excluded(dr *drift.Drift) bool {
	return h.d.checker.Exclude != nil && h.d.checker.Exclude(dr)
}

func (h partHost) CountsChanged() { h.d.noticeGen++ }

// partsFullCheck adds the Checkers' drift to now, a full check's drift by
// entry, and their notices to notices.
func (d *Daemon) partsFullCheck(ctx context.Context, now map[string][]drift.Drift, notices *[]drift.Drift) {
	for _, c := range d.parts.checkers {
		ds, ns := c.FullCheck(ctx)
		for _, dr := range ds {
			now[dr.EntryID] = append(now[dr.EntryID], dr)
		}
		*notices = append(*notices, ns...)
	}
	drift.Sort(*notices)
}

// partsCount adds the Counters' own reports to the metrics' counts by
// kind.
func (d *Daemon) partsCount(kinds map[drift.Kind]int) {
	for _, c := range d.parts.counters {
		c.Count(kinds)
	}
}

// partsKinds is declared, the kinds of entry the desired state declares,
// with those the Counters check: each has its series.
func (d *Daemon) partsKinds(declared []model.Kind) []model.Kind {
	out := declared
	for _, c := range d.parts.counters {
		for _, k := range c.Kinds() {
			if !slices.Contains(out, k) {
				out = append(slices.Clip(out), k)
			}
		}
	}
	return out
}

// explain adds to a drift's message what the Explainers say of it (its
// journal record's message, not the drift check finds).
func (d *Daemon) explain(dr *drift.Drift) {
	if len(d.parts.explainers) == 0 {
		return
	}
	var e *model.Entry
	d.ix.affected(dr.Path, false, func(i int) {
		if d.ix.entries[i].ID() == dr.EntryID {
			e = &d.ix.entries[i]
		}
	})
	if e == nil {
		return
	}
	for _, x := range d.parts.explainers {
		if why := x.Explain(d.checker, d.obs, e, dr); why != "" {
			dr.Message += " (" + why + ")"
		}
	}
}

// polled lists every directory that could not be watched: the declared
// paths' and the Pollers'.
func (d *Daemon) polled() []string {
	out := d.w.Polled()
	for _, p := range d.parts.pollers {
		out = append(slices.Clip(out), p.Polled()...)
	}
	return out
}

// pollParts has the Pollers look at their unwatched directories.
func (d *Daemon) pollParts(ctx context.Context) {
	for _, p := range d.parts.pollers {
		if len(p.Polled()) > 0 {
			p.Poll(ctx)
		}
	}
}

// withHolds is the held set: the lock files' (held) and the holds of the
// parts that hold reports.
func (d *Daemon) withHolds(held []inhibit.Inhibitor) []inhibit.Inhibitor {
	out := slices.Clip(held)
	for _, h := range d.parts.holders {
		if in, on := h.Held(); on {
			out = append(out, in)
		}
	}
	return out
}

// holdDrift asks the Holders whether a drift that appeared outside a full
// check at entry id is held; one already known at the entry never is.
func (d *Daemon) holdDrift(ctx context.Context, id string) bool {
	if len(d.track.byEntry[id]) > 0 {
		return false
	}
	for _, h := range d.parts.holders {
		if h.HoldDrift(ctx) {
			return true
		}
	}
	return false
}

// heldActivity tells the Holders that file events came while held.
func (d *Daemon) heldActivity() {
	for _, h := range d.parts.holders {
		h.Activity()
	}
}

// configChanged tells the Holders that the desired-state files changed.
func (d *Daemon) configChanged(ctx context.Context) {
	for _, h := range d.parts.holders {
		h.ConfigChanged(ctx)
	}
}

// partCaveats are what the parts add to the status line ("" nothing).
func (d *Daemon) partCaveats() string {
	var cs []string
	for _, c := range d.parts.caveats {
		if s := c.Caveat(); s != "" {
			cs = append(cs, s)
		}
	}
	return strings.Join(cs, "; ")
}

// attributionMetric is the state for drift_monitor_attribution_state, ""
// with attribution off.
func (d *Daemon) attributionMetric() string {
	if d.parts.attr == nil {
		return ""
	}
	return d.parts.attr.State()
}

// attribute asks the Attributor who wrote each drift of appeared; nil
// without attribution.
func (d *Daemon) attribute(ctx context.Context, appeared []drift.Drift) []part.Writers {
	if d.parts.attr == nil || len(appeared) == 0 {
		return nil
	}
	return d.parts.attr.Attribute(ctx, appeared, part.Report{Ready: d.ready, LastCheck: d.lastCheck})
}

// busKey names a drift as the bus carries it (which has no entry id).
func busKey(kind, entry, path, unit string) string {
	return kind + "\x00" + entry + "\x00" + path + "\x00" + unit
}

// noteWriters keeps what the journal said of dr's writers for the bus
// (drift-monitor status): the tracker holds what check finds, without
// them, and a later check replaces its message. A nil w forgets.
func (d *Daemon) noteWriters(dr *drift.Drift, w *part.Writers) {
	k := busKey(string(dr.Kind), string(dr.Entry), dr.Path, dr.Unit)
	if w == nil || w.Suffix == "" {
		delete(d.said, k)
		return
	}
	if d.said == nil {
		d.said = map[string]part.Writers{}
	}
	d.said[k] = *w
}

// withWriters returns page with each drift's message saying its writers,
// as its journal record did (a copy: page may be the cached head).
func (d *Daemon) withWriters(page []dbusapi.Drift) []dbusapi.Drift {
	if len(d.said) == 0 {
		return page
	}
	out := make([]dbusapi.Drift, len(page))
	copy(out, page)
	for i := range out {
		if w, ok := d.said[busKey(out[i].Kind, out[i].Entry, out[i].Path, out[i].Unit)]; ok && !strings.HasSuffix(out[i].Message, w.Suffix) {
			out[i].Message += w.Suffix
		}
	}
	return out
}

// withWritersEx is withWriters with the writers as fields too.
func (d *Daemon) withWritersEx(page []dbusapi.Drift) []dbusapi.DriftEx {
	page = d.withWriters(page)
	out := make([]dbusapi.DriftEx, len(page))
	for i, dr := range page {
		out[i] = dbusapi.DriftEx{Kind: dr.Kind, Entry: dr.Entry, Path: dr.Path, Unit: dr.Unit, Message: dr.Message}
		if w, ok := d.said[busKey(dr.Kind, dr.Entry, dr.Path, dr.Unit)]; ok {
			out[i].Writers, out[i].WriterUnknown = w.Writers, w.Unknown
		}
	}
	return out
}
