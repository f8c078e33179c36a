package daemon

import (
	"math"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/drift-monitor/drift-monitor/internal/memlimit"
)

// gcTuner keeps the garbage collector quiet while the daemon waits, and
// gives back what a burst of work used once the work is over.
//
// After a load nearly all of the heap is the desired state, which lives
// until the next load; with the default settings the runtime still marks all
// of it at least every two minutes (its forced GC) although nothing is being
// allocated, a cost that grows with the declared files while nothing
// happens (docs/benchmarks.md, idle). Between loads the collector is
// therefore driven by a memory limit alone (GOGC=off, which also turns the
// forced GC off): the memory the live heap and the runtime's own structures
// need, plus a headroom of max(live/2, 64 MiB) (see quietLimit). The limit is
// set again after every collection, so that it follows the live heap up
// (drift found after a load, with its diffs, would otherwise hold the heap
// near a fixed limit and make nearly every allocation collect) and down. A
// load itself, which allocates several times the config's size, runs with the
// settings the process started with and the bound the daemon hands the
// loader (memlimit.ConfigLoad, through desired.Bound): internal/memlimit
// owns the settings and keeps the two regimes from undoing each other.
//
// With GOGC off the runtime returns freed memory to the kernel only to stay
// under the limit, and the garbage of the last cycle stays resident until
// the next one, which an idle daemon never reaches. So once the event loop
// has been quiet for idleAfter after work (active), the memory that work
// left behind is returned, with one collection, if there is enough of it to
// matter (minReturn): once per burst, never while nothing happens.
//
// An administrator's GOGC or GOMEMLIMIT is left alone.
type gcTuner struct {
	off     bool
	closed  atomic.Bool
	armOnce sync.Once

	idleAfter time.Duration
	idleMu    sync.Mutex
	idle      *time.Timer // returns memory once the loop is quiet; nil until work
}

func newGCTuner() *gcTuner {
	if !memlimit.Managed() {
		return &gcTuner{off: true}
	}
	return &gcTuner{idleAfter: idleAfter}
}

// loading restores the start-up settings for a load.
func (g *gcTuner) loading() {
	if g.off {
		return
	}
	memlimit.Wake()
}

const (
	// minHeadroom is the least growth past the live heap before a
	// collection.
	minHeadroom = 64 << 20
	// idleAfter is how long the loop must be quiet after work before what
	// the work freed is returned: a storm of events has no gaps that long,
	// and the collection it costs is small beside the work.
	idleAfter = time.Second
	// minReturn is the least memory worth a collection to return: a
	// watchdog ping or a single event leaves far less.
	minReturn = 4 << 20
)

// loaded returns the load's garbage to the kernel (a load allocates several
// times the config's size: Ignition's JSON tree, validation, translation),
// whether the load succeeded or not, then paces the collector by the memory
// limit. It returns the limit set, 0 if none.
func (g *gcTuner) loaded() int64 {
	debug.FreeOSMemory()
	if g.off || g.closed.Load() {
		return 0
	}
	limit := quietLimit(readMemStats())
	if !memlimit.Quiet(limit) {
		return 0
	}
	g.armOnce.Do(g.afterEachGC)
	return limit
}

// memStats is what the tuner reads of the runtime (memlimit.Heap).
type memStats = memlimit.Heap

func readMemStats() memStats { return memlimit.ReadHeap() }

// quietLimit is the memory limit between loads: what the live heap and the
// runtime's structures need, plus the headroom.
//
// Neither free heap nor dead objects count: the runtime itself does not
// count free heap against the limit's heap goal (mgcpacer.go, see memlimit.Heap.NonHeap),
// so a limit that included it let the heap grow into it and past it by the
// headroom at every collection under load, and the limit with it: a
// ratchet, storm after storm (docs/benchmarks.md, storms).
// Counted from the live heap, the limit stays put through any number of
// bursts, and free heap above it is returned to the kernel by the runtime's
// scavenger.
func quietLimit(m memStats) int64 {
	live := int64(min(m.Live, math.MaxInt64/4))
	limit := int64(min(m.NonHeap(), math.MaxInt64/4)) + live + max(live/2, minHeadroom)
	return limit
}

// afterEachGC sets the quiet limit from the heap as it is now after every
// collection (memlimit keeps it only while the daemon is quiet): a cleanup on an object nothing references runs once a cycle has
// found it unreachable, and registers the next.
func (g *gcTuner) afterEachGC() {
	sentinel := new([16]byte)
	runtime.AddCleanup(sentinel, func(g *gcTuner) {
		if g.closed.Load() {
			return
		}
		if memlimit.IsQuiet() {
			memlimit.Follow(quietLimit(readMemStats()))
		}
		g.afterEachGC()
	}, g)
}

// active tells the tuner that the event loop has done some work: if the
// work left memory worth returning, it is returned once the loop has been
// quiet for idleAfter. It arms nothing otherwise, so that an idle daemon
// wakes for nothing.
func (g *gcTuner) active() {
	if g.off || g.closed.Load() || readMemStats().Reclaimable() < minReturn {
		return
	}
	g.idleMu.Lock()
	defer g.idleMu.Unlock()
	if g.idle == nil {
		g.idle = time.AfterFunc(g.idleAfter, g.returnIdle)
		return
	}
	g.idle.Reset(g.idleAfter)
}

// returnIdle runs once the loop has been quiet: one collection, and the
// free heap back to the kernel. During a load it does nothing: loaded
// returns memory anyway.
func (g *gcTuner) returnIdle() {
	if g.closed.Load() {
		return
	}
	if memlimit.IsQuiet() && readMemStats().Reclaimable() >= minReturn {
		debug.FreeOSMemory()
	}
}

// close stops following collections and restores the start-up settings.
func (g *gcTuner) close() {
	if g.off {
		return
	}
	g.closed.Store(true)
	g.idleMu.Lock()
	if g.idle != nil {
		g.idle.Stop()
	}
	g.idleMu.Unlock()
	g.loading()
}
