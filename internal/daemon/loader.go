package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/drift-monitor/drift-monitor/internal/desired"
	"github.com/drift-monitor/drift-monitor/internal/desired/discover"
	"github.com/drift-monitor/drift-monitor/internal/desired/statekey"
	"github.com/drift-monitor/drift-monitor/internal/escape"
	"github.com/drift-monitor/drift-monitor/internal/journal"
	"github.com/drift-monitor/drift-monitor/internal/memlimit"
	"github.com/drift-monitor/drift-monitor/internal/model"
)

// Loading the desired state. A load reads, parses and derives every config
// file: linear in their size, but seconds for a large one (and as long to
// refuse a bad one), which the event loop must not spend away from the
// watchdog, the bus and the events. So a reload's work runs on a goroutine
// of its own (obtain), touching nothing of the daemon's, and the loop
// applies its result when it arrives (apply), meanwhile checking against the
// state in force. One load runs at a time; a reload asked for while one
// runs is done once it ends (the configs may have changed after it read
// them). The load at start runs before the loop and before READY=1, when
// systemd's start timeout, not its watchdog, bounds it.
//
// A load that takes longer than loadSlow is journaled (MsgLoadSlow), naming
// its largest config file: what to look at when reloads are slow.
//
// When a load is refused and no state was loaded in this run (a restart
// with a bad config in place), the daemon checks against the last good state
// an earlier run loaded, which the state cache keeps (lastGoodStore); the
// status line says which it checks against, or that it checks nothing.

// loadSlow is how long a load may take before it is journaled: far above
// the load of a large real config, far below the watchdog's period.
const loadSlow = 5 * time.Second

// lastGoodStore is the state cache's memory of the last good state
// (statecache.Cache).
type lastGoodStore interface {
	// Served returns (and forgets) the key of the state the cache served
	// last: after a load, that of the state it gave.
	Served() (statekey.Key, bool)
	// MarkGood remembers the state of the key as the last good one.
	MarkGood(statekey.Key)
	// LastGood returns the key MarkGood remembered.
	LastGood() (statekey.Key, bool)
}

// goodState says what the state in force is.
type goodState struct {
	// have: a state is in force (loaded in this run, or restored).
	have bool
	// restored: it is the last good state of an earlier run, restored
	// from the state cache because the configs in place are refused.
	restored bool
}

// loaded is a load's result (obtain), for the loop to apply.
type loaded struct {
	st  model.State
	err error
	// key names st in the state cache, when keyed.
	key   statekey.Key
	keyed bool
	took  time.Duration
	// largest is the largest config file and its size, for the record of
	// a slow load.
	largest string
	size    int64
}

// loads is the reload under way, if any.
type loads struct {
	running bool
	why     string
	// then are run once it is applied; again, when not "", is why to
	// load again after it; next wait for the load after it.
	then  []func(context.Context)
	again string
	next  []func(context.Context)
	done  chan loaded
	// since is when the load under way started, and tick its ticker of
	// extendReload while it runs (nil otherwise).
	since time.Time
	tick  *time.Ticker
	wg    sync.WaitGroup
	// slow is loadSlow (a test's shorter).
	slow time.Duration
}

// loadBound bounds the memory of the daemon's loads: the loader leaves
// that to its caller (desired.Bound), and the daemon takes memlimit's
// bound for a load of the desired state. A test replaces it to see it
// used.
var loadBound desired.Bound = memlimit.ConfigLoad

// obtain loads the desired state: the part of a load that touches nothing
// of the daemon's but the root and the cache, so that it may run off the
// event loop.
func (d *Daemon) obtain() loaded {
	start := time.Now()
	d.gc.loading()
	store, _ := d.o.Cache.(lastGoodStore)
	if store != nil {
		store.Served() // a state served before this load is not this load's
	}
	st, err := desired.LoadCached(d.o.Cache, d.root, d.o.Configs, loadBound)
	r := loaded{st: st, err: err}
	if err == nil {
		for _, w := range d.o.FirstBoot.Apply(d.root, &r.st) {
			d.log.Warn(w)
		}
		if store != nil {
			r.key, r.keyed = store.Served()
		}
	}
	r.took = time.Since(start)
	if r.took > d.loads.slow {
		r.largest, r.size = d.largestConfig()
	}
	return r
}

// largestConfig names the largest of the config files in place now.
func (d *Daemon) largestConfig() (string, int64) {
	files, err := discover.Fragments(d.root, d.o.Configs)
	if err != nil {
		return "", 0
	}
	var name string
	var size int64 = -1
	for _, f := range files {
		if fi, err := os.Stat(f); err == nil && fi.Size() > size {
			name, size = f, fi.Size()
		}
	}
	if len(d.o.Configs) == 0 && name != "" {
		// The default locations, inside the root: named as the host
		// names them. (--config names paths of this machine.)
		name = discover.HostPath(d.root.Dir(), name)
	}
	return name, size
}

// apply makes a load's state current, or keeps the last good one and says
// so: on the event loop.
func (d *Daemon) apply(ctx context.Context, r loaded) error {
	defer func() {
		if limit := d.gc.loaded(); limit > 0 {
			d.log.Debug(fmt.Sprintf("state loaded; garbage collection now at a %d MiB memory limit", limit>>20))
		}
	}()
	d.noteSlowLoad(ctx, r)
	if r.err != nil {
		d.refuse(ctx, r.err)
		return r.err
	}
	if err := d.install(ctx, r.st); err != nil {
		d.loadErr = err
		return err
	}
	if store, ok := d.o.Cache.(lastGoodStore); ok && r.keyed {
		store.MarkGood(r.key)
	}
	return nil
}

// refuse journals a refused load. Without a state in force, the last good
// state of an earlier run is restored, if the cache has it; the record says
// what is checked against.
func (d *Daemon) refuse(ctx context.Context, err error) {
	d.m.loadFailures++
	var msg string
	switch {
	case d.good.have && d.good.restored:
		msg = fmt.Sprintf("Refusing the desired state, keeping the last good one (from an earlier run): %v", err)
	case d.good.have:
		msg = fmt.Sprintf("Refusing the desired state, keeping the last good one: %v", err)
	case d.restoreLastGood(ctx):
		msg = fmt.Sprintf("Refusing the desired state: %v; checking against the last good one, loaded by an earlier run "+
			"and kept in the state cache (%d entries from %d config files)", err, len(d.ix.entries), len(d.files))
	default:
		msg = fmt.Sprintf("Refusing the desired state: %v; there is no last good one: nothing is checked", err)
	}
	d.loadErr = err
	d.record(ctx, slog.LevelError, journal.MsgLoadFailed, msg, journal.ConfigError(err.Error()))
}

// restoreLastGood installs the last good state the cache keeps; false when
// there is none.
func (d *Daemon) restoreLastGood(ctx context.Context) bool {
	store, ok := d.o.Cache.(lastGoodStore)
	if !ok {
		return false
	}
	key, ok := store.LastGood()
	if !ok {
		return false
	}
	st, ok := desired.FromCache(d.o.Cache, d.root, key)
	if !ok {
		return false
	}
	for _, w := range d.o.FirstBoot.Apply(d.root, &st) {
		d.log.Warn(w)
	}
	if d.install(ctx, st) != nil {
		return false
	}
	d.good.restored = true
	return true
}

// noteSlowLoad journals a load that took longer than loadSlow.
func (d *Daemon) noteSlowLoad(ctx context.Context, r loaded) {
	if r.took <= d.loads.slow {
		return
	}
	what := "no config file"
	if r.largest != "" {
		what = fmt.Sprintf("the largest config file %s, %d bytes", escape.Name(r.largest), r.size)
	}
	outcome := "loaded"
	if r.err != nil {
		outcome = "refused"
	}
	d.record(ctx, slog.LevelWarn, journal.MsgLoadSlow,
		fmt.Sprintf("Loading the desired state took %s (%s; %s)", r.took.Round(time.Millisecond), outcome, what))
}

// reloadThen starts a reload off the loop, or, while one runs, asks for
// another once it ends; then (if not nil) runs on the loop once a reload
// that started after this call is applied and checked.
func (d *Daemon) reloadThen(ctx context.Context, why string, then func(context.Context)) {
	if then != nil {
		d.loads.next = append(d.loads.next, then)
	}
	if d.loads.running {
		if d.loads.again == "" {
			d.loads.again = why
		}
		return
	}
	d.startReload(why)
}

// startReload starts a load off the loop, for those waiting on next.
func (d *Daemon) startReload(why string) {
	if d.o.Notify != nil {
		d.o.Notify.Reloading()
	}
	d.loads.running, d.loads.why, d.loads.then, d.loads.next = true, why, d.loads.next, nil
	d.loads.since = time.Now()
	d.loads.tick = time.NewTicker(reloadExtendEvery)
	d.extendReload()
	d.obtainOffLoop()
}

// obtainOffLoop runs a load off the loop, its result on d.loads.done; Close
// waits for it a moment (closeLoadWait).
func (d *Daemon) obtainOffLoop() {
	d.loads.wg.Add(1)
	go func() {
		defer d.loads.wg.Done()
		d.loads.done <- d.obtain() // buffered: never blocks, even once the loop is gone
	}()
}

// reloadDone applies a reload's result, checks everything against what is
// then in force, and starts the reload asked for meanwhile. While
// inhibited, the result is dropped: the release reloads, and a transition's
// half-written config is not refused as broken. A result refused while a
// config file is being written is put off the same way: the writer's close
// reloads (configWatch), and those waiting for this reload wait for that
// one.
func (d *Daemon) reloadDone(ctx context.Context, r loaded) {
	why, then := d.loads.why, d.loads.then
	// Once more for what follows on the loop before READY=1 (applying the
	// state, a full check), which no tick can interrupt.
	d.extendReload()
	d.loads.running, d.loads.then = false, nil
	d.loads.stopTick()
	switch {
	case d.inhibited():
		d.gc.loaded()
		then = append(then, d.loads.next...)
		d.loads.again, d.loads.next = "", nil
		if d.o.Notify != nil {
			d.o.Notify.Ready(d.status())
		}
	case r.err != nil && d.cfg.Writing():
		d.gc.loaded()
		d.log.Debug(fmt.Sprintf("reload (%s) refused while a config file is being written: read again when it is closed: %v", why, r.err))
		d.loads.next, then = append(then, d.loads.next...), nil
		// The reload was asked for a reason (events dropped while
		// inhibited, a signal): what is in force is checked meanwhile.
		d.fullCheck(ctx, "reload put off: a config file is being written")
		if d.o.Notify != nil {
			d.o.Notify.Ready(d.status())
		}
	default:
		d.reloaded(ctx, why, d.apply(ctx, r))
	}
	for _, f := range then {
		f(ctx)
	}
	if d.loads.again != "" && !d.loads.running {
		again := d.loads.again
		d.loads.again = ""
		d.startReload(again)
	}
}

// tickC is the ticker of extendReload while a load runs, nil (a case no
// select takes) otherwise.
func (l *loads) tickC() <-chan time.Time {
	if l.tick == nil {
		return nil
	}
	return l.tick.C
}

// stopTick stops the ticker of extendReload.
func (l *loads) stopTick() {
	if l.tick != nil {
		l.tick.Stop()
		l.tick = nil
	}
}
