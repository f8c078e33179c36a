package daemon

import (
	"math"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
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

// memStats is what the tuner reads of the runtime, from runtime/metrics.
type memStats struct {
	// Mapped is what counts against a memory limit (the runtime's
	// mappedReady): /memory/classes/total:bytes less
	// /memory/classes/heap/released:bytes.
	Mapped uint64
	// Free is heap memory free and not yet returned to the kernel
	// (/memory/classes/heap/free:bytes): the allocator takes from it first,
	// and it is what the runtime returns to the kernel to meet a limit.
	Free uint64
	// Objects are the heap's objects, live and dead but not yet swept
	// (/memory/classes/heap/objects:bytes).
	Objects uint64
	// Live is what the last collection marked (/gc/heap/live:bytes).
	Live uint64
}

var memMetrics = [...]string{
	"/memory/classes/total:bytes",
	"/memory/classes/heap/released:bytes",
	"/memory/classes/heap/free:bytes",
	"/memory/classes/heap/objects:bytes",
	"/gc/heap/live:bytes",
}

func readMemStats() memStats {
	var s [len(memMetrics)]metrics.Sample
	for i, name := range memMetrics {
		s[i].Name = name
	}
	metrics.Read(s[:])
	return memStats{Mapped: s[0].Value.Uint64() - s[1].Value.Uint64(), Free: s[2].Value.Uint64(),
		Objects: s[3].Value.Uint64(), Live: s[4].Value.Uint64()}
}

// nonHeap is the mapped memory that holds no heap object and is not free
// heap: stacks, the runtime's metadata, fragmentation in spans in use. It is
// the runtime's own "non-heap overheads" term when it turns a memory limit
// into a heap goal (memoryLimitHeapGoal in $GOROOT/src/runtime/mgcpacer.go).
func (m memStats) nonHeap() uint64 {
	// The counters are read one after the other: a partial update can
	// make them disagree for a moment.
	if m.Free+m.Objects > m.Mapped {
		return 0
	}
	return m.Mapped - m.Free - m.Objects
}

// quietLimit is the memory limit between loads: what the live heap and the
// runtime's structures need, plus the headroom.
//
// Neither free heap nor dead objects count: the runtime itself does not
// count free heap against the limit's heap goal (mgcpacer.go, see nonHeap),
// so a limit that included it let the heap grow into it and past it by the
// headroom at every collection under load, and the limit with it: a
// ratchet, storm after storm (docs/benchmarks.md, storms).
// Counted from the live heap, the limit stays put through any number of
// bursts, and free heap above it is returned to the kernel by the runtime's
// scavenger.
func quietLimit(m memStats) int64 {
	live := int64(min(m.Live, math.MaxInt64/4))
	limit := int64(min(m.nonHeap(), math.MaxInt64/4)) + live + max(live/2, minHeadroom)
	return limit
}

// reclaimable is the memory a collection and a return to the kernel would
// give back now: free heap, and the objects allocated since the last
// collection (dead or not: only a collection tells).
func (m memStats) reclaimable() uint64 {
	if m.Objects < m.Live {
		return m.Free
	}
	return m.Free + m.Objects - m.Live
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
	if g.off || g.closed.Load() || readMemStats().reclaimable() < minReturn {
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
	if memlimit.IsQuiet() && readMemStats().reclaimable() >= minReturn {
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
