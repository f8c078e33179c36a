// Package memlimit owns the process's garbage-collector settings, the
// runtime's soft memory limit and GOGC (runtime/debug.SetMemoryLimit and
// SetGCPercent). Three regimes want them: a load of the desired state (Load:
// the start-up settings, with the limit lowered to a bound its configs'
// size gives, internal/desired, but never below what its live heap needs),
// the quiet time between loads (Quiet: no GOGC, a limit that follows
// the live heap, internal/daemon's gcTuner), and a process that checks once
// and exits (OneShot: no GOGC, a limit that follows the live heap, the
// check command). Each tells this package what
// it wants, and the settings in force are worked out here from all of it
// under one lock, so that neither regime can undo the other: a load runs
// with its bound whatever the quiet regime does meanwhile, and when the
// last load ends the quiet regime's latest limit is back, not one saved
// before the load.
//
// It promises that an administrator's GOGC or GOMEMLIMIT (in the
// environment) is never overridden: every call is then a no-op. It does not
// promise sensible settings if anything else in the process sets them.
// There is one quiet regime per process (one daemon).
package memlimit

import (
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"sync"
)

var state struct {
	mu sync.Mutex
	// start are the settings in force when a regime took charge: the
	// process's own, put back when none is left.
	startPercent int
	startLimit   int64
	percent      int   // GOGC as last set here
	loads        int   // loads in progress
	bound        int64 // the largest of their bounds
	// floor is the least limit the loads (and the one-shot regime) run
	// with: what the live heap of the last collection needs (loadFloor); following
	// says a collection will set it again.
	floor      int64
	following  bool
	quiet      bool
	quietLimit int64
	oneShots   int // one-shot regimes entered and not ended (checks run in one process)
}

// Managed reports whether the settings are this package's to set: false
// when the administrator set GOGC or GOMEMLIMIT.
func Managed() bool {
	return os.Getenv("GOGC") == "" && os.Getenv("GOMEMLIMIT") == ""
}

// Load bounds the memory of a load until the function it returns is
// called: GOGC as at start-up, and the memory limit lowered to bound unless
// the start-up limit is lower. Loads at once share the largest bound; the
// last to end hands the settings back (to the quiet regime, or to the
// start-up settings).
func Load(bound int64) (end func()) {
	return enter(func() {
		if state.loads == 0 {
			state.bound, state.floor = 0, 0
		}
		state.loads++
		state.bound = max(state.bound, bound)
	}, func() { state.loads-- })
}

// enter puts in force a regime that follows the live heap until the
// function it returns is called (once): begin and finish, under the lock,
// say that it starts and that it ends.
func enter(begin, finish func()) (end func()) {
	if !Managed() {
		return func() {}
	}
	state.mu.Lock()
	defer state.mu.Unlock()
	takeCharge()
	begin()
	follow()
	apply()
	var once sync.Once
	return func() {
		once.Do(func() {
			state.mu.Lock()
			defer state.mu.Unlock()
			finish()
			apply()
		})
	}
}

// follow starts following the live heap (followLoads), unless it is
// followed already.
func follow() {
	if !state.following {
		state.following = true
		followLoads()
	}
}

// followLoads raises the loads' floor after every collection while a load
// runs or the one-shot regime is in force: a cleanup on an object nothing references runs once a cycle has
// found it unreachable, and registers the next. The bound a load is given is
// a guess from its configs' size; a config of many small entries decodes to
// a live heap several times that size, and a limit at the live heap makes
// the collector run again after every few allocations, each time marking
// all of it: time that grew with the square of the config. Above the live
// heap by a quarter of it, each collection is paid for by as many bytes
// allocated as a quarter of what it marks.
func followLoads() {
	sentinel := new([16]byte)
	runtime.AddCleanup(sentinel, func(struct{}) {
		state.mu.Lock()
		defer state.mu.Unlock()
		if state.loads == 0 && state.oneShots == 0 {
			state.following = false
			return
		}
		state.floor = loadFloor(ReadHeap())
		apply()
		followLoads()
	}, struct{}{})
}

// loadFloor is the least limit for a load whose heap is m: what the live
// heap and the runtime's own structures need, and a quarter of the live heap
// to allocate in before the next collection.
func loadFloor(m Heap) int64 {
	live := int64(min(m.Live, math.MaxInt64/4))
	return int64(min(m.NonHeap(), math.MaxInt64/4)) + live + live/4
}

// Quiet enters (or stays in) the regime between loads: no GOGC (so no
// forced collection every two minutes) and a memory limit of limit. While
// a load runs, the load's settings stay in force and these take over when
// it ends. It returns false, setting nothing, when the settings are not
// this package's (see Managed).
func Quiet(limit int64) bool {
	if !Managed() {
		return false
	}
	state.mu.Lock()
	defer state.mu.Unlock()
	takeCharge()
	state.quiet, state.quietLimit = true, limit
	apply()
	return true
}

// Follow sets the quiet regime's limit anew (after a collection, from the
// heap as it is now), if the regime is in force; it does nothing otherwise,
// so that a collection that ends after Wake cannot bring the regime back.
func Follow(limit int64) {
	if !Managed() {
		return
	}
	state.mu.Lock()
	defer state.mu.Unlock()
	if state.quiet {
		state.quietLimit = limit
		apply()
	}
}

// Wake ends the quiet regime: the start-up settings, or a load's while one
// runs.
func Wake() {
	if !Managed() {
		return
	}
	state.mu.Lock()
	defer state.mu.Unlock()
	if state.quiet {
		state.quiet = false
		apply()
	}
}

// IsQuiet reports whether the quiet regime is in force (and no load runs).
func IsQuiet() bool {
	state.mu.Lock()
	defer state.mu.Unlock()
	return state.quiet && state.loads == 0
}

// OneShot enters, until the function it returns is called, the regime of
// a process that does one check and exits (the check command): no GOGC, and
// a memory limit of oneShotLimit, or above the live heap by a quarter of it
// after a collection (loadFloor, followed as a load's is). A load in the
// meantime runs with its own settings (Load), and the regime is back after
// it.
//
// Why: what such a process allocates is nearly all live until it exits (the
// state loaded, then what the check finds), so a collection frees little and
// costs a mark of all of it, on a core the check's reads want. With GOGC at
// its default the runtime collected twice while a large cached state was
// decoded, and marked it while the check ran. Under the limit a state that
// fits is never marked, and a larger one is collected as a load's is, its
// heap staying within a quarter above what is live (GOGC lets it double).
// It is not for the daemon, which lives on and has its own quiet regime.
// Checks run at once in one process share the regime until the last ends.
func OneShot() (end func()) {
	return enter(func() { state.oneShots++ }, func() { state.oneShots-- })
}

// oneShotLimit is the least memory limit of the one-shot regime: what the
// runtime may map before its first collection: room for the state of a
// large cached check (make bench's largest config) to decode without one. A
// cold load runs under its own bound (Load) and, after it, the limit follows
// the live heap.
const oneShotLimit = 64 << 20

// takeCharge saves the settings in force as the start-up ones when no
// regime holds them yet.
func takeCharge() {
	if state.loads > 0 || state.quiet || state.oneShots > 0 {
		return
	}
	state.startPercent = debug.SetGCPercent(100)
	debug.SetGCPercent(state.startPercent)
	state.percent = state.startPercent
	state.startLimit = debug.SetMemoryLimit(-1)
}

// apply puts in force what the regimes want: a load's settings while one
// runs, else the quiet regime's, else the one-shot regime's, else the
// start-up ones.
func apply() {
	percent, limit := state.startPercent, state.startLimit
	switch {
	case state.loads > 0:
		if b := max(state.bound, state.floor); state.bound > 0 && b < limit {
			limit = b
		}
	case state.quiet:
		percent, limit = -1, state.quietLimit
	case state.oneShots > 0:
		percent, limit = -1, min(limit, max(state.floor, oneShotLimit))
	}
	if percent != state.percent {
		// Only on a change: turning GOGC off waits for a mark phase in
		// progress to end.
		debug.SetGCPercent(percent)
		state.percent = percent
	}
	debug.SetMemoryLimit(limit)
}
