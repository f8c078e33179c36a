package desired

import (
	"math"
	"runtime/debug"
	"testing"
)

// TestBoundMemory: a load lowers the memory limit to twice its configs
// plus the headroom, and restores it after (the sharing between loads and
// with the daemon's regime is memlimit's, tested there).
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
	lift()
	if got := limit(); got != math.MaxInt64 {
		t.Errorf("limit after the load = %d, want the limit before it", got)
	}
}
