package memlimit

import "runtime/metrics"

// Heap is what the runtime says of its memory, from runtime/metrics: what
// both regimes set their limits from.
type Heap struct {
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

var heapMetrics = [...]string{
	"/memory/classes/total:bytes",
	"/memory/classes/heap/released:bytes",
	"/memory/classes/heap/free:bytes",
	"/memory/classes/heap/objects:bytes",
	"/gc/heap/live:bytes",
}

// ReadHeap reads the runtime's memory now.
func ReadHeap() Heap {
	var s [len(heapMetrics)]metrics.Sample
	for i, name := range heapMetrics {
		s[i].Name = name
	}
	metrics.Read(s[:])
	return Heap{Mapped: s[0].Value.Uint64() - s[1].Value.Uint64(), Free: s[2].Value.Uint64(),
		Objects: s[3].Value.Uint64(), Live: s[4].Value.Uint64()}
}

// NonHeap is the mapped memory that holds no heap object and is not free
// heap: stacks, the runtime's metadata, fragmentation in spans in use. It is
// the runtime's own "non-heap overheads" term when it turns a memory limit
// into a heap goal (memoryLimitHeapGoal in $GOROOT/src/runtime/mgcpacer.go).
func (m Heap) NonHeap() uint64 {
	// The counters are read one after the other: a partial update can
	// make them disagree for a moment.
	if m.Free+m.Objects > m.Mapped {
		return 0
	}
	return m.Mapped - m.Free - m.Objects
}

// Reclaimable is the memory a collection and a return to the kernel would
// give back now: free heap, and the objects allocated since the last
// collection (dead or not: only a collection tells).
func (m Heap) Reclaimable() uint64 {
	if m.Objects < m.Live {
		return m.Free
	}
	return m.Free + m.Objects - m.Live
}
