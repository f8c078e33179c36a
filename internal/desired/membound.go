package desired

import "github.com/drift-monitor/drift-monitor/internal/memlimit"

// boundMemory bounds the memory of a load that parses configs of size bytes
// in all, until the function it returns is called: the process's memory
// limit is lowered to twice the size plus loadHeadroom, unless the limit in
// force is lower or the administrator set GOGC or GOMEMLIMIT (theirs to
// choose). memlimit owns the limit: loads at once share the largest bound,
// and the daemon's settings between loads cannot undo it.
//
// Why: a cold load must hold the config's bytes and the strings decoded
// from them at once (encoding/json copies every string) and, later, the
// decoded config and the contents derived from it; its validation, by
// reflection, allocates several times the config's size besides. With GOGC
// alone the collector lets the heap grow to twice what is live at each
// collection. Under the limit it collects as often as needed to stay near
// the live heap.
//
// The limit is soft: a load whose live heap outgrows it (contents that
// decompress to much more than their config, a config of many small
// entries) goes on, never failing or stopping, and memlimit raises the
// limit above that heap after each collection (followLoads): held at the
// live heap, the collector would run again every few allocations, each
// time marking all of it, for a time that grows with the square of the
// config.
func boundMemory(size int64) (lift func()) {
	return memlimit.Load(2*size + loadHeadroom)
}

// loadHeadroom is what a load may use above twice its config's size: the
// decoded structures, the runtime's own, and room for the collector to work
// in. The process's resident memory is about 12 MiB more than the limit
// counts (the executable's pages, memory outside the Go heap). Measured on
// a cold check of 10,000 files (issue 21's bound: 2× its config + 32 MiB,
// 66.3 MiB), nine runs over specs 3.0.0, 3.6.0 and a MachineConfig, peak
// RSS (time -f %M) and CPU (perf stat task-clock, eight alternated runs):
// at 20 MiB 65.4–67.3 MiB, over the bound in some runs; at 16 MiB 61.4–63.8
// MiB for 3% more CPU; at 12 MiB 57.7–60.3 MiB for 7% more. (At 32 MiB it
// peaked at + 42 MiB.) At 100,000 files the peak is the parse's live heap,
// above any of these limits, and does not move with it.
const loadHeadroom = 16 << 20
