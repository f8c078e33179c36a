package daemon

import (
	"context"
	"regexp"
	"testing"
	"time"
)

// passRecord is the debug record of a full pass as drift-bench's part 7
// reads it (bench/labels.go, passTook).
var passRecord = regexp.MustCompile(`^full check \(first check\): \d+ entries, \d+ differences, took ([0-9.]+[a-zµ]+), CPU ([0-9.]+[a-zµ]+)$`)

// TestFullCheckTimed: a full pass's debug record says how long it took and
// the process's CPU time meanwhile, both durations a reader can parse.
func TestFullCheckTimed(t *testing.T) {
	d, _, log := syntheticDaemon(t, Options{})
	from := log.mark()
	d.fullCheck(context.Background(), "first check")
	log.mu.Lock()
	defer log.mu.Unlock()
	var msgs []string
	for _, m := range log.got[from:] {
		msgs = append(msgs, m["MESSAGE"])
		s := passRecord.FindStringSubmatch(m["MESSAGE"])
		if s == nil {
			continue
		}
		for _, v := range s[1:] {
			if _, err := time.ParseDuration(v); err != nil {
				t.Errorf("%q: %v", m["MESSAGE"], err)
			}
		}
		return
	}
	t.Fatalf("no record of the pass with its wall-clock and CPU times among %q", msgs)
}

// TestProcessCPU: the process's CPU time grows with work done.
func TestProcessCPU(t *testing.T) {
	before := processCPU()
	if before <= 0 {
		t.Fatalf("processCPU() = %v at the start of a test", before)
	}
	x, deadline := 0, time.Now().Add(time.Minute)
	for processCPU()-before < 5*time.Millisecond {
		if time.Now().After(deadline) {
			t.Fatalf("processCPU() still %v after a minute of work, from %v", processCPU(), before)
		}
		for i := range 1 << 16 {
			x += i
		}
	}
	_ = x
}
