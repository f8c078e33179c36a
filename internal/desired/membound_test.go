package desired

import (
	"math"
	"runtime/debug"
	"testing"
)

// TestBoundMemory: a load lowers the memory limit to twice its configs
// plus the headroom, loads at once share the largest bound, the last one
// restores the limit before them, and an administrator's GOMEMLIMIT or a
// lower limit is left alone.
func TestBoundMemory(t *testing.T) {
	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	before := debug.SetMemoryLimit(math.MaxInt64)
	defer debug.SetMemoryLimit(before)
	limit := func() int64 { return debug.SetMemoryLimit(-1) }

	lift := boundMemory(100 << 20)
	if got, want := limit(), int64(200<<20+loadHeadroom); got != want {
		t.Errorf("limit during a load of 100 MiB = %d, want %d", got, want)
	}
	lift2 := boundMemory(300 << 20)
	if got, want := limit(), int64(600<<20+loadHeadroom); got != want {
		t.Errorf("limit during two loads = %d, want the larger bound %d", got, want)
	}
	lift()
	if got, want := limit(), int64(600<<20+loadHeadroom); got != want {
		t.Errorf("limit after the first load = %d, want %d while the second runs", got, want)
	}
	lift2()
	if got := limit(); got != math.MaxInt64 {
		t.Errorf("limit after the loads = %d, want the limit before them", got)
	}

	debug.SetMemoryLimit(64 << 20)
	boundMemory(100 << 20)()
	if got := limit(); got != 64<<20 {
		t.Errorf("a lower limit became %d", got)
	}
	debug.SetMemoryLimit(math.MaxInt64)

	t.Setenv("GOMEMLIMIT", "1GiB")
	lift = boundMemory(100 << 20)
	if got := limit(); got != math.MaxInt64 {
		t.Errorf("with GOMEMLIMIT set, the limit during a load is %d", got)
	}
	lift()
}
