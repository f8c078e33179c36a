package memlimit

// ConfigLoad bounds the memory of a load of the desired state that parses
// configs of size bytes in all, until the function it returns is called:
// the process's memory limit is lowered to twice the size plus
// loadHeadroom (Load), unless the limit in force is lower or the
// administrator set GOGC or GOMEMLIMIT (theirs to choose). The loader
// (package desired) calls it through the Bound its caller, the command or
// the daemon, hands it, once it knows what it is about to parse: the
// caller decides that a load is bounded, and this package how.
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
func ConfigLoad(size int64) (end func()) {
	return Load(2*size + loadHeadroom)
}

// loadHeadroom is what a load may use above twice its config's size: the
// decoded structures, the runtime's own, and room for the collector to work
// in. The process's resident memory is more than the limit counts (the
// executable's pages, memory outside the Go heap). A smaller headroom lowers
// a cold check's peak resident memory and costs CPU (more collections); a
// larger one lets the peak pass the target for a cold check (make bench
// measures both: docs/benchmarks.md, full check, peak RSS, every spec).
// The target bounds resident memory at twice the config plus 32 MiB, for
// the check and the daemon's cold start alike; what the limit does not
// count (the executable's resident pages, which a daemon has more of) gets
// the rest of it, with room to spare, since the heap stays near the limit
// for most of a large load.
// For the largest configs the peak is the parse's live heap, above the
// limit, and does not move with it.
const loadHeadroom = 12 << 20
