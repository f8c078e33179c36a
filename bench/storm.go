package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// stormResult is part 5 for one way of running the daemon: its resident
// memory through repeated storms of file rewrites, each followed by a quiet
// pause. Memory that a burst leaves behind, and that grows from one burst to
// the next, shows here and nowhere else: parts 2 and 3 change one file at a
// time or none.
type stormResult struct {
	Variant  string // "default", or the GOGC=100 reference
	Files    int
	Storm    int           // files rewritten (then restored) per storm
	Pause    time.Duration // the quiet pause after each storm
	Ready    time.Duration
	Baseline int64 // VmRSS after READY=1 and the settle pause, before any storm
	Storms   []stormStep
	HWM      int64 // VmHWM at the end
	Cmd      string
}

type stormStep struct {
	Took   time.Duration // first write → the last resolved record
	After  int64         // VmRSS when the last resolved record was read
	Paused int64         // VmRSS at the end of the quiet pause
}

// lastPaused is the resident memory after the last storm's pause.
func (r *stormResult) lastPaused() int64 {
	if len(r.Storms) == 0 {
		return 0
	}
	return r.Storms[len(r.Storms)-1].Paused
}

// storms starts the daemon warm on f (its cache entry written by an
// untimed `check` first, as a restart finds it), lets it settle, then runs
// storms: each rewrites `size` declared files wrong (as part 2 does: same
// length, other first bytes), waits for the drift record of every one,
// restores them all and waits for every resolved record, then pauses
// quietly. env is added to the daemon's environment (GOGC=100 for the
// reference run).
func (b *bench) storms(ctx context.Context, f *fixture, variant string, env []string, storms, size int, settle, pause time.Duration) (*stormResult, error) {
	size = min(size, len(f.Paths))
	dir := filepath.Join(f.Dir, "daemon-cache")
	fill := exec.CommandContext(ctx, b.bin, "check", "--root", f.Root, "--config", f.Cfg)
	fill.Env = append(os.Environ(), "CACHE_DIRECTORY="+dir)
	if out, err := fill.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("filling the state cache: %v: %v\n%s", fill.Args, err, out)
	}
	argv := append([]string{"env", "CACHE_DIRECTORY=" + dir}, env...)
	argv = append(argv, b.bin, "daemon", "--root", f.Root, "--config", f.Cfg, "--bus=false")
	m, err := startMonitor(ctx, 10*time.Minute, argv...)
	if err != nil {
		return nil, err
	}
	defer m.stop()
	pid := m.pid()
	res := &stormResult{Variant: variant, Files: len(f.Paths), Storm: size, Pause: pause, Ready: m.readyAt.Sub(m.started), Cmd: shellQuote(argv)}
	if err := quiet(ctx, settle); err != nil {
		return nil, err
	}
	m.drain()
	res.Baseline = memOf(pid, "VmRSS")
	rng := rand.New(rand.NewPCG(uint64(len(f.Paths)), 5))
	// Bounds, not expectations: 5,000 drifts take seconds.
	timeout := 5 * time.Minute
	for k := range storms {
		pick := rng.Perm(len(f.Paths))[:size]
		t0 := time.Now()
		want := map[string]bool{}
		for _, i := range pick {
			if err := os.WriteFile(filepath.Join(f.Root, f.Paths[i]), wrong(i, k), 0o644); err != nil {
				return nil, err
			}
			want[f.Paths[i]] = true
		}
		if err := m.waitRecords(msgDrift, want, timeout); err != nil {
			return nil, fmt.Errorf("storm %d: %w", k+1, err)
		}
		for _, i := range pick {
			if err := os.WriteFile(filepath.Join(f.Root, f.Paths[i]), content(i), 0o644); err != nil {
				return nil, err
			}
			want[f.Paths[i]] = true
		}
		if err := m.waitRecords(msgResolved, want, timeout); err != nil {
			return nil, fmt.Errorf("storm %d restored: %w", k+1, err)
		}
		step := stormStep{Took: time.Since(t0), After: memOf(pid, "VmRSS")}
		if err := quiet(ctx, pause); err != nil {
			return nil, err
		}
		m.drain()
		step.Paused = memOf(pid, "VmRSS")
		res.Storms = append(res.Storms, step)
		b.logf("part 5 %s: storm %d/%d of %d files in %s: VmRSS %s after, %s after %s quiet",
			variant, k+1, storms, size, fmtDur(step.Took), fmtMB(step.After), fmtMB(step.Paused), pause)
	}
	res.HWM = memOf(pid, "VmHWM")
	return res, nil
}

// quiet waits d (a measured pause, not a synchronisation) unless ctx ends.
func quiet(ctx context.Context, d time.Duration) error {
	select {
	case <-time.After(d):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// waitRecords consumes records until one of the type has named each
// path in want, which it empties.
func (m *monitor) waitRecords(id string, want map[string]bool, timeout time.Duration) error {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for len(want) > 0 {
		select {
		case r := <-m.recs:
			m.keep(r.Line)
			if r.Type == id {
				delete(want, r.Path)
			}
		case err := <-m.exited:
			m.exited <- err
			return fmt.Errorf("monitor exited (%v) with %d records %s to come:\n%s", err, len(want), id, strings.Join(m.tail, "\n"))
		case <-deadline.C:
			return fmt.Errorf("%d records %s still missing after %s:\n%s", len(want), id, timeout, strings.Join(m.tail, "\n"))
		}
	}
	return nil
}
