package harness

import (
	"runtime"
	"syscall"
	"testing"
	"time"
)

// Margins of Linear: how much more one input ten times larger may cost
// than ten inputs of size 1 before the work is called superlinear. Growth
// with the square of the size costs ten times more. Allocations are
// counted by the runtime and barely vary; CPU time does, with the
// collector and the caches, which serve a larger input less well, so its
// margin is wider.
const (
	linearAllocMargin = 1.5
	linearCPUMargin   = 4.0
)

// Cost is what a piece of work cost: the process's CPU time (user and
// system, which other processes on a loaded machine do not add to), and
// the bytes and objects it allocated.
type Cost struct {
	CPU    time.Duration
	Bytes  uint64
	Allocs uint64
}

// Measure runs work once, after a collection, and returns what it cost.
// The process's CPU time counts every goroutine of the test binary: call
// it from a test that runs alone (not t.Parallel).
func Measure(work func()) Cost {
	runtime.GC()
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	c0 := cpuTime()
	work()
	c1 := cpuTime()
	runtime.ReadMemStats(&m1)
	return Cost{CPU: c1 - c0, Bytes: m1.TotalAlloc - m0.TotalAlloc, Allocs: m1.Mallocs - m0.Mallocs}
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		panic(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// Linear fails the test unless work grows at most linearly with the size
// of its input: work(10) does the job on an input ten times the size of
// work(1)'s. It compares, in one run, one work(10) with ten work(1) (which
// also pay ten times whatever a run costs whatever its size), both
// repeated until they take a measurable time: the CPU time, the bytes and
// the objects allocated. A comparison within the margins ends it; one out
// of them is tried again, twice, interleaved, and the least cost of the
// tries is judged. It never compares a time with a fixed threshold, which
// a loaded machine breaks.
func Linear(t testing.TB, what string, work func(scale int)) {
	t.Helper()
	// Small inputs are measured many times over, so that what is compared
	// is well above the noise of the CPU clock and of the runtime's own
	// threads.
	reps := 1
	if c := Measure(func() { tenOf(work, 1) }); c.CPU < linearMinCPU {
		reps = min(int(linearMinCPU/max(c.CPU, time.Microsecond))+1, 10_000)
	}
	var one, ten Cost
	for try := 0; try < 3; try++ {
		o := Measure(func() {
			for range reps {
				tenOf(work, 1)
			}
		})
		x := Measure(func() {
			for range reps {
				work(10)
			}
		})
		if try == 0 {
			one, ten = o, x
		} else {
			one, ten = least(one, o), least(ten, x)
		}
		if superlinear(one, ten) == "" {
			break // within the margins: no need to look again
		}
	}
	t.Logf("%s (%d times): ten inputs of size 1: %v CPU, %d bytes in %d objects; one of size 10: %v CPU, %d bytes in %d objects",
		what, reps, one.CPU, one.Bytes, one.Allocs, ten.CPU, ten.Bytes, ten.Allocs)
	if why := superlinear(one, ten); why != "" {
		t.Errorf("%s: %s grows faster than the input: %v CPU, %d bytes in %d objects for one input ten times larger, against %v, %d bytes in %d objects for ten inputs of size 1",
			what, why, ten.CPU, ten.Bytes, ten.Allocs, one.CPU, one.Bytes, one.Allocs)
	}
}

// superlinear says what of ten (one input ten times larger) is beyond the
// margins of one (ten inputs of size 1): "" for nothing.
func superlinear(one, ten Cost) string {
	switch {
	case float64(ten.Bytes) > linearAllocMargin*float64(one.Bytes) || float64(ten.Allocs) > linearAllocMargin*float64(one.Allocs):
		return "allocation"
	case float64(ten.CPU) > linearCPUMargin*float64(one.CPU):
		return "CPU time"
	}
	return ""
}

// linearMinCPU is the least CPU time Linear measures at once.
const linearMinCPU = 20 * time.Millisecond

func tenOf(work func(int), scale int) {
	for range 10 {
		work(scale)
	}
}

func least(a, b Cost) Cost {
	return Cost{CPU: min(a.CPU, b.CPU), Bytes: min(a.Bytes, b.Bytes), Allocs: min(a.Allocs, b.Allocs)}
}
