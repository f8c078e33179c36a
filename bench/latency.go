package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
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

// latency starts the monitor on the fixture and makes changes random
// declared files: each is written wrong (open, truncate, write, close, as a
// real writer), timed until the drift record naming it is read, then
// restored and timed until the resolved record.
func (b *bench) latency(ctx context.Context, f *fixture, strategy string, changes int) (*latencyResult, error) {
	var argv []string
	switch strategy {
	case "drift-monitor":
		argv = []string{b.bin, "daemon", "--root", f.Root, "--config", f.Cfg, "--interval", "0"}
	case "naive":
		argv = []string{b.self, "naive", "--root", f.Root, "--config", f.Cfg}
	}
	m, err := startMonitor(ctx, 10*time.Minute, argv...)
	if err != nil {
		return nil, err
	}
	defer m.stop()
	res := &latencyResult{Strategy: strategy, Files: len(f.Paths), Changes: changes, Ready: m.readyAt.Sub(m.started), Cmd: shellQuote(argv)}
	rng := rand.New(rand.NewPCG(uint64(len(f.Paths)), 42))
	// A naive monitor may take seconds per event at large N.
	timeout := 60 * time.Second
	m.drain()
	for k := 0; k < changes; k++ {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		i := rng.IntN(len(f.Paths))
		p := f.Paths[i]
		host := filepath.Join(f.Root, p)
		t0 := time.Now()
		if err := os.WriteFile(host, wrong(i, k), 0o644); err != nil {
			return nil, err
		}
		at, err := m.waitRecord(msgDrift, p, timeout)
		if err != nil {
			return nil, fmt.Errorf("%s N=%d change %d: %w", strategy, len(f.Paths), k, err)
		}
		res.Detect = append(res.Detect, at.Sub(t0))
		t1 := time.Now()
		if err := os.WriteFile(host, content(i), 0o644); err != nil {
			return nil, err
		}
		at, err = m.waitRecord(msgResolved, p, timeout)
		if err != nil {
			return nil, fmt.Errorf("%s N=%d restore %d: %w", strategy, len(f.Paths), k, err)
		}
		res.Resolve = append(res.Resolve, at.Sub(t1))
		if (k+1)%50 == 0 {
			b.logf("part 2 %s N=%d: %d/%d changes", strategy, len(f.Paths), k+1, changes)
		}
	}
	return res, nil
}
