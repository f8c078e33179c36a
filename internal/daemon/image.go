package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/drift-monitor/drift-monitor/internal/drift"
	"github.com/drift-monitor/drift-monitor/internal/escape"
	"github.com/drift-monitor/drift-monitor/internal/firstboot"
	"github.com/drift-monitor/drift-monitor/internal/image"
	"github.com/drift-monitor/drift-monitor/internal/journal"
	"github.com/drift-monitor/drift-monitor/internal/model"
	"github.com/drift-monitor/drift-monitor/internal/osstate"
	"github.com/drift-monitor/drift-monitor/internal/watch"
)

// The OS image as desired state (package image), in real time: the whole
// /etc tree is watched with an inotify instance of its own (every
// directory, those created later included; an overflow compares the whole
// tree again), each event compares what it can have affected with the
// image's baseline (image.Baseline.DiffAt), and each undeclared difference
// is reported once when it appears and once when it is gone — as a notice
// (MsgUndeclared, MsgUndeclaredGone; the host stays clean) or, with
// Options.Image "drift", as drift in the tracker. A full check compares
// the whole tree.
//
// A change of the baseline is a transition, not drift: the baseline is
// read again when its stamp changes (an rpm transaction rewrote the
// database, a confext was merged or refreshed), and while an rpm or ostree
// transaction holds its lock the undeclared reports are held, as an
// inhibitor holds drift, then everything is compared at its end.
//
// It is a part: the daemon calls it from start, load, the loop, the full
// check, the status line and the metrics, each through one method of
// *Daemon here that does nothing when the part is off (d.img nil).

// Image modes (Options.Image).
const (
	ImageNotice = "notice"
	ImageDrift  = "drift"
	ImageOff    = "off"
)

// imageHoldPoll paces the look at a transaction's lock while one is held:
// nothing says when it is released (an unlock makes no inotify event).
const imageHoldPoll = time.Second

// imagePart is the state of the comparison with the image.
type imagePart struct {
	drift bool // Options.Image is "drift"
	base  *image.Baseline
	cl    *image.Classifier
	// exclude leaves out what the daemon's exclusions cover.
	exclude func(*drift.Drift) bool
	w       *watch.Watcher
	events  chan readResult
	// changes are the differences from the baseline, by path; reported
	// the undeclared ones reported (not excluded), by path.
	changes  map[string]image.Change
	reported map[string]drift.Drift
	// held names the transaction undeclared reports are held for ("":
	// none); hold ticks while it is.
	held string
	hold *time.Ticker
	// unwatched counts the directories of /etc inotify could not watch.
	unwatched int
}

// startImage finds the baseline and starts watching /etc. It runs before
// the first full check, which compares the whole tree.
func (d *Daemon) startImage(ctx context.Context, s *sources) {
	if d.o.Image == ImageOff {
		return
	}
	b, err := image.Find(ctx, d.root)
	if err != nil {
		d.record(ctx, slog.LevelError, journal.MsgImage, fmt.Sprintf("The OS image's /etc is not compared: %s", escape.Text(err.Error())))
		return
	}
	if !b.Available() {
		if b.Kind != image.KindNone {
			d.record(ctx, slog.LevelWarn, journal.MsgImage, "The OS image's /etc is not compared: "+escape.Text(b.Unavailable))
		}
		b.Close()
		return
	}
	w, err := watch.New(d.root)
	if err != nil {
		d.record(ctx, slog.LevelError, journal.MsgImage, fmt.Sprintf("The OS image's /etc is not compared: inotify: %v", err))
		b.Close()
		return
	}
	img := &imagePart{drift: d.o.Image == ImageDrift, base: b, w: w, events: make(chan readResult, 16),
		changes: map[string]image.Change{}, reported: map[string]drift.Drift{}}
	d.img = img
	img.classify(d, d.ix.entries)
	s.stops = append(s.stops, func() { w.Close(); b.Close() })
	d.watchEtc(ctx)
	go readFrom(w, img.events, d.done)
	d.record(ctx, slog.LevelInfo, journal.MsgImage, fmt.Sprintf("Comparing /etc with %s", escape.Text(b.Source)))
	if u := b.Extensions.Unknown(); u != "" {
		d.record(ctx, slog.LevelWarn, journal.MsgImage, escape.Text(u))
	}
}

// classify makes the classifier of the state in force (its declared
// paths), with the first boot's record and the merged confexts.
func (img *imagePart) classify(d *Daemon, entries []model.Entry) {
	cl := image.NewClassifier(entries)
	cl.Extensions = img.base.Extensions
	key := d.o.FirstBoot.Key
	cl.Recorder = &image.Recorder{Root: d.root, Key: key, KeyID: firstboot.KeyID(key)}
	rec, err := image.LoadRecord(d.root, image.RecordPath)
	if err != nil {
		d.log.Warn("the first boot's record of /etc is not used: " + escape.Text(err.Error()))
	}
	cl.Record = rec
	img.cl = cl
	// The rules in force at each report, not at start: they are read
	// with the desired state, after this.
	img.exclude = func(dr *drift.Drift) bool { return d.checker.Exclude != nil && d.checker.Exclude(dr) }
}

// imageLoaded takes a new desired state: what is declared changed. The
// full check that follows every load classes the differences anew.
func (d *Daemon) imageLoaded() {
	if d.img != nil {
		d.img.classify(d, d.ix.entries)
	}
}

// eventsC and holdC are the part's channels for the loop; nil (never
// ready) when it is off or holds nothing.
func (img *imagePart) eventsC() <-chan readResult {
	if img == nil {
		return nil
	}
	return img.events
}

func (img *imagePart) holdC() <-chan time.Time {
	if img == nil || img.hold == nil {
		return nil
	}
	return img.hold.C
}

// stagedDir holds the file that names a staged deployment
// (osstate.StagedFile): a new one is an OS update on its way, whose /etc
// merge a full check predicts.
const stagedDir = "/run/ostree"

// watchEtc watches every directory of /etc, as it is now, and on ostree
// hosts the staged deployment's directory (from its nearest existing
// ancestor while it does not exist).
func (d *Daemon) watchEtc(ctx context.Context) {
	dirs, err := image.Dirs(d.root, image.EtcDir)
	if err != nil {
		d.record(ctx, slog.LevelError, journal.MsgImage, fmt.Sprintf("Listing %s to watch it: %v", image.EtcDir, err))
	}
	if d.img.base.Kind == image.KindOstree {
		dirs = append(dirs, stagedDir)
	}
	err = d.img.w.Watch(dirs)
	n := len(d.img.w.Polled())
	if errors.Is(err, watch.ErrExhausted) && n != d.img.unwatched {
		d.record(ctx, slog.LevelWarn, journal.MsgImage,
			fmt.Sprintf("%d directories of /etc cannot be watched (%v): undeclared changes there are found by full checks only", n, err))
	}
	d.img.unwatched = n
}

// imageEvents compares what a batch of events under /etc can have
// changed. While inhibited, events are dropped: the release's full check
// compares everything.
func (d *Daemon) imageEvents(ctx context.Context, r readResult, active bool) {
	if r.err != nil && !errors.Is(r.err, watch.ErrExhausted) {
		d.record(ctx, slog.LevelError, journal.MsgImage, fmt.Sprintf("inotify on /etc: %v", r.err))
	}
	if !active || d.imageHeld(ctx) {
		return
	}
	rewatch, overflow, staged := false, false, false
	var paths []string
	seen := map[string]bool{}
	for _, ev := range r.evs {
		switch {
		case ev.Op&watch.Overflow != 0:
			overflow = true
		case ev.Op == watch.Modify:
			// Written, not yet closed: its close (or the next full
			// check) compares it, never a half-written file.
		case ev.Path == osstate.StagedFile || ev.Path == stagedDir && ev.Op&watch.Rewatched != 0:
			staged = true
		case ev.Path == image.EtcDir || strings.HasPrefix(ev.Path, image.EtcDir+"/"):
			if ev.IsDir && ev.Op&(watch.Create|watch.MovedTo) != 0 || ev.Op&watch.Rewatched != 0 {
				rewatch = true
			}
			if d.img.cl.Declares(ev.Path) && ev.Op&watch.Rewatched == 0 {
				// Its own entry's event: what the image says of it is
				// classed declared anyway, and the declared drift's
				// report must not wait for a comparison that says
				// nothing.
				continue
			}
			if !seen[ev.Path] {
				seen[ev.Path] = true
				paths = append(paths, ev.Path)
			}
		}
	}
	if rewatch || overflow {
		d.watchEtc(ctx)
	}
	if staged {
		// An OS update was staged (or unstaged): what its /etc merge
		// will undo is a full check's notices.
		d.fullCheck(ctx, "a deployment was staged")
		return
	}
	if d.imageRebased(ctx) || overflow {
		d.imageCompare(ctx, image.EtcDir)
		return
	}
	for _, p := range paths {
		d.imageCompare(ctx, p)
	}
}

// imageHeld reports whether undeclared reports are held for a transaction
// under way, starting the hold when one just began.
func (d *Daemon) imageHeld(ctx context.Context) bool {
	img := d.img
	if img.held != "" {
		return true
	}
	t := image.Transaction(d.root, img.base.Kind)
	if t == "" {
		return false
	}
	img.held = t
	img.hold = time.NewTicker(imageHoldPoll)
	d.record(ctx, slog.LevelInfo, journal.MsgImage, fmt.Sprintf("Holding undeclared changes while %s runs", escape.Text(t)))
	return true
}

// imageHoldTick looks at the held transaction's lock: once it is free, the
// baseline is read again and /etc compared whole.
func (d *Daemon) imageHoldTick(ctx context.Context, active bool) {
	img := d.img
	if image.Transaction(d.root, img.base.Kind) != "" {
		return
	}
	img.hold.Stop()
	img.hold, img.held = nil, ""
	d.record(ctx, slog.LevelInfo, journal.MsgImage, "The transaction ended: comparing /etc with the image again")
	if active {
		// A full check: the baseline read again, /etc compared whole,
		// and a deployment the transaction staged predicted.
		d.fullCheck(ctx, "the transaction ended")
	}
}

// imageRebased reads the baseline again when its stamp changed, and
// reports whether it did.
func (d *Daemon) imageRebased(ctx context.Context) bool {
	img := d.img
	if img.base.StampNow(d.root) == img.base.Stamp {
		return false
	}
	b, err := image.Find(ctx, d.root)
	if err != nil || !b.Available() {
		why := "no baseline"
		if err != nil {
			why = err.Error()
		} else {
			why = b.Unavailable
			b.Close()
		}
		d.record(ctx, slog.LevelError, journal.MsgImage, "Reading the image's baseline again: "+escape.Text(why)+"; keeping the last one")
		return false
	}
	img.base.Close()
	img.base = b
	img.classify(d, d.ix.entries)
	d.record(ctx, slog.LevelInfo, journal.MsgImage, fmt.Sprintf("The image's baseline changed: comparing /etc with %s again", escape.Text(b.Source)))
	return true
}

// imageCompare compares what a change at host path p can have affected,
// and reports what that changed of the undeclared differences.
func (d *Daemon) imageCompare(ctx context.Context, p string) {
	img := d.img
	scope, cs, err := img.base.DiffAt(ctx, d.root, p)
	if err != nil {
		d.record(ctx, slog.LevelError, journal.MsgImage, fmt.Sprintf("Comparing %s with the image: %s", escape.Name(p), escape.Text(err.Error())))
		return
	}
	under := func(q string) bool { return q == scope || strings.HasPrefix(q, scope+"/") || scope == "/" }
	for q := range img.changes {
		if under(q) {
			delete(img.changes, q)
		}
	}
	now := map[string]drift.Drift{}
	for i, diff := range img.cl.Classify(ctx, cs) {
		img.changes[cs[i].Path] = cs[i]
		if diff.Class != image.ClassUndeclared {
			continue
		}
		dr := diff.Drift(img.base.Source)
		if img.exclude != nil && img.exclude(&dr) {
			continue
		}
		now[dr.Path] = dr
	}
	var appeared, gone []drift.Drift
	for q, old := range img.reported {
		if !under(q) {
			continue
		}
		if _, ok := now[q]; !ok {
			gone = append(gone, old)
			delete(img.reported, q)
		}
	}
	for q, dr := range now {
		if old, ok := img.reported[q]; !ok || old.Message != dr.Message {
			if !ok {
				appeared = append(appeared, dr)
			}
			img.reported[q] = dr
			if img.drift {
				// The tracker keeps the latest details; only a new
				// appearance is reported.
				a, r := d.track.update(dr.EntryID, []drift.Drift{dr})
				d.report(ctx, a, r)
			}
		}
	}
	if len(appeared)+len(gone) == 0 {
		return
	}
	drift.Sort(appeared)
	drift.Sort(gone)
	if img.drift {
		for _, dr := range gone {
			a, r := d.track.update(dr.EntryID, nil)
			d.report(ctx, a, r)
		}
		return
	}
	d.noticeGen++ // the metrics count them
	for i := range appeared {
		d.record(ctx, journal.LevelNotice, journal.MsgUndeclared, appeared[i].Message, driftAttrs(&appeared[i])...)
	}
	for i := range gone {
		d.record(ctx, slog.LevelInfo, journal.MsgUndeclaredGone, "No longer undeclared: "+gone[i].Message, driftAttrs(&gone[i])...)
	}
}

// imageFull compares the whole tree, for a full check; in drift mode it
// adds the undeclared changes to now, the full check's drift, so that
// replacing the tracker's set keeps them. While a transaction is held,
// what was known is kept. With a staged deployment, what its /etc merge
// will undo of the declared paths joins the full check's notices.
func (d *Daemon) imageFull(ctx context.Context, now map[string][]drift.Drift, notices *[]drift.Drift) {
	img := d.img
	if img == nil {
		return
	}
	if !d.imageHeld(ctx) {
		d.imageRebased(ctx)
		d.imageCompare(ctx, image.EtcDir)
		*notices = append(*notices, d.mergeLosses(ctx)...)
	}
	if img.drift {
		for _, dr := range img.reported {
			now[dr.EntryID] = []drift.Drift{dr}
		}
	}
}

// imageStatus is what the status line says of the part: the undeclared
// changes counted (as notices), and a held transaction.
func (d *Daemon) imageStatus() (undeclared int, held string) {
	if d.img == nil {
		return 0, ""
	}
	if !d.img.drift {
		undeclared = len(d.img.reported)
	}
	return undeclared, d.img.held
}

// imageCount adds the undeclared notices to the metrics' counts by kind
// (in drift mode the tracker holds them, and they are counted as drift).
func (d *Daemon) imageCount(kinds map[drift.Kind]int) {
	if d.img != nil && !d.img.drift {
		kinds[drift.Undeclared] += len(d.img.reported)
	}
}

// imageDeclares is declared, the kinds of entry the desired state
// declares, with what the image declares (model.KindUndeclared) while the
// part compares /etc: the metrics export its row's series, 0 or not.
func (d *Daemon) imageDeclares(declared []model.Kind) []model.Kind {
	if d.img == nil {
		return declared
	}
	return append(slices.Clip(declared), model.KindUndeclared)
}

// mergeLosses are the merge-loss notices of the staged deployment, on an
// ostree host (image.Merge.Losses).
func (d *Daemon) mergeLosses(ctx context.Context) []drift.Drift {
	if d.img.base.Kind != image.KindOstree {
		return nil
	}
	m, staged, err := image.StagedMerge(ctx, d.root)
	if err != nil {
		d.log.Warn("the staged deployment's /etc merge is not predicted: " + escape.Text(err.Error()))
		return nil
	}
	if m == nil {
		return nil
	}
	var out []drift.Drift
	for _, l := range m.Losses(ctx, d.ix.entries) {
		out = append(out, l.Drift(staged))
	}
	return out
}

// imageExplain adds to a declared file's drift record, after an OS update,
// that the update's /etc merge did it (image.ExplainDrift).
func (d *Daemon) imageExplain(dr *drift.Drift) {
	if d.img == nil || d.img.base.Kind != image.KindOstree || dr.Entry != model.KindFile {
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
	if why := image.ExplainDrift(d.checker, d.obs, e, dr); why != "" {
		dr.Message += " (" + why + ")"
	}
}
