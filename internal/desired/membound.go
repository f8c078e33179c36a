package desired

import (
	"os"
	"runtime/debug"
	"sync"
)

// boundMemory bounds the memory of a load that parses configs of size bytes
// in all, until the function it returns is called: it lowers the runtime's
// soft memory limit to twice the size plus loadHeadroom, unless the limit in
// force is lower or the administrator set GOGC or GOMEMLIMIT (theirs to
// choose). Loads at once share one bound, the largest, set by the first and
// lifted by the last.
//
// Why: a cold load must hold the config's bytes and the strings decoded
// from them at once (encoding/json copies every string) and, later, the
// decoded config and the contents derived from it; its validation, by
// reflection, allocates several times the config's size besides. With GOGC
// alone the collector lets the heap grow to twice what is live at each
// collection: 1 GB at 100,000 files (180 MB of config). Under the limit it
// collects as often as needed to stay near the live heap.
//
// The limit is soft: a load whose live heap exceeds it (contents that
// decompress to much more than their config) goes on, the runtime bounding
// the CPU it then gives the collector (runtime/debug.SetMemoryLimit: about
// half), never failing or stopping the load.
func boundMemory(size int64) (lift func()) {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		return func() {}
	}
	bound.mu.Lock()
	defer bound.mu.Unlock()
	want := 2*size + loadHeadroom
	if bound.loads == 0 {
		bound.before = debug.SetMemoryLimit(-1)
		bound.set = 0
	}
	bound.loads++
	if want > bound.set && want < bound.before {
		bound.set = want
		debug.SetMemoryLimit(want)
	}
	return func() {
		bound.mu.Lock()
		defer bound.mu.Unlock()
		if bound.loads--; bound.loads == 0 && bound.set != 0 {
			debug.SetMemoryLimit(bound.before)
		}
	}
}

// loadHeadroom is what a load may use above twice its config's size: the
// decoded structures, the runtime's own, and room for the collector to work
// in. The process's resident memory is about 12 MiB more than the limit
// counts (the executable's pages, memory outside the Go heap): at 20 MiB a
// cold check of 10,000 files peaks at 2× its config + 30 MiB (issue 21's
// bound is + 32 MiB; at 32 MiB it peaked at + 42 MiB, and at 12 MiB the
// collector cost 10% more CPU).
const loadHeadroom = 20 << 20

var bound struct {
	mu     sync.Mutex
	loads  int
	before int64 // the limit before the first load
	set    int64 // the limit set, 0 if none
}
