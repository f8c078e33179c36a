package main

import (
	"bytes"
	"os"
	"runtime/metrics"
	"runtime/pprof"
	"sync"
	"time"
)

// peakProfiler keeps the heap profile taken when the live heap was at its
// largest (`drift-bench phases -peakprofile`, `drift-bench daemon-peak`):
// what a load holds at its memory peak, which an allocation profile (what
// was allocated, live or not) does not say. Both the live heap
// (/gc/heap/live:bytes) and the heap profile's in-use figures are those of
// a completed collection, so the profile is taken when a collection found
// more alive than any before it (by a MiB), not when the heap, garbage
// included, was largest: that moment's profile would show the collection
// before it.
type peakProfiler struct {
	stop chan struct{}
	done chan struct{}
	mu   sync.Mutex
	max  uint64
	prof []byte
}

// startPeakProfiler samples the heap every interval until stopped.
func startPeakProfiler(interval time.Duration) *peakProfiler {
	p := &peakProfiler{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(p.done)
		s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-p.stop:
				return
			case <-t.C:
			}
			metrics.Read(s)
			if v := s[0].Value.Uint64(); v > p.max+(1<<20) {
				var b bytes.Buffer
				if pprof.Lookup("heap").WriteTo(&b, 0) == nil {
					p.mu.Lock()
					p.max, p.prof = v, b.Bytes()
					p.mu.Unlock()
				}
			}
		}
	}()
	return p
}

// write stops the sampling and writes the profile of the peak to path.
func (p *peakProfiler) write(path string) error {
	close(p.stop)
	<-p.done
	return os.WriteFile(path, p.prof, 0o644)
}
