package memlimit

import (
	"math"
	"runtime"
	"runtime/debug"
	"testing"
	"time"
)

func settings() (percent int, limit int64) {
	percent = debug.SetGCPercent(100)
	debug.SetGCPercent(percent)
	return percent, debug.SetMemoryLimit(-1)
}

// startup gives the test a process started without GOGC or GOMEMLIMIT, at
// GOGC 100 and no limit, and puts the settings back when it ends.
func startup(t *testing.T) {
	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	p0, l0 := settings()
	debug.SetGCPercent(100)
	debug.SetMemoryLimit(math.MaxInt64)
	t.Cleanup(func() {
		Wake()
		debug.SetGCPercent(p0)
		debug.SetMemoryLimit(l0)
	})
}

func want(t *testing.T, when string, percent int, limit int64) {
	t.Helper()
	if p, l := settings(); p != percent || l != limit {
		t.Errorf("%s: GOGC %d, limit %d; want %d, %d", when, p, l, percent, limit)
	}
}

// TestLoads: a load lowers the limit to its bound, loads at once share the
// largest, the last one restores the limit before them, and a lower limit
// in force is left alone.
func TestLoads(t *testing.T) {
	startup(t)
	end := Load(100)
	want(t, "during a load", 100, 100)
	end2 := Load(300)
	want(t, "during two loads", 100, 300)
	end()
	end() // a second call does nothing
	want(t, "after the first of two loads", 100, 300)
	end2()
	want(t, "after the loads", 100, math.MaxInt64)

	debug.SetMemoryLimit(64)
	end = Load(100)
	want(t, "a load under a lower limit", 100, 64)
	end()
	want(t, "after it", 100, 64)
}

// TestRegimesDoNotUndoEachOther: whatever order the daemon's quiet regime
// and a load act in, a load runs with its bound and the start-up GOGC, and
// after it the quiet regime's latest limit is in force; leaving the quiet
// regime gives the start-up settings back.
func TestRegimesDoNotUndoEachOther(t *testing.T) {
	startup(t)
	if !Quiet(500) {
		t.Fatal("Quiet refused with neither GOGC nor GOMEMLIMIT set")
	}
	want(t, "quiet", -1, 500)

	end := Load(200)
	want(t, "a load while quiet", 100, 200)
	Follow(800) // a collection during the load
	want(t, "a collection during the load", 100, 200)
	Quiet(900)
	want(t, "quiet again during the load", 100, 200)
	end()
	want(t, "after the load", -1, 900)
	if !IsQuiet() {
		t.Error("not quiet after the load")
	}

	Wake()
	want(t, "awake", 100, math.MaxInt64)
	Follow(700) // a collection that ends after Wake
	want(t, "a collection after Wake", 100, math.MaxInt64)

	end = Load(200)
	Quiet(600) // a load that ends after the daemon's
	want(t, "quiet during a load", 100, 200)
	if IsQuiet() {
		t.Error("quiet during a load")
	}
	Wake()
	end()
	want(t, "after the load, awake", 100, math.MaxInt64)
}

// TestAdministratorsSettings: with GOGC or GOMEMLIMIT set, nothing is
// touched.
func TestAdministratorsSettings(t *testing.T) {
	startup(t)
	t.Setenv("GOMEMLIMIT", "1GiB")
	if Quiet(500) {
		t.Error("Quiet took charge with GOMEMLIMIT set")
	}
	Load(100)()
	want(t, "with GOMEMLIMIT set", 100, math.MaxInt64)
	t.Setenv("GOMEMLIMIT", "")
	t.Setenv("GOGC", "50")
	Load(100)()
	Quiet(500)
	want(t, "with GOGC set", 100, math.MaxInt64)
}

// TestLoadFollowsLiveHeap: a load whose live heap outgrows its bound runs
// with a limit above that heap after the next collection (a limit at the
// live heap makes every few allocations collect), and the bound is back
// for the next load.
func TestLoadFollowsLiveHeap(t *testing.T) {
	startup(t)
	const live = 64 << 20
	end := followsLiveHeap(t, live, "a load", func() func() { return Load(1 << 20) })
	end()
	want(t, "after the load", 100, math.MaxInt64)
	end = Load(1 << 20)
	if _, l := settings(); l >= live {
		t.Errorf("the next load starts at a limit of %d MiB: the last load's floor was kept", l>>20)
	}
	end()
}

// TestOneShot: a one-shot process runs with GOGC off and the one-shot
// limit, a load in it with the load's settings, the one-shot settings are
// back after the load, and the start-up ones after the regime ends; the
// administrator's settings are left alone.
func TestOneShot(t *testing.T) {
	startup(t)
	end := OneShot()
	want(t, "one-shot", -1, oneShotLimit)
	endLoad := Load(200)
	want(t, "a load in a one-shot process", 100, 200)
	endLoad()
	if p, l := settings(); p != -1 || l < oneShotLimit {
		t.Errorf("after the load: GOGC %d, limit %d; want -1, at least %d", p, l, oneShotLimit)
	}
	end()
	end() // a second call does nothing
	want(t, "after the regime", 100, math.MaxInt64)

	debug.SetMemoryLimit(1 << 20)
	OneShot()()
	end = OneShot()
	want(t, "one-shot under a lower limit", -1, 1<<20)
	end()
	want(t, "after it", 100, 1<<20)

	debug.SetMemoryLimit(math.MaxInt64)
	t.Setenv("GOGC", "50")
	OneShot()
	want(t, "with GOGC set", 100, math.MaxInt64)
}

// TestOneShotFollowsLiveHeap: a one-shot process whose live heap outgrows
// the one-shot limit runs, after the next collection, with a limit above
// that heap (a limit at the live heap makes every few allocations collect).
func TestOneShotFollowsLiveHeap(t *testing.T) {
	startup(t)
	followsLiveHeap(t, oneShotLimit+oneShotLimit/2, "a one-shot process", OneShot)()
}

// followsLiveHeap holds live bytes, enters a regime with start, and waits
// until a collection has raised the memory limit above them by a quarter;
// it returns the regime's end.
func followsLiveHeap(t *testing.T, live int64, regime string, start func() func()) (end func()) {
	t.Helper()
	held := make([]byte, live)
	for i := range held {
		held[i] = 1
	}
	end = start()
	deadline := time.Now().Add(20 * time.Second)
	for {
		runtime.GC()
		if _, l := settings(); l >= live+live/4 {
			break
		}
		if time.Now().After(deadline) {
			_, l := settings()
			end()
			t.Fatalf("20 s into %s holding %d MiB, the limit is %d MiB", regime, live>>20, l>>20)
		}
		time.Sleep(10 * time.Millisecond) // the cleanup runs on its own goroutine after the cycle
	}
	runtime.KeepAlive(held)
	return end
}
