package daemon

import (
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"sync/atomic"
)

// gcTuner keeps the garbage collector quiet while the daemon waits.
//
// After a load nearly all of the heap is the desired state, which lives
// until the next load; with the default settings the runtime still marks all
// of it at least every two minutes (its forced GC) although nothing is being
// allocated: at 100,000 declared files that was 100 ms of CPU per two
// minutes, 0.17% of a core while idle. Between loads the collector is
// therefore driven by a memory limit alone (GOGC=off, which also turns the
// forced GC off): the heap in use plus a headroom of max(live/2, 64 MiB).
// The limit is set again after every collection, so that it follows the heap
// up (drift found after a load, with its diffs, would otherwise hold the heap
// near a fixed limit and make nearly every allocation collect) and down. A
// load itself, which allocates several times the config's size, runs with the
// settings the process started with.
//
// An administrator's GOGC or GOMEMLIMIT is left alone.
type gcTuner struct {
	off         bool
	percent     int
	memoryLimit int64
	mu          sync.Mutex // orders a collection's rearm against a load's start
	quiet       bool       // between loads: the limit is ours to set
	closed      atomic.Bool
	armOnce     sync.Once
}

func newGCTuner() *gcTuner {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		return &gcTuner{off: true}
	}
	p := debug.SetGCPercent(100)
	debug.SetGCPercent(p)
	return &gcTuner{percent: p, memoryLimit: debug.SetMemoryLimit(-1)}
}

// loading restores the start-up settings for a load.
func (g *gcTuner) loading() {
	if g.off {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.quiet = false
	debug.SetGCPercent(g.percent)
	debug.SetMemoryLimit(g.memoryLimit)
}

// minHeadroom is the least growth past the heap in use before a collection.
const minHeadroom = 64 << 20

// loaded returns the load's garbage to the kernel (a load allocates several
// times the config's size: Ignition's JSON tree, validation, translation),
// whether the load succeeded or not, then paces the collector by the memory
// limit. It returns the limit set, 0 if none.
func (g *gcTuner) loaded() int64 {
	debug.FreeOSMemory()
	if g.off || g.closed.Load() {
		return 0
	}
	g.mu.Lock()
	g.quiet = true
	limit := g.rearm()
	debug.SetGCPercent(-1)
	g.mu.Unlock()
	g.armOnce.Do(g.afterEachGC)
	return limit
}

// rearm sets the limit from the heap as it is now.
func (g *gcTuner) rearm() int64 {
	s := []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}, {Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	inUse := int64(s[0].Value.Uint64() - s[1].Value.Uint64())
	live := int64(s[2].Value.Uint64())
	limit := inUse + max(live/2, minHeadroom)
	if limit <= 0 || limit > math.MaxInt64/2 {
		return 0
	}
	debug.SetMemoryLimit(limit)
	return limit
}

// afterEachGC calls rearm after every collection while the daemon is
// quiet: a cleanup on an object nothing references runs once a cycle has
// found it unreachable, and registers the next.
func (g *gcTuner) afterEachGC() {
	sentinel := new([16]byte)
	runtime.AddCleanup(sentinel, func(g *gcTuner) {
		if g.closed.Load() {
			return
		}
		g.mu.Lock()
		if g.quiet {
			g.rearm()
		}
		g.mu.Unlock()
		g.afterEachGC()
	}, g)
}

// close stops following collections and restores the start-up settings.
func (g *gcTuner) close() {
	if g.off {
		return
	}
	g.closed.Store(true)
	g.loading()
}
