package daemon

import (
	"math"
	"runtime/debug"
	"testing"
)

// gcSettings reads GOGC and the memory limit without changing them.
func gcSettings() (percent int, limit int64) {
	percent = debug.SetGCPercent(100)
	debug.SetGCPercent(percent)
	return percent, debug.SetMemoryLimit(-1)
}

// TestGCTuner: between loads the collector runs on a memory limit above the
// loaded heap (GOGC off, so no forced GC every two minutes); a load runs
// with the start-up settings; an administrator's GOGC is left alone.
func TestGCTuner(t *testing.T) {
	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	p0, l0 := gcSettings()
	defer func() {
		debug.SetGCPercent(p0)
		debug.SetMemoryLimit(l0)
	}()

	g := newGCTuner()
	state := make([]byte, 8<<20) // a loaded state, live across loaded()
	limit := g.loaded()
	if p, l := gcSettings(); p != -1 || l != limit || limit < minHeadroom+int64(len(state)) {
		t.Errorf("after a load: GOGC %d, limit %d (returned %d); want off and a limit above the %d-byte heap plus %d",
			p, l, limit, len(state), minHeadroom)
	}
	g.loading()
	if p, l := gcSettings(); p != p0 || l != l0 {
		t.Errorf("during a load: GOGC %d, limit %d; want the start-up %d, %d", p, l, p0, l0)
	}
	_ = state[0]

	t.Setenv("GOGC", "50")
	debug.SetGCPercent(50)
	debug.SetMemoryLimit(math.MaxInt64)
	g = newGCTuner()
	if limit := g.loaded(); limit != 0 {
		t.Errorf("with GOGC=50 set, loaded() set a limit of %d", limit)
	}
	if p, l := gcSettings(); p != 50 || l != math.MaxInt64 {
		t.Errorf("with GOGC=50 set: GOGC %d, limit %d; want them untouched", p, l)
	}
}
