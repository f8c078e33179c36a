package daemon

import (
	"math"
	"runtime"
	"runtime/debug"
	"testing"
)

// gcSettings reads GOGC and the memory limit without changing them.
func gcSettings() (percent int, limit int64) {
	percent = debug.SetGCPercent(100)
	debug.SetGCPercent(percent)
	return percent, debug.SetMemoryLimit(-1)
}

var retained [][]byte

// TestGCTuner: between loads the collector runs on a memory limit above the
// loaded heap (GOGC off, so no forced GC every two minutes); the limit
// follows the heap up after a collection; a load runs with the start-up
// settings; an administrator's GOGC is left alone.
func TestGCTuner(t *testing.T) {
	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	p0, l0 := gcSettings()
	defer func() {
		debug.SetGCPercent(p0)
		debug.SetMemoryLimit(l0)
		retained = nil
	}()

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
