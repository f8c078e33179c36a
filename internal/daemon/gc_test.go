package daemon

import (
	"math"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
	"time"
)

// gcSettings reads GOGC and the memory limit without changing them.
func gcSettings() (percent int, limit int64) {
	percent = debug.SetGCPercent(100)
	debug.SetGCPercent(percent)
	return percent, debug.SetMemoryLimit(-1)
}

var retained [][]byte

// startupGC gives the test a process started without GOGC or GOMEMLIMIT,
// so that the tuner takes charge, and puts the collector's settings back
// when the test ends. It returns those settings: the start-up ones.
func startupGC(t *testing.T) (percent int, limit int64) {
	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	p0, l0 := gcSettings()
	t.Cleanup(func() {
		debug.SetGCPercent(p0)
		debug.SetMemoryLimit(l0)
	})
	return p0, l0
}

// TestGCTuner: between loads the collector runs on a memory limit above the
// loaded heap (GOGC off, so no forced GC every two minutes); the limit
// follows the heap up after a collection; a load runs with the start-up
// settings; an administrator's GOGC is left alone.
func TestGCTuner(t *testing.T) {
	p0, l0 := startupGC(t)
	defer func() { retained = nil }()

	g := newGCTuner()
	defer g.close()
	retained = append(retained, make([]byte, 8<<20)) // a loaded state
	limit := g.loaded()
	if p, l := gcSettings(); p != -1 || l != limit || limit < minHeadroom+8<<20 {
		t.Errorf("after a load: GOGC %d, limit %d (returned %d); want off and a limit above the 8 MiB heap plus %d",
			p, l, limit, minHeadroom)
	}

	// The heap grows by more than the headroom (drift found after the
	// load): after a collection the limit is above it again.
	for range 12 {
		retained = append(retained, make([]byte, 8<<20))
	}
	raised := false
	for range 100 {
		runtime.GC()
		if _, l := gcSettings(); l > limit+96<<20 {
			raised = true
			break
		}
	}
	if !raised {
		_, l := gcSettings()
		t.Errorf("the heap grew by 96 MiB and the limit stayed at %d (from %d)", l, limit)
	}

	g.loading()
	if p, l := gcSettings(); p != p0 || l != l0 {
		t.Errorf("during a load: GOGC %d, limit %d; want the start-up %d, %d", p, l, p0, l0)
	}
	// A collection during a load leaves the start-up settings alone.
	runtime.GC()
	runtime.GC()
	if p, l := gcSettings(); p != p0 || l != l0 {
		t.Errorf("after a collection during a load: GOGC %d, limit %d; want %d, %d", p, l, p0, l0)
	}

	t.Setenv("GOGC", "50")
	debug.SetGCPercent(50)
	debug.SetMemoryLimit(math.MaxInt64)
	g2 := newGCTuner()
	if limit := g2.loaded(); limit != 0 {
		t.Errorf("with GOGC=50 set, loaded() set a limit of %d", limit)
	}
	if p, l := gcSettings(); p != 50 || l != math.MaxInt64 {
		t.Errorf("with GOGC=50 set: GOGC %d, limit %d; want them untouched", p, l)
	}
}

// TestQuietLimit: the limit is the live heap, the runtime's own memory and
// the headroom; free heap (freed, not yet returned) and dead objects (not
// yet swept) are not in use and do not raise it.
func TestQuietLimit(t *testing.T) {
	const mib = 1 << 20
	tests := []struct {
		name string
		m    memStats
		want int64
	}{
		{"after a load", memStats{Mapped: 60 * mib, Objects: 50 * mib, Live: 50 * mib}, 10*mib + 50*mib + minHeadroom},
		{"freed but not returned is not in use", memStats{Mapped: 460 * mib, Free: 400 * mib, Objects: 50 * mib, Live: 50 * mib}, 10*mib + 50*mib + minHeadroom},
		{"dead objects not yet swept are not in use", memStats{Mapped: 160 * mib, Objects: 150 * mib, Live: 50 * mib}, 10*mib + 50*mib + minHeadroom},
		{"a large live heap gets half of itself", memStats{Mapped: 410 * mib, Objects: 400 * mib, Live: 400 * mib}, 10*mib + 400*mib + 200*mib},
		{"counters caught mid-update", memStats{Mapped: 10 * mib, Free: 8 * mib, Objects: 8 * mib, Live: 8 * mib}, 8*mib + minHeadroom},
		{"nothing yet", memStats{}, minHeadroom},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := quietLimit(tt.m); got != tt.want {
				t.Errorf("quietLimit(%+v) = %d MiB, want %d MiB", tt.m, got/mib, tt.want/mib)
			}
		})
	}
}

// heapModel is the runtime as far as a memory limit goes: the heap grows
// to the goal the limit gives (memoryLimitHeapGoal in mgcpacer.go, less
// its 5% margin), taking free heap before mapping more; a collection turns
// what died into free heap; the scavenger returns free heap while mapped
// memory is above 95% of the limit (gcPaceScavenger in mgcscavenge.go).
type heapModel struct {
	nonHeap, live, objects, free uint64
	limit                        int64
}

func (h *heapModel) stats() memStats {
	return memStats{Mapped: h.nonHeap + h.objects + h.free, Free: h.free, Objects: h.objects, Live: h.live}
}

// allocate makes n bytes of garbage, collecting whenever the goal is
// reached and setting the limit after each collection with limitOf.
func (h *heapModel) allocate(n uint64, limitOf func(memStats) int64) {
	const chunk = 1 << 20
	for ; n > 0; n -= chunk {
		m := h.stats()
		overage := max(int64(m.Mapped)-h.limit, 0)
		goal := h.limit - int64(m.NonHeap()) - overage
		goal -= goal / 20
		if int64(h.objects) >= goal {
			h.free += h.objects - h.live
			h.objects = h.live
			h.limit = limitOf(h.stats())
			if goal := uint64(h.limit) / 100 * 95; h.stats().Mapped > goal {
				h.free -= min(h.free, h.stats().Mapped-goal)
			}
		}
		h.objects += chunk
		h.free -= min(h.free, chunk)
	}
}

// TestQuietLimitHoldsThroughStorms: through storm after storm of
// allocation the limit, and the memory the runtime keeps mapped, stay
// where the first collection put them. The ratchet (a limit from the heap
// in use, free heap included, plus the headroom) rose by the headroom at
// every collection: the model shows that too, so that it is the model that
// holds the new limit to account.
func TestQuietLimitHoldsThroughStorms(t *testing.T) {
	const mib = 1 << 20
	ratchet := func(m memStats) int64 { return int64(m.Mapped) + max(int64(m.Live)/2, minHeadroom) }
	for _, tt := range []struct {
		name    string
		limitOf func(memStats) int64
		grows   bool
	}{
		{"the limit from the live heap", quietLimit, false},
		{"the ratchet, from the heap in use", ratchet, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := &heapModel{nonHeap: 6 * mib, live: 12 * mib, objects: 12 * mib}
			h.limit = tt.limitOf(h.stats())
			first := h.limit
			var mapped []uint64
			for range 3 {
				h.allocate(1<<30, tt.limitOf)
				mapped = append(mapped, h.stats().Mapped/mib)
			}
			t.Logf("mapped %v MiB, limit %d -> %d MiB", mapped, first/mib, h.limit/mib)
			bound := uint64(first) / mib
			if grew := mapped[2] > bound; grew != tt.grows {
				t.Errorf("mapped memory after three storms %v MiB, the first limit %d MiB; want growth %v", mapped, bound, tt.grows)
			}
			if !tt.grows && h.limit != first {
				t.Errorf("the limit moved from %d to %d MiB with the live heap unchanged", first/mib, h.limit/mib)
			}
		})
	}
}

// TestReclaimable: free heap, and what was allocated since the last
// collection, can be given back; the live heap cannot.
func TestReclaimable(t *testing.T) {
	for _, tt := range []struct {
		name string
		m    memStats
		want uint64
	}{
		{"right after a return", memStats{Objects: 50, Live: 50}, 0},
		{"free heap", memStats{Free: 30, Objects: 50, Live: 50}, 30},
		{"allocated since the collection", memStats{Free: 30, Objects: 80, Live: 50}, 60},
		{"counters caught mid-update", memStats{Free: 30, Objects: 40, Live: 50}, 30},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.m.Reclaimable(); got != tt.want {
				t.Errorf("reclaimable(%+v) = %d, want %d", tt.m, got, tt.want)
			}
		})
	}
}

func forcedGCs() uint64 {
	s := []metrics.Sample{{Name: "/gc/cycles/forced:gc-cycles"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

var garbage []byte

// TestGCTunerReturnsWhenQuiet: after work that left memory behind, the
// tuner returns it to the kernel once the loop is quiet; with nothing worth
// returning it arms nothing (an idle daemon collects nothing).
func TestGCTunerReturnsWhenQuiet(t *testing.T) {
	startupGC(t)
	g := newGCTuner()
	defer g.close()
	g.idleAfter = 10 * time.Millisecond
	g.loaded()

	g.active()
	g.idleMu.Lock()
	armed := g.idle != nil
	g.idleMu.Unlock()
	if armed {
		t.Errorf("right after a load (%d bytes reclaimable) the tuner armed a return", readMemStats().Reclaimable())
	}

	// A burst: 32 MiB allocated and dropped, under the limit's headroom,
	// so that no collection comes by itself.
	for range 32 {
		garbage = make([]byte, 1<<20)
	}
	garbage = nil
	before := forcedGCs()
	g.active()
	deadline := time.Now().Add(30 * time.Second)
	for readMemStats().Reclaimable() >= minReturn || forcedGCs() == before {
		if time.Now().After(deadline) {
			t.Fatalf("30 s after the work, %d bytes reclaimable (%d forced collections since)", readMemStats().Reclaimable(), forcedGCs()-before)
		}
		time.Sleep(10 * time.Millisecond) // polling, bounded by the deadline
	}
}
