package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// latencyResult is part 2 for one monitor at one N.
type latencyResult struct {
	Strategy string // "drift-monitor" or "naive"
	Files    int
	Changes  int
	Detect   []time.Duration // write → drift record
	Resolve  []time.Duration // restore → resolved record
	Ready    time.Duration   // start → READY=1 (load + first full check)
	Cmd      string
}

// latency starts one monitor per fixture (all at once: they wait while
// another is changed) and makes changes to random declared files, taking
// the fixtures in turn so that every N sees the same machine: each change
// writes a file wrong (open, truncate, write, close, as a real writer),
// timed until the drift record naming it is read, then restores it, timed
// until the resolved record. A settle pause after READY=1 lets the runtime
// return the memory of loading first (steady state is what is measured).
func (b *bench) latency(ctx context.Context, fs []*fixture, strategy string, changes int, settle time.Duration) ([]*latencyResult, error) {
	var ms []*monitor
	defer func() {
		for _, m := range ms {
			m.stop()
		}
	}()
	var res []*latencyResult
	var rngs []*rand.Rand
	for _, f := range fs {
		argv, err := b.monitorArgv(f, strategy)
		if err != nil {
			return nil, err
		}
		m, err := startMonitor(ctx, 10*time.Minute, argv...)
		if err != nil {
			return nil, err
		}
		ms = append(ms, m)
		res = append(res, &latencyResult{Strategy: strategy, Files: len(f.Paths), Changes: changes, Ready: m.readyAt.Sub(m.started), Cmd: shellQuote(argv)})
		rngs = append(rngs, rand.New(rand.NewPCG(uint64(len(f.Paths)), 42)))
	}
	select {
	case <-time.After(settle):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	// A naive monitor may take seconds per event at large N.
	timeout := 60 * time.Second
	for _, m := range ms {
		m.drain()
	}
	for k := 0; k < changes; k++ {
		for j, f := range fs {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			if err := changeOnce(ms[j], res[j], f, rngs[j].IntN(len(f.Paths)), k, timeout); err != nil {
				return nil, err
			}
		}
		if (k+1)%100 == 0 || k+1 == changes {
			b.logf("part 2 %s: %d/%d changes at each N", strategy, k+1, changes)
		}
	}
	// DRIFT_BENCH_SAMPLES=FILE keeps every sample, in order (for
	// investigations: where in the run the slow ones fall).
	if p := os.Getenv("DRIFT_BENCH_SAMPLES"); p != "" {
		if err := appendSamples(p, res); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// monitorArgv is the command of the monitor of a strategy over f.
func (b *bench) monitorArgv(f *fixture, strategy string) ([]string, error) {
	var argv []string
	switch strategy {
	case "drift-monitor":
		// As deployed, with a state cache of its own, empty: start-up
		// parses (as the naive monitor does), then the daemon holds the
		// contents as digests.
		dir, err := freshCacheDir(f)
		if err != nil {
			return nil, err
		}
		argv = []string{"env", "CACHE_DIRECTORY=" + dir, b.bin, "daemon", "--root", f.Root, "--config", f.Cfg, "--interval", "0"}
	case "naive":
		argv = []string{b.self, "naive", "--root", f.Root, "--config", f.Cfg}
	}
	return argv, nil
}

// changeOnce writes declared file i of f wrong (change k) and restores it,
// timing m's drift and resolved records into r.
func changeOnce(m *monitor, r *latencyResult, f *fixture, i, k int, timeout time.Duration) error {
	p := f.Paths[i]
	host := filepath.Join(f.Root, p)
	t0 := time.Now()
	if err := os.WriteFile(host, wrong(i, k), 0o644); err != nil {
		return err
	}
	at, err := m.waitRecord(msgDrift, p, timeout)
	if err != nil {
		return fmt.Errorf("%s N=%d change %d: %w", r.Strategy, len(f.Paths), k, err)
	}
	r.Detect = append(r.Detect, at.Sub(t0))
	t1 := time.Now()
	if err := os.WriteFile(host, content(i), 0o644); err != nil {
		return err
	}
	at, err = m.waitRecord(msgResolved, p, timeout)
	if err != nil {
		return fmt.Errorf("%s N=%d restore %d: %w", r.Strategy, len(f.Paths), k, err)
	}
	r.Resolve = append(r.Resolve, at.Sub(t1))
	return nil
}

// appendSamples appends every sample of res to the file p.
func appendSamples(p string, res []*latencyResult) error {
	var out strings.Builder
	for _, r := range res {
		for k := range r.Detect {
			fmt.Fprintf(&out, "%s %d %d %d %d\n", r.Strategy, r.Files, k, r.Detect[k].Microseconds(), r.Resolve[k].Microseconds())
		}
	}
	f, err := os.OpenFile(p, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	_, err = f.WriteString(out.String())
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
