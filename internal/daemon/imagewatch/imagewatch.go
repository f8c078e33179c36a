// Package imagewatch is the daemon's part that compares the live /etc with
// the OS image's (package image) in real time: the whole /etc tree is
// watched with an inotify instance of its own (every directory, those
// created later included; an overflow compares the whole tree again), each
// event compares what it can have affected with the image's baseline
// (image.Baseline.DiffAt), and each undeclared difference is reported once
// when it appears and once when it is gone — as a notice (MsgUndeclared,
// MsgUndeclaredGone; the host stays clean) or, in drift mode, as drift
// through the daemon's tracker (part.Host.Report). Every full check
// compares the whole tree (part.Checker).
//
// A change of the baseline is a transition, not drift: the baseline is read
// again when its stamp changes (an rpm transaction rewrote the database, a
// confext was merged or refreshed, another deployment booted), and while an
// rpm or ostree transaction holds its lock the undeclared reports are held,
// then everything is compared at its end. The first boot's record
// (image.RecordPath), which drift-monitor-adopt-image.service writes once
// the first boot is up — after the daemon started —, is followed: a new
// record classes the tree anew at once.
//
// The mode (notice, drift, off) is the --image flag's, or else the image's
// settings file's (image.SettingsFile), read at start, at every load and,
// while /etc is compared, whenever the file changes: `check` and
// `reconcile` read the same file, so that every interface gives the same
// answer.
//
// It promises that what it cannot compare is said: a baseline that cannot
// be read is a not-checked notice and a caveat of the status line, never
// a clean /etc; directories inotify could not watch are the daemon's to
// poll (part.Poller), in its status line and metrics. It does not promise
// to see a file written through a descriptor that is never closed before
// the next full check.
package imagewatch

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/drift-monitor/drift-monitor/internal/check"
	"github.com/drift-monitor/drift-monitor/internal/daemon/part"
	"github.com/drift-monitor/drift-monitor/internal/drift"
	"github.com/drift-monitor/drift-monitor/internal/escape"
	"github.com/drift-monitor/drift-monitor/internal/image"
	"github.com/drift-monitor/drift-monitor/internal/journal"
	"github.com/drift-monitor/drift-monitor/internal/model"
	"github.com/drift-monitor/drift-monitor/internal/ondisk"
	"github.com/drift-monitor/drift-monitor/internal/osstate"
	"github.com/drift-monitor/drift-monitor/internal/watch"
)

// Options configure the part.
type Options struct {
	Root *ondisk.Root
	// Mode is the --image flag's mode; "" follows the settings file
	// (image.LoadMode). ModeOff is no part at all (the daemon's table
	// makes none).
	Mode image.Mode
	// Key is the host's digest key: the first boot's record is matched
	// with it.
	Key model.Key
	// Trust refuses a settings file another user could have written
	// (discover.CheckWriters).
	Trust func(p string, f *os.File) error
}

// holdPoll paces the look at a transaction's lock while one is held:
// nothing says when it is released (an unlock makes no inotify event).
const holdPoll = time.Second

// Directories followed besides /etc: the staged deployment's (a new one is
// an OS update on its way, whose /etc merge a full check predicts) and the
// first boot's record's; and, among /etc's, the settings file's.
var (
	stagedDir   = path.Dir(osstate.StagedFile)
	recordDir   = path.Dir(image.RecordPath)
	settingsDir = path.Dir(image.SettingsFile)
)

// Part compares /etc with the image. Every method but Stop and the
// goroutines' is called on the daemon's loop.
type Part struct {
	o Options
	h part.Host
	// ctx is the start's: the goroutines' calls to the loop end with it.
	ctx context.Context

	// mode is the mode in force; modeErr why the settings file is
	// refused ("" : it is not; the last good mode is kept).
	mode    image.Mode
	modeErr string
	entries []model.Entry

	// base is the baseline compared with; nil while nothing is compared
	// (the mode is off, or there is no baseline). unavailable says why
	// the image's /etc is not compared though asked ("" : it is, or it
	// was not asked for).
	base        *image.Baseline
	unavailable string
	cl          *image.Classifier
	// recordStamp is the first boot's record's version when last read;
	// stagedStamp the staged deployment's file's when last compared.
	recordStamp, stagedStamp string

	w *watch.Watcher
	// changes are the differences from the baseline, by path; reported
	// the undeclared ones reported (not excluded), by path.
	changes  map[string]image.Change
	reported map[string]drift.Drift
	// held names the transaction undeclared reports are held for ("" :
	// none); holdStop ends the goroutine that looks at its lock.
	held     string
	holdStop chan struct{}

	stop chan struct{}
	wg   sync.WaitGroup
}

// New makes the part; Start starts it.
func New(o Options) *Part {
	return &Part{o: o, changes: map[string]image.Change{}, reported: map[string]drift.Drift{}, stop: make(chan struct{})}
}

// Name is the part's name in the daemon's table.
func (p *Part) Name() string { return "image" }

// Start reads the mode, finds the baseline and starts watching. It runs
// before the first load; the first full check compares the whole tree.
func (p *Part) Start(ctx context.Context, h part.Host) {
	p.h, p.ctx = h, ctx
	w, err := watch.New(p.o.Root)
	if err != nil {
		h.Record(ctx, slog.LevelError, journal.MsgImage, fmt.Sprintf("The OS image's /etc is not compared: inotify: %v", err))
		p.unavailable = "inotify: " + err.Error()
		return
	}
	p.w = w
	p.wg.Add(1)
	go p.read()
	p.readMode(ctx)
	if p.mode != image.ModeOff {
		p.begin(ctx)
	}
	p.rewatch()
}

// Stop stops the goroutines and releases the watch and the baseline.
func (p *Part) Stop() {
	close(p.stop)
	if p.w != nil {
		p.w.Close()
	}
	p.wg.Wait()
	if p.base != nil {
		p.base.Close()
	}
}

// read hands the watcher's events to the loop until it is closed.
func (p *Part) read() {
	defer p.wg.Done()
	buf := make([]byte, watch.ReadBufferSize)
	for {
		evs, err := p.w.Read(buf)
		if errors.Is(err, os.ErrClosed) {
			return
		}
		if p.h.Do(p.ctx, func(lctx context.Context) { p.events(lctx, evs, err) }) != nil {
			return // the daemon is stopping
		}
	}
}

// readMode sets the mode in force: the flag's, or the settings file's. A
// file that is refused keeps the last good mode, and says so.
func (p *Part) readMode(ctx context.Context) {
	if p.o.Mode != "" {
		p.mode = p.o.Mode
		return
	}
	m, err := image.LoadMode(p.o.Root, p.o.Trust)
	if err != nil {
		if why := escape.Text(err.Error()); why != p.modeErr {
			p.modeErr = why
			if p.mode == "" {
				p.mode = image.ModeNotice
			}
			p.h.Record(ctx, slog.LevelError, journal.MsgImage, fmt.Sprintf("Refusing the image's settings, keeping mode %s: %s", p.mode, why))
		}
		return
	}
	p.modeErr = ""
	p.mode = m
}

// begin finds the baseline and classes against it; nothing is compared
// until the next full check.
func (p *Part) begin(ctx context.Context) {
	b, err := image.Find(ctx, p.o.Root)
	if err != nil {
		p.unavailable = err.Error()
		p.h.Record(ctx, slog.LevelError, journal.MsgImage, "The OS image's /etc is not compared: "+escape.Text(err.Error()))
		return
	}
	if !b.Available() {
		b.Close()
		if b.Kind == image.KindNone && p.mode != image.ModeDrift {
			// Not an image host: nothing to say unless drift was asked
			// for (check says the same).
			return
		}
		p.unavailable = b.Unavailable
		p.h.Record(ctx, slog.LevelWarn, journal.MsgImage, "The OS image's /etc is not compared: "+escape.Text(b.Unavailable))
		return
	}
	p.base, p.unavailable = b, ""
	p.classify(ctx)
	p.h.Record(ctx, slog.LevelInfo, journal.MsgImage, fmt.Sprintf("Comparing /etc with %s", escape.Text(b.Source)))
	if u := b.Extensions.Unknown(); u != "" {
		p.h.Record(ctx, slog.LevelWarn, journal.MsgImage, escape.Text(u))
	}
	if p.cl.Record == nil {
		p.h.Record(ctx, slog.LevelInfo, journal.MsgImage, "No first-boot record of /etc ("+image.RecordPath+"): what this host's own first boot left in /etc is undeclared. "+
			"drift-monitor-adopt-image.service records it at the first boot; on a host that got drift-monitor later, review `drift-monitor check --image`, then run `drift-monitor adopt --image`")
	}
}

// end stops comparing: what was reported is forgotten (the full check
// that follows resolves the drift the tracker holds of it).
func (p *Part) end() {
	if p.base != nil {
		p.base.Close()
	}
	p.base, p.cl, p.unavailable = nil, nil, ""
	p.endHold()
	clear(p.changes)
	if len(p.reported) > 0 {
		clear(p.reported)
		p.h.CountsChanged()
	}
}

// comparing reports whether /etc is compared now.
func (p *Part) comparing() bool { return p.base != nil }

// classify makes the classifier of the entries in force, with the first
// boot's record as it is now and the exclusions in force at each report.
func (p *Part) classify(ctx context.Context) {
	cl, err := image.NewClassifierFor(p.o.Root, p.base, p.entries, p.o.Key, p.h.Excluded)
	if err != nil {
		p.h.Log().Warn(escape.Text(err.Error()))
	}
	p.cl = cl
	p.recordStamp = image.RecordStamp(p.o.Root)
}

// Loaded takes a new desired state: what is declared changed, and the mode
// may have. The full check that follows every load classes the
// differences anew.
func (p *Part) Loaded(ctx context.Context, entries []model.Entry) {
	p.entries = entries
	if p.h == nil {
		return // not started: Start reads what it needs
	}
	p.modeChanged(ctx)
	if p.comparing() {
		p.classify(ctx)
	}
}

// modeChanged reads the mode again and moves to it; true when it changed.
// What was reported in the old mode is forgotten: the next full check
// reports everything in the new one (the drift the tracker holds in drift
// mode is resolved by it when the mode is notice or off).
func (p *Part) modeChanged(ctx context.Context) bool {
	old := p.mode
	p.readMode(ctx)
	if p.mode == old {
		return false
	}
	p.h.Record(ctx, slog.LevelInfo, journal.MsgImage, fmt.Sprintf("The image's mode is %s (was %s)", p.mode, old))
	switch {
	case p.mode == image.ModeOff:
		p.end()
	case old == image.ModeOff || !p.comparing():
		p.end()
		p.begin(ctx)
	default:
		if len(p.reported) > 0 {
			clear(p.reported)
			p.h.CountsChanged()
		}
	}
	p.rewatch()
	return true
}

// rewatch watches what the part follows now, while it compares: every
// directory of /etc, as it is now (the settings file's among them), the
// staged deployment's and the record's (from their nearest existing
// ancestors while they do not exist). While it compares nothing (mode
// off, no image, no baseline) it watches nothing, and takes no watch from
// the declared paths: the settings file is read again at the next load.
func (p *Part) rewatch() {
	if p.w == nil {
		return
	}
	var dirs []string
	if p.comparing() {
		etc, err := image.Dirs(p.o.Root, image.EtcDir)
		if err != nil {
			p.h.Record(p.ctx, slog.LevelError, journal.MsgImage, fmt.Sprintf("Listing %s to watch it: %s", image.EtcDir, escape.Text(err.Error())))
		}
		dirs = append(dirs, etc...)
		dirs = append(dirs, recordDir)
		if p.base.Kind == image.KindOstree || p.base.Kind == image.KindTransientEtc {
			dirs = append(dirs, stagedDir)
		}
	}
	// Running out of watches is not an error here: the directories left
	// are polled (Polled, Poll), which the daemon says.
	_ = p.w.Watch(dirs)
}

// what a batch of events touched.
type touched struct {
	paths                                   []string
	settings, record, staged, rewatch, lost bool
}

func (p *Part) sort(evs []watch.Event) touched {
	var t touched
	seen := map[string]bool{}
	for _, ev := range evs {
		// A directory on the way to one followed appeared or moved: what
		// is below it may have come with it, before its watch.
		dirMoved := ev.Op&watch.Rewatched != 0 || ev.IsDir && ev.Op&(watch.Create|watch.MovedTo) != 0
		moved := func(dir string) bool { return dirMoved && under(dir, ev.Path) }
		switch {
		case ev.Op&watch.Overflow != 0:
			t.lost = true
		case ev.Op == watch.Modify:
			// Written, not yet closed: its close (or the next full
			// check) compares it, never a half-written file.
		case ev.Path == image.SettingsFile && ev.Op&^watch.Create == 0:
			// Made, not yet written: its close (Write) reads it, never
			// the empty file, which would say "notice" a moment.
		case ev.Path == image.SettingsFile || moved(settingsDir):
			t.settings = true
			if dirMoved {
				t.rewatch = true
				t.paths = append(t.paths, ev.Path)
			}
			if moved(image.EtcDir) {
				t.lost = true
			}
		case ev.Path == image.RecordPath || moved(recordDir):
			t.record = true
		case ev.Path == osstate.StagedFile || moved(stagedDir):
			t.staged = true
		case under(ev.Path, image.EtcDir):
			if ev.IsDir && ev.Op&(watch.Create|watch.MovedTo) != 0 || ev.Op&watch.Rewatched != 0 {
				t.rewatch = true
			}
			if p.cl != nil && p.cl.Declares(ev.Path) && ev.Op&watch.Rewatched == 0 {
				// Its own entry's event: what the image says of it is
				// classed declared anyway, and the declared drift's
				// report must not wait for a comparison that says
				// nothing.
				continue
			}
			if !seen[ev.Path] {
				seen[ev.Path] = true
				t.paths = append(t.paths, ev.Path)
			}
		}
	}
	return t
}

// under reports whether host path p is dir or lies under it.
func under(p, dir string) bool {
	return p == dir || dir == "/" || strings.HasPrefix(p, dir+"/")
}

// events compares what a batch of events can have changed. While reports
// are held (an inhibitor), nothing is compared: the release's full check
// compares everything.
func (p *Part) events(ctx context.Context, evs []watch.Event, err error) {
	if err != nil && !errors.Is(err, watch.ErrExhausted) {
		p.h.Record(ctx, slog.LevelError, journal.MsgImage, fmt.Sprintf("inotify on /etc: %s", escape.Text(err.Error())))
	}
	t := p.sort(evs)
	if t.rewatch || t.lost {
		p.rewatch()
	}
	if t.settings && p.modeChanged(ctx) {
		if p.h.Active() {
			p.h.FullCheck(ctx, "the image's settings changed")
		}
		return
	}
	if !p.comparing() || !p.h.Active() || p.heldNow(ctx) {
		return
	}
	switch {
	case t.staged:
		// An OS update was staged (or unstaged): what its /etc merge
		// will undo is a full check's notices.
		p.h.FullCheck(ctx, "a deployment was staged")
	case p.rebased(ctx) || t.lost:
		p.compare(ctx, image.EtcDir, false)
	case t.record && p.recordChanged(ctx):
		p.compare(ctx, image.EtcDir, false)
	default:
		for _, q := range t.paths {
			p.compare(ctx, q, false)
		}
	}
}

// recordChanged reads the first boot's record again when it is another
// (an adopt --image since), and reports whether it was.
func (p *Part) recordChanged(ctx context.Context) bool {
	if image.RecordStamp(p.o.Root) == p.recordStamp {
		return false
	}
	p.classify(ctx)
	p.h.Record(ctx, slog.LevelInfo, journal.MsgImage, "The first boot's record of /etc changed ("+image.RecordPath+"): comparing /etc again")
	return true
}

// heldNow reports whether undeclared reports are held for a transaction
// under way, starting the hold when one just began.
func (p *Part) heldNow(ctx context.Context) bool {
	if p.held != "" {
		return true
	}
	t := image.Transaction(p.o.Root, p.base.Kind)
	if t == "" {
		return false
	}
	p.held = t
	p.holdStop = make(chan struct{})
	p.wg.Add(1)
	go p.lookAtLock(p.holdStop)
	p.h.Record(ctx, slog.LevelInfo, journal.MsgImage, fmt.Sprintf("Holding undeclared changes while %s runs", escape.Text(t)))
	return true
}

// lookAtLock asks the loop to look at the held transaction's lock every
// holdPoll until the hold ends.
func (p *Part) lookAtLock(stop <-chan struct{}) {
	defer p.wg.Done()
	t := time.NewTicker(holdPoll)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-p.stop:
			return
		case <-t.C:
			if p.h.Do(p.ctx, p.holdTick) != nil {
				return
			}
		}
	}
}

// holdTick: once the held transaction's lock is free, the baseline is
// read again and /etc compared whole.
func (p *Part) holdTick(ctx context.Context) {
	if p.held == "" || !p.comparing() || image.Transaction(p.o.Root, p.base.Kind) != "" {
		return
	}
	p.endHold()
	p.h.Record(ctx, slog.LevelInfo, journal.MsgImage, "The transaction ended: comparing /etc with the image again")
	if p.h.Active() {
		// A full check: the baseline read again, /etc compared whole,
		// and a deployment the transaction staged predicted.
		p.h.FullCheck(ctx, "the transaction ended")
	}
}

func (p *Part) endHold() {
	if p.holdStop != nil {
		close(p.holdStop)
		p.holdStop = nil
	}
	p.held = ""
}

// rebased reads the baseline again when its stamp changed, and reports
// whether it did.
func (p *Part) rebased(ctx context.Context) bool {
	if p.base.StampNow(p.o.Root) == p.base.Stamp {
		return false
	}
	b, err := image.Find(ctx, p.o.Root)
	if err != nil || !b.Available() {
		why := ""
		if err != nil {
			why = err.Error()
		} else {
			why = b.Unavailable
			b.Close()
		}
		p.h.Record(ctx, slog.LevelError, journal.MsgImage, "Reading the image's baseline again: "+escape.Text(why)+"; keeping the last one")
		return false
	}
	p.base.Close()
	p.base = b
	p.classify(ctx)
	p.h.Record(ctx, slog.LevelInfo, journal.MsgImage, fmt.Sprintf("The image's baseline changed: comparing /etc with %s again", escape.Text(b.Source)))
	return true
}

// compare compares what a change at host path q can have affected, and
// reports what that changed of the undeclared differences: as notices, or
// in drift mode through the tracker — except in a full check (full), whose
// drift the daemon replaces the tracker's with (FullCheck).
func (p *Part) compare(ctx context.Context, q string, full bool) {
	scope, cs, err := p.base.DiffAt(ctx, p.o.Root, q)
	if err != nil {
		p.h.Record(ctx, slog.LevelError, journal.MsgImage, fmt.Sprintf("Comparing %s with the image: %s", escape.Name(q), escape.Text(err.Error())))
		return
	}
	for x := range p.changes {
		if under(x, scope) {
			delete(p.changes, x)
		}
	}
	now := map[string]drift.Drift{}
	for i, d := range p.cl.Classify(ctx, cs) {
		p.changes[cs[i].Path] = cs[i]
		if d.Class != image.ClassUndeclared || d.Excluded {
			continue
		}
		dr := d.Drift(p.base.Source)
		now[dr.Path] = dr
	}
	var appeared, gone []drift.Drift
	for x, old := range p.reported {
		if !under(x, scope) {
			continue
		}
		if _, ok := now[x]; !ok {
			gone = append(gone, old)
			delete(p.reported, x)
		}
	}
	for x, dr := range now {
		old, ok := p.reported[x]
		if ok && old.Message == dr.Message {
			continue
		}
		if !ok {
			appeared = append(appeared, dr)
		}
		p.reported[x] = dr
		if p.mode == image.ModeDrift && !full {
			// The tracker keeps the latest details; only a new
			// appearance is reported.
			p.h.Report(ctx, dr.EntryID, []drift.Drift{dr})
		}
	}
	if len(appeared)+len(gone) == 0 {
		return
	}
	drift.Sort(appeared)
	drift.Sort(gone)
	if p.mode == image.ModeDrift {
		if !full {
			for _, dr := range gone {
				p.h.Report(ctx, dr.EntryID, nil)
			}
		}
		return
	}
	p.h.CountsChanged()
	for i := range appeared {
		p.h.RecordDrift(ctx, journal.LevelNotice, journal.MsgUndeclared, appeared[i].Message, &appeared[i])
	}
	for i := range gone {
		p.h.RecordDrift(ctx, slog.LevelInfo, journal.MsgUndeclaredGone, "No longer undeclared: "+gone[i].Message, &gone[i])
	}
}

// FullCheck compares the whole tree (part.Checker). In drift mode its
// drift is what is undeclared; while a transaction is held, what was known
// is kept. Its notices: the image's /etc not compared though asked, and,
// with a staged deployment, what its /etc merge will undo of the declared
// paths.
func (p *Part) FullCheck(ctx context.Context) (ds, notices []drift.Drift) {
	if p.h == nil {
		return nil, nil // not started
	}
	if !p.comparing() {
		if p.unavailable != "" {
			notices = append(notices, notCompared(p.unavailable))
		}
		return nil, notices
	}
	p.rewatch()
	if !p.heldNow(ctx) {
		if !p.rebased(ctx) && image.RecordStamp(p.o.Root) != p.recordStamp {
			p.classify(ctx)
		}
		p.compare(ctx, image.EtcDir, true)
		p.stagedStamp = image.StagedStamp(p.o.Root)
		notices = p.mergeLosses(ctx)
	}
	if p.mode == image.ModeDrift {
		for _, dr := range p.reported {
			ds = append(ds, dr)
		}
		drift.Sort(ds)
	}
	return ds, notices
}

// notCompared is the notice of an image's /etc that is not compared:
// never clean, said as any check says what it could not check.
func notCompared(why string) drift.Drift {
	return drift.Drift{Kind: drift.NotChecked, Entry: model.KindUndeclared, Path: image.EtcDir,
		EntryID: string(model.KindUndeclared) + ":" + image.EtcDir, Message: "the OS image's /etc is not compared: " + escape.Text(why)}
}

// mergeLosses are the merge-loss notices of the staged deployment, on an
// ostree host (image.Merge.Losses).
func (p *Part) mergeLosses(ctx context.Context) []drift.Drift {
	if p.base.Kind != image.KindOstree && p.base.Kind != image.KindTransientEtc {
		return nil
	}
	m, staged, err := image.StagedMerge(ctx, p.o.Root)
	if err != nil {
		p.h.Log().Warn("the staged deployment's /etc merge is not predicted: " + escape.Text(err.Error()))
		return nil
	}
	if m == nil {
		return nil
	}
	var out []drift.Drift
	for _, l := range m.Losses(ctx, p.entries) {
		out = append(out, l.Drift(staged))
	}
	return out
}

// Caveat is what the part adds to the status line: the undeclared changes
// counted (as notices), a held transaction, an image's /etc not compared,
// refused settings.
func (p *Part) Caveat() string {
	var cs []string
	if n := len(p.reported); n > 0 && p.mode == image.ModeNotice {
		cs = append(cs, plural(n, "undeclared change")+" to the image's /etc")
	}
	if p.held != "" {
		cs = append(cs, "undeclared changes held while "+p.held+" runs")
	}
	if p.unavailable != "" {
		cs = append(cs, "the image's /etc not compared (journalctl -u drift-monitor says why)")
	}
	if p.modeErr != "" {
		cs = append(cs, fmt.Sprintf("image settings refused, keeping mode %s", p.mode))
	}
	return strings.Join(cs, "; ")
}

// Count adds the undeclared notices to the metrics' counts by kind (in
// drift mode the tracker holds them, and they are counted as drift).
func (p *Part) Count(kinds map[drift.Kind]int) {
	if p.mode == image.ModeNotice {
		kinds[drift.Undeclared] += len(p.reported)
	}
}

// Kinds: what the image declares (model.KindUndeclared) while /etc is
// compared: the metrics export its row's series, 0 or not.
func (p *Part) Kinds() []model.Kind {
	if !p.comparing() {
		return nil
	}
	return []model.Kind{model.KindUndeclared}
}

// Explain adds to a declared file's drift record, after an OS update, that
// the update's /etc merge did it (image.ExplainDrift).
func (p *Part) Explain(c *check.Checker, o *ondisk.Observer, e *model.Entry, dr *drift.Drift) string {
	if !p.comparing() || p.base.Kind != image.KindOstree && p.base.Kind != image.KindTransientEtc || dr.Entry != model.KindFile {
		return ""
	}
	return image.ExplainDrift(c, o, e, dr)
}

// Polled lists the part's directories inotify could not watch.
func (p *Part) Polled() []string {
	if p.w == nil {
		return nil
	}
	return p.w.Polled()
}

// Poll tries to watch the polled directories again, then looks at what is
// in those still without a watch: the settings file, the record, the
// staged deployment, and the differences under each topmost polled
// directory of /etc.
func (p *Part) Poll(ctx context.Context) {
	polled := p.w.Polled()
	_ = p.w.Retry() // ErrExhausted while some still cannot be watched: they stay polled
	var evs []watch.Event
	var etc []string
	for _, dir := range polled {
		switch {
		case dir == settingsDir:
			evs = append(evs, watch.Event{Path: image.SettingsFile, Op: watch.Rewatched})
		case dir == recordDir:
			evs = append(evs, watch.Event{Path: image.RecordPath, Op: watch.Rewatched})
		}
		if under(dir, image.EtcDir) {
			etc = append(etc, dir)
		}
	}
	t := p.sort(evs)
	if t.settings && p.modeChanged(ctx) {
		p.h.FullCheck(ctx, "the image's settings changed")
		return
	}
	if !p.comparing() || p.heldNow(ctx) {
		return
	}
	if slices.Contains(polled, stagedDir) && image.StagedStamp(p.o.Root) != p.stagedStamp {
		p.h.FullCheck(ctx, "a deployment was staged")
		return
	}
	if p.rebased(ctx) {
		p.compare(ctx, image.EtcDir, false)
		return
	}
	if t.record && p.recordChanged(ctx) {
		p.compare(ctx, image.EtcDir, false)
		return
	}
	for _, dir := range topmost(etc) {
		p.compare(ctx, dir, false)
	}
}

// topmost leaves out the directories under another of dirs: comparing a
// directory compares what is under it.
func topmost(dirs []string) []string {
	slices.Sort(dirs)
	var out []string
	for _, d := range dirs {
		if n := len(out); n > 0 && (out[n-1] == "/" || strings.HasPrefix(d, out[n-1]+"/")) {
			continue
		}
		out = append(out, d)
	}
	return out
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
