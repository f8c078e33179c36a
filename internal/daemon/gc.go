package daemon

import (
	"math"
	"os"
	"runtime/debug"
	"runtime/metrics"
)

// gcTuner keeps the garbage collector quiet while the daemon waits.
//
// After a load nearly all of the heap is the desired state, which lives
// until the next load; with the default settings the runtime still marks all
// of it at least every two minutes (its forced GC) although nothing is being
// allocated: at 100,000 declared files that was 100 ms of CPU per two
// minutes, 0.17% of a core while idle. Between loads the collector is
// therefore driven by a memory limit alone (GOGC=off, which also turns the
// forced GC off): it runs when the heap has grown by the headroom past what
// the load left, which idle waiting never reaches. A load itself, which
// allocates several times the config's size, runs with the settings the
// process started with.
//
// An administrator's GOGC or GOMEMLIMIT is left alone.
type gcTuner struct {
	off         bool
	percent     int
	memoryLimit int64
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
	debug.SetGCPercent(g.percent)
	debug.SetMemoryLimit(g.memoryLimit)
}

// minHeadroom is the least growth past the loaded heap before a collection.
const minHeadroom = 64 << 20

// loaded switches to the memory limit once a state is loaded and the load's
// garbage returned (debug.FreeOSMemory). It returns the limit set, 0 if none.
func (g *gcTuner) loaded() int64 {
	if g.off {
		return 0
	}
	s := []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}, {Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	inUse := int64(s[0].Value.Uint64() - s[1].Value.Uint64())
	live := int64(s[2].Value.Uint64())
	limit := inUse + max(live/2, minHeadroom)
	if limit <= 0 || limit > math.MaxInt64/2 {
		return 0
	}
	debug.SetMemoryLimit(limit)
	debug.SetGCPercent(-1)
	return limit
}
