// Package daemon is the long-running monitor: it loads the desired state,
// watches the directories that hold declared paths, re-checks exactly the
// entries an event can affect, and reports each drift once when it appears
// and once when it is resolved — to journald, to systemd's status line and to
// whoever asks.
//
// One goroutine, the event loop, owns all state; inotify, fsnotify, D-Bus
// signals, timers, signals and the background reader of large files only
// send it messages. The watchdog is fed only when that loop answers, so a
// stuck loop gets the service restarted; and nothing the loop does reads
// more than inlineReadLimit of one file, so no file can stall it.
//
// It promises: a file being written is checked when its writer closes it (or
// renames it into place), never in between; a write that never completes is
// checked after Settle of quiet; a desired state that fails to load never
// replaces the last good one. It does not promise to notice changes while an
// inotify watch could not be placed faster than PollInterval.
package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path"
	"time"

	"github.com/drift-monitor/drift-monitor/internal/buslink"
	"github.com/drift-monitor/drift-monitor/internal/check"
	"github.com/drift-monitor/drift-monitor/internal/dbusapi"
	"github.com/drift-monitor/drift-monitor/internal/desired"
	"github.com/drift-monitor/drift-monitor/internal/drift"
	"github.com/drift-monitor/drift-monitor/internal/enablement"
	"github.com/drift-monitor/drift-monitor/internal/escape"
	"github.com/drift-monitor/drift-monitor/internal/inhibit"
	"github.com/drift-monitor/drift-monitor/internal/journal"
	"github.com/drift-monitor/drift-monitor/internal/ondisk"
	"github.com/drift-monitor/drift-monitor/internal/watch"
)

// Notifier speaks sd_notify.
type Notifier interface {
	Ready(status string) error
	Status(status string) error
	Reloading() error
	Stopping() error
	Watchdog() error
	WatchdogInterval() (time.Duration, bool)
}

// Units answers for unit enablement and says when unit files changed.
type Units interface {
	// UnitFileState fails with an error wrapping buslink.ErrUnavailable
	// while systemd cannot be asked: the state is then unknown (see
	// check.UnitStates).
	UnitFileState(unit string) (string, error)
	// Events delivers what happened to the connection to systemd: lost,
	// back (Missed: a change may have gone unseen), and unit files that may
	// have changed (Changed: enable, disable, mask, daemon-reload); nil
	// when not observable.
	Events() <-chan buslink.Event
}

// Starter starts a systemd unit (the on-drift hook).
type Starter interface {
	StartUnit(ctx context.Context, name string) error
}

// Options configure the daemon.
type Options struct {
	Root    string
	Configs []string
	// Cache keeps derived states across loads and runs; nil parses every
	// time.
	Cache *desired.StateCache
	// Interval between periodic full checks (the safety net); 0 disables.
	Interval time.Duration
	// Settle is how long a file that is being written (modified, not yet
	// closed) must stay quiet before it is checked anyway.
	Settle time.Duration
	// PollInterval paces the polling of directories that could not be
	// watched because the inotify limit was reached.
	PollInterval time.Duration
	// Exclude lists patterns (path.Match, or a directory prefix) of declared
	// paths the daemon neither watches nor reports; ExcludeFile names a file
	// (relative to Root) with more, one per line.
	Exclude     []string
	ExcludeFile string
	// InhibitDir is where inhibitor lock files are followed ("" disables).
	InhibitDir string
	// OnDrift names a unit to start when drift appears.
	OnDrift string
	Version string
	// DigestKey keys the digests of content that must not be shown (see
	// drift.Key); the zero Key leaves them out.
	DigestKey drift.Key

	Log    *slog.Logger
	Notify Notifier
	Units  Units   // nil: enablement computed offline from the unit files
	Hook   Starter // required when OnDrift is set
}

// Daemon is a running monitor; see Run.
type Daemon struct {
	o       Options
	log     *slog.Logger
	gc      *gcTuner
	root    *ondisk.Root
	checker *check.Checker
	obs     *ondisk.Observer
	w       *watch.Watcher
	ix      *index
	files   []string // config files of the current state
	track   *tracker
	reads   *contentReads // content too large to compare on the loop

	pending    map[string]*time.Timer // paths with a write in progress
	settled    chan string
	loadFailed string
	exhausted  bool
	lastStatus string
	ready      bool
	done       chan struct{}

	cfg        *configWatch
	inhibitors []inhibit.Inhibitor
	requests   chan func(context.Context) // calls from the bus, run by the loop
	pub        Publisher
	lastCheck  time.Time
	// Which bus connections are down: systemd's (enablement is not
	// checked meanwhile) and the API's (drift-monitor status cannot
	// answer).
	unitsDown, apiDown bool
	apiRefused         bool // the bus refused the API its name (said once)
	// busHead is the first of the drift as the bus shows it, for the
	// tracker's generation busGen: most events change nothing of it.
	busHead []dbusapi.Drift
	busGen  uint64
}

// New prepares a daemon; Run starts it. Close releases what New opened
// (Run does not).
func New(o Options) (*Daemon, error) {
	if o.Root == "" {
		o.Root = "/"
	}
	if o.Settle <= 0 {
		o.Settle = 3 * time.Second
	}
	if o.PollInterval <= 0 {
		o.PollInterval = 10 * time.Second
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	root, err := ondisk.OpenRoot(o.Root)
	if err != nil {
		return nil, err
	}
	w, err := watch.New(root)
	if err != nil {
		root.Close()
		return nil, err
	}
	d := &Daemon{
		o: o, log: o.Log, gc: newGCTuner(), root: root, w: w, obs: ondisk.NewObserver(root),
		track: newTracker(), pending: map[string]*time.Timer{}, settled: make(chan string, 64),
		done: make(chan struct{}), ix: newIndex(nil), requests: make(chan func(context.Context)),
	}
	d.checker = &check.Checker{Root: root, ReadLimit: inlineReadLimit, Key: o.DigestKey}
	d.obs.ReadLimit = inlineReadLimit
	d.reads = newContentReads(d.checker)
	if o.Units != nil {
		d.checker.Units = o.Units
	} else {
		d.checker.Units = enablement.Offline{Root: o.Root}
	}
	if root.IsHost() {
		d.checker.Cmdline = check.ProcCmdline
		d.checker.NextBoot = check.BootLoaderEntries(check.BootEntriesDir)
	}
	return d, nil
}

// Close releases the daemon's root, watches and descriptors.
func (d *Daemon) Close() {
	d.gc.close()
	d.obs.Close()
	d.w.Close()
	d.root.Close()
}

// SetPublisher makes the daemon publish its state (the D-Bus API). Call it
// before Run.
func (d *Daemon) SetPublisher(p Publisher) { d.pub = p }

// Publisher receives the daemon's state after every change. Update must
// not block.
type Publisher interface {
	Update(dbusapi.Snapshot)
	// Events says when the publisher is off the bus and back; nil when not
	// observable.
	Events() <-chan buslink.Event
}

// Run runs a daemon until ctx ends; reload delivers SIGHUP-style reload
// requests.
func Run(ctx context.Context, o Options, reload <-chan struct{}) error {
	d, err := New(o)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Run(ctx, reload)
}

type readResult struct {
	evs []watch.Event
	err error
}

// Run runs the event loop until ctx ends.
func (d *Daemon) Run(ctx context.Context, reload <-chan struct{}) error {
	defer close(d.done)
	d.record(ctx, slog.LevelInfo, journal.MsgStarted, fmt.Sprintf("Starting drift-monitor %s", d.o.Version))
	var inhibChanges <-chan []inhibit.Inhibitor
	if d.o.InhibitDir != "" {
		m, err := inhibit.Watch(d.o.InhibitDir)
		if err != nil {
			d.record(ctx, slog.LevelError, journal.MsgCheckFailed, fmt.Sprintf("cannot follow inhibitors in %s: %v", d.o.InhibitDir, err))
		} else {
			defer m.Close()
			inhibChanges = m.Changes()
			d.setInhibitors(ctx, m.Held())
		}
	}
	if err := d.load(ctx); err != nil {
		d.loadFailed = err.Error()
	}
	// Until the first check is done, the status line and the bus say so:
	// no drift known is not no drift.
	d.setStatus(d.status())
	d.publish()

	events := make(chan readResult, 16)
	go func() {
		buf := make([]byte, watch.ReadBufferSize)
		for {
			evs, err := d.w.Read(buf)
			if errors.Is(err, os.ErrClosed) {
				return
			}
			select {
			case events <- readResult{evs, err}:
			case <-d.done:
				return
			}
		}
	}()
	cfg, err := newConfigWatch(d.root, d.o.Configs, d.o.ExcludeFile)
	d.cfg = cfg
	// Before the first check, which may defer reads: a large file is
	// read while the daemon is already ready and watching.
	d.reads.start(ctx)
	if err != nil {
		d.record(ctx, slog.LevelWarn, journal.MsgLoadFailed, fmt.Sprintf("cannot watch the desired-state locations (reload with SIGHUP): %v", err))
	}
	defer cfg.Close()

	if !d.inhibited() {
		// While inhibited (inhibitors survive restarts), the first check
		// waits for the release: a half-applied transition is not drift.
		d.fullCheck(ctx, "first check")
	}
	d.ready = true
	if d.o.Notify != nil {
		d.o.Notify.Ready(d.status())
	}
	d.record(ctx, slog.LevelInfo, journal.MsgReady, fmt.Sprintf("Started: %s", d.status()))
	d.publish()

	var periodic <-chan time.Time
	if d.o.Interval > 0 {
		t := time.NewTicker(d.o.Interval)
		defer t.Stop()
		periodic = t.C
	}
	pings := d.startWatchdog(ctx)
	var unitsEvents, apiEvents <-chan buslink.Event
	if d.o.Units != nil {
		unitsEvents = d.o.Units.Events()
	}
	if d.pub != nil {
		apiEvents = d.pub.Events()
	}
	var poll *time.Ticker
	pollC := func() <-chan time.Time {
		if poll == nil {
			return nil
		}
		return poll.C
	}
	defer func() {
		if poll != nil {
			poll.Stop()
		}
	}()

	for {
		// After the first check, then after each message handled: what the
		// work freed goes back to the kernel once the loop is quiet.
		d.gc.active()
		if n := len(d.w.Polled()); n > 0 && poll == nil {
			poll = time.NewTicker(d.o.PollInterval)
		} else if n == 0 && poll != nil {
			poll.Stop()
			poll = nil
		}
		if d.exhausted && len(d.w.Polled()) == 0 {
			// Every wanted directory has a watch again, whether a poll's
			// retry placed it or a reload or a vanished directory freed
			// watches: say so, so that running out again is said again.
			d.exhausted = false
			d.cfg.Rewatch()
			d.record(ctx, slog.LevelInfo, journal.MsgWatchesRestored, "Every directory is watched again: polling stopped")
		}
		active := !d.inhibited()
		select {
		case <-ctx.Done():
			if d.o.Notify != nil {
				d.o.Notify.Stopping()
			}
			d.record(context.Background(), slog.LevelInfo, journal.MsgStopping, "Stopping drift-monitor")
			return nil
		case r := <-events:
			// While inhibited, events are dropped: the release re-reads the
			// desired state and checks everything.
			if active {
				d.handle(ctx, r.evs)
			}
			if r.err != nil {
				d.watchError(ctx, r.err)
			}
		case p := <-d.settled:
			if active {
				d.settle(ctx, p)
			}
		case held := <-inhibChanges:
			d.setInhibitors(ctx, held)
		case <-cfg.Changed():
			if active {
				d.reload(ctx, "the desired-state files changed")
			}
			cfg.Rewatch()
		case _, ok := <-reload:
			if !ok {
				reload = nil
				continue
			}
			if active {
				d.reload(ctx, "reload requested")
			} else if d.o.Notify != nil {
				// Nothing to do until the release, which reloads anyway.
				d.o.Notify.Reloading()
				d.o.Notify.Ready(d.status())
			}
			cfg.Rewatch()
		case ev := <-unitsEvents:
			d.unitsEvent(ctx, ev, active)
		case ev := <-apiEvents:
			d.apiEvent(ctx, ev)
		case <-periodic:
			if active {
				d.fullCheck(ctx, "periodic check")
			}
		case <-pollC():
			if active {
				d.pollUnwatched(ctx)
			}
		case r := <-d.reads.done:
			d.contentRead(ctx, r)
		case req := <-d.requests:
			req(ctx)
		case reply := <-pings:
			close(reply)
		}
		d.updateStatus()
		d.publish()
	}
}

// load reads the desired state and makes it current; on failure the last good
// state stays.
func (d *Daemon) load(ctx context.Context) error {
	d.gc.loading()
	defer func() {
		if limit := d.gc.loaded(); limit > 0 {
			d.log.Debug(fmt.Sprintf("state loaded; garbage collection now at a %d MiB memory limit", limit>>20))
		}
	}()
	st, err := d.o.Cache.LoadState(d.root, d.o.Configs)
	if err != nil {
		d.record(ctx, slog.LevelError, journal.MsgLoadFailed,
			fmt.Sprintf("Refusing the desired state, keeping the last good one: %v", err),
			slog.String("CONFIG_ERROR", err.Error()))
		return err
	}
	for _, w := range st.Warnings {
		d.log.Warn("config warning: " + w)
	}
	excl, err := d.exclusions()
	if err != nil {
		d.record(ctx, slog.LevelError, journal.MsgLoadFailed, fmt.Sprintf("Refusing the exclusions, keeping the last good state: %v", err))
		return err
	}
	kept := st.Entries[:0]
	for _, e := range st.Entries {
		if !excl.match(e.Path) {
			kept = append(kept, e)
		}
	}
	d.ix = newIndex(kept)
	d.reads.reset() // their entries' indices and contents are the old state's
	d.checker.Declared = ondisk.Declare(d.ix.entries)
	d.files = st.Files
	d.loadFailed = ""
	for p, t := range d.pending {
		t.Stop()
		delete(d.pending, p)
	}
	if err := d.w.Watch(d.ix.dirs); err != nil {
		d.watchError(ctx, err)
	}
	return nil
}

func (d *Daemon) reload(ctx context.Context, why string) {
	if d.o.Notify != nil {
		d.o.Notify.Reloading()
	}
	if err := d.load(ctx); err != nil {
		d.loadFailed = err.Error()
	} else {
		d.fullCheck(ctx, "reload")
		d.record(ctx, slog.LevelInfo, journal.MsgReloaded,
			fmt.Sprintf("Reloaded the desired state (%s): %d entries from %d config files", why, len(d.ix.entries), len(d.files)))
	}
	if d.o.Notify != nil {
		d.o.Notify.Ready(d.status())
	}
}

// handle maps a batch of events to the entries they can affect and checks
// each of those once.
func (d *Daemon) handle(ctx context.Context, evs []watch.Event) {
	toCheck := map[int]bool{}
	for _, ev := range evs {
		if ev.Op&watch.Overflow != 0 {
			d.record(ctx, slog.LevelWarn, journal.MsgQueueOverflow, "inotify queue overflowed: running a full check")
			d.fullCheck(ctx, "inotify queue overflow")
			return
		}
		dirEvent := ev.IsDir || ev.Op&watch.Rewatched != 0
		d.ix.affected(ev.Path, dirEvent, func(i int) {
			e := &d.ix.entries[i]
			if e.Path == ev.Path && !ev.IsDir && e.Type == desired.TypeRegular {
				if !d.completes(e.Path, ev.Op) {
					return
				}
			}
			toCheck[i] = true
		})
		if _, offline := d.checker.Units.(enablement.Offline); offline && len(d.ix.enablement) > 0 && under(ev.Path, "/etc/systemd/system") {
			for _, i := range d.ix.enablement {
				toCheck[i] = true
			}
		}
	}
	for i := range toCheck {
		d.checkEntry(ctx, i)
	}
}

// completes decides whether an event on a declared regular file is a moment
// to check it: yes when a write completed (close after write, a rename into
// place) or the file went away; not while a writer may still be going (it
// was created, truncated or written to and not yet closed) — that is what a
// shell redirection, cp or a slow writer look like half-way.
func (d *Daemon) completes(p string, op watch.Op) bool {
	switch {
	case op&(watch.Write|watch.MovedTo|watch.Remove) != 0:
		d.clearPending(p)
		return true
	case op&watch.Modify != 0:
		d.armPending(p)
		return false
	case op&watch.Create != 0:
		// A new regular file may still be being written; a symlink, a
		// directory or a device is complete the moment it appears.
		d.obs.Forget()
		if d.obs.TypeOf(p) != ondisk.Regular {
			return true
		}
		d.armPending(p)
		return false
	}
	// Attributes changed: check now unless a write is still in progress.
	_, writing := d.pending[p]
	return !writing
}

func (d *Daemon) armPending(p string) {
	if t, ok := d.pending[p]; ok {
		t.Reset(d.o.Settle)
		return
	}
	d.pending[p] = time.AfterFunc(d.o.Settle, func() {
		select {
		case d.settled <- p:
		case <-d.done:
		}
	})
}

func (d *Daemon) clearPending(p string) {
	if t, ok := d.pending[p]; ok {
		t.Stop()
		delete(d.pending, p)
	}
}

// settle checks a file whose writer went quiet without closing it: content
// that stays wrong is reported even if the file is never closed.
func (d *Daemon) settle(ctx context.Context, p string) {
	if _, ok := d.pending[p]; !ok {
		return // completed meanwhile
	}
	delete(d.pending, p)
	var is []int
	d.ix.affected(p, false, func(i int) { is = append(is, i) })
	d.checkEntries(ctx, is)
}

func (d *Daemon) checkEntries(ctx context.Context, is []int) {
	for _, i := range is {
		d.checkEntry(ctx, i)
	}
}

func (d *Daemon) checkEntry(ctx context.Context, i int) { d.checkEntryWith(ctx, i, nil) }

// checkEntryWith checks entry i, taking its content comparison from read
// (a background read's result) when that read is of the file as it is now.
// An entry whose state cannot be determined now (systemd is off the bus)
// keeps what was known of it: a bus error is not drift.
func (d *Daemon) checkEntryWith(ctx context.Context, i int, read *check.ContentRead) {
	e := &d.ix.entries[i]
	out := d.checker.Outcome(d.obs, e, read)
	if out.Unknown {
		return
	}
	appeared, resolved := d.track.update(e.ID(), d.deferred(i, out.Drift, out))
	d.report(ctx, appeared, resolved)
}

// fullCheck checks every entry. Paths with a write in progress keep what was
// known of them: their half-written content is not a drift; so do entries
// whose state could not be determined (systemd off the bus). A content too
// large to be read on the loop is read in the background (contentReads), as
// after an event: the full check takes a bounded time however large the
// files are.
func (d *Daemon) fullCheck(ctx context.Context, why string) {
	res := d.checker.All(ctx, d.ix.entries)
	d.lastCheck = time.Now()
	now := map[string][]drift.Drift{}
	for _, dr := range res.Drift {
		now[dr.EntryID] = append(now[dr.EntryID], dr)
	}
	reading := map[string]bool{}
	for _, df := range res.Deferred {
		id := d.ix.entries[df.Index].ID()
		reading[id] = true
		if ds := d.deferred(df.Index, now[id], check.Outcome{Deferred: true, Stamp: df.Stamp}); len(ds) > 0 {
			now[id] = ds
		}
	}
	d.reads.keepOnly(reading)
	keep := func(id string) {
		if old, ok := d.track.byEntry[id]; ok {
			now[id] = old
		} else {
			delete(now, id)
		}
	}
	for p := range d.pending {
		d.ix.affected(p, false, func(i int) { keep(d.ix.entries[i].ID()) })
	}
	for _, id := range res.Unknown {
		keep(id)
	}
	appeared, resolved := d.track.replace(now)
	d.report(ctx, appeared, resolved)
	d.log.Debug(fmt.Sprintf("full check (%s): %d entries, %d differences", why, res.Checked, len(res.Drift)))
}

// report writes one record per drift that appeared or was resolved, and
// starts the on-drift hook.
func (d *Daemon) report(ctx context.Context, appeared, resolved []drift.Drift) {
	for i := range appeared {
		dr := &appeared[i]
		msg := dr.Message
		if dr.Diff != "" {
			msg += " (-want +got):\n" + dr.Diff
		}
		d.record(ctx, slog.LevelWarn, journal.MsgDriftDetected, msg, driftAttrs(dr)...)
	}
	for i := range resolved {
		dr := &resolved[i]
		d.record(ctx, journal.LevelNotice, journal.MsgDriftResolved, "Resolved: "+dr.Message, driftAttrs(dr)...)
	}
	if len(appeared) > 0 && d.o.OnDrift != "" && d.o.Hook != nil {
		d.startHook(ctx)
	}
}

func (d *Daemon) startHook(ctx context.Context) {
	unit := d.o.OnDrift
	go func() {
		hctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		if err := d.o.Hook.StartUnit(hctx, unit); err != nil {
			d.record(ctx, slog.LevelError, journal.MsgHookFailed, fmt.Sprintf("Starting the on-drift unit %s failed: %v", escape.Name(unit), err),
				slog.String("DRIFT_UNIT", unit))
		}
	}()
}

func driftAttrs(dr *drift.Drift) []slog.Attr {
	a := []slog.Attr{
		slog.String("DRIFT_KIND", string(dr.Kind)),
		slog.String("DRIFT_ENTRY", string(dr.Entry)),
		slog.String("DRIFT_PATH", escape.Name(dr.Path)),
	}
	if dr.Unit != "" {
		a = append(a, slog.String("DRIFT_UNIT", escape.Name(dr.Unit)))
	}
	if dr.Want != "" {
		a = append(a, slog.String("DRIFT_WANT", escape.Name(dr.Want)))
	}
	if dr.Got != "" {
		a = append(a, slog.String("DRIFT_GOT", escape.Name(dr.Got)))
	}
	return a
}

func (d *Daemon) record(ctx context.Context, level slog.Level, id, msg string, attrs ...slog.Attr) {
	attrs = append([]slog.Attr{slog.String("MESSAGE_ID", id)}, attrs...)
	d.log.LogAttrs(ctx, level, msg, attrs...)
}

func (d *Daemon) watchError(ctx context.Context, err error) {
	if errors.Is(err, watch.ErrExhausted) {
		if !d.exhausted {
			d.exhausted = true
			d.record(ctx, slog.LevelWarn, journal.MsgWatchesExhausted,
				fmt.Sprintf("%v: polling %d directories every %s instead; raise fs.inotify.max_user_watches", err, len(d.w.Polled()), d.o.PollInterval))
		}
		return
	}
	d.record(ctx, slog.LevelError, journal.MsgCheckFailed, fmt.Sprintf("inotify: %v", err))
}

// pollUnwatched checks the entries in directories that could not be watched,
// and tries to watch them again.
func (d *Daemon) pollUnwatched(ctx context.Context) {
	polled := d.w.Polled()
	_ = d.w.Retry() // ErrExhausted while some still cannot be watched: they stay polled, and the loop says when none is left
	if d.cfg.Blind() {
		d.cfg.Rewatch()
	}
	seen := map[int]bool{}
	now := time.Now()
	for _, dir := range polled {
		d.ix.affected(dir, true, func(i int) {
			e := &d.ix.entries[i]
			if seen[i] || path.Dir(e.Path) != dir {
				return
			}
			seen[i] = true
			// Without inotify there is no close-after-write to wait for: a
			// regular file modified within the settle time may be half
			// written, so it waits for the next poll (as a file that keeps
			// being written waits for quiet under inotify).
			if e.Type == desired.TypeRegular {
				d.obs.Forget()
				if typ, mtime := d.obs.Stat(e.Path); typ == ondisk.Regular && now.Sub(mtime) < d.o.Settle {
					return
				}
			}
			d.checkEntry(ctx, i)
		})
	}
}

func (d *Daemon) status() string {
	in := statusInput{drift: d.track.head(3), subjects: len(d.track.subjects),
		paths: d.ix.paths, units: d.ix.units, polled: len(d.w.Polled()),
		starting: !d.ready, unitsDown: d.unitsDown, apiDown: d.apiDown, reading: d.reads.underWay()}
	for _, h := range d.inhibitors {
		in.inhibitors = append(in.inhibitors, escape.Name(h.String()))
	}
	if d.loadFailed != "" {
		in.loadFailed = escape.Name(d.loadFailed)
	}
	in.configBlind = d.cfg.Blind()
	return statusLine(in)
}

func (d *Daemon) updateStatus() {
	if d.ready {
		d.setStatus(d.status())
	}
}

func (d *Daemon) setStatus(s string) {
	if s == d.lastStatus {
		return
	}
	d.lastStatus = s
	if d.o.Notify != nil {
		d.o.Notify.Status(s)
	}
}

// startWatchdog feeds systemd's watchdog only when the event loop answers a
// ping: a stuck loop stops the pings and systemd restarts the service.
func (d *Daemon) startWatchdog(ctx context.Context) chan chan struct{} {
	pings := make(chan chan struct{})
	if d.o.Notify == nil {
		return pings
	}
	interval, ok := d.o.Notify.WatchdogInterval()
	if !ok || interval <= 0 {
		return pings
	}
	go func() {
		t := time.NewTicker(interval / 2)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-d.done:
				return
			case <-t.C:
			}
			reply := make(chan struct{})
			select {
			case pings <- reply:
			case <-t.C: // the loop did not take the ping in time: no WATCHDOG=1
				continue
			case <-d.done:
				return
			}
			<-reply
			d.o.Notify.Watchdog()
		}
	}()
	return pings
}
