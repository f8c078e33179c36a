package memlimit

import (
	"math"
	"testing"
)

// TestConfigLoad: a load of the desired state lowers the memory limit to
// twice its configs plus the headroom, and restores it after (the sharing
// between loads and with the daemon's regime is Load's, tested above).
func TestConfigLoad(t *testing.T) {
	startup(t)
	end := ConfigLoad(100 << 20)
	want(t, "during a load of 100 MiB", 100, 200<<20+loadHeadroom)
	end()
	want(t, "after the load", 100, math.MaxInt64)
}
