// Package parttest is a fake part.Host for the unit tests of the daemon's
// parts: it keeps the records, runs Do's functions one at a time (as the
// event loop would) and counts HoldChanged. Tests only: no production code
// imports it.
package parttest

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/drift-monitor/drift-monitor/internal/drift"
)

// Record is one record a part journaled, its fields as strings.
type Record struct {
	Level  slog.Level
	ID     string
	Msg    string
	Fields map[string]string
}

// Host is the fake. Its zero value is ready.
type Host struct {
	// loop serialises the "loop": Do's functions and OnLoop's.
	loop sync.Mutex

	// Inactive is what Active answers, negated: reports held (set it on
	// the loop, OnLoop).
	Inactive bool
	// Exclude answers Excluded (nil: nothing is excluded).
	Exclude func(*drift.Drift) bool

	mu      sync.Mutex
	records []Record
	holds   int
	counts  int
	checks  []string
	// known is the drift Report made known, by entry id.
	known   map[string][]drift.Drift
	changed chan struct{} // closed and replaced on every record, report, full check and HoldChanged
}

// Record keeps the record.
func (h *Host) Record(_ context.Context, level slog.Level, id, msg string, attrs ...slog.Attr) {
	r := Record{Level: level, ID: id, Msg: msg, Fields: map[string]string{}}
	for _, a := range attrs {
		r.Fields[a.Key] = a.Value.String()
	}
	h.mu.Lock()
	h.records = append(h.records, r)
	h.wakeLocked()
	h.mu.Unlock()
}

// Log discards.
func (h *Host) Log() *slog.Logger { return slog.New(slog.DiscardHandler) }

// Do runs f as the loop would: one at a time with OnLoop's.
func (h *Host) Do(ctx context.Context, f func(context.Context)) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	h.loop.Lock()
	defer h.loop.Unlock()
	f(ctx)
	return nil
}

// RecordDrift keeps the record, with the drift's kind and path as its
// DRIFT_KIND and DRIFT_PATH fields.
func (h *Host) RecordDrift(ctx context.Context, level slog.Level, id, msg string, dr *drift.Drift) {
	h.Record(ctx, level, id, msg, slog.String("DRIFT_KIND", string(dr.Kind)), slog.String("DRIFT_PATH", dr.Path))
}

// Active is !Inactive.
func (h *Host) Active() bool { return !h.Inactive }

// Report keeps ds as the drift known of id.
func (h *Host) Report(_ context.Context, id string, ds []drift.Drift) {
	h.mu.Lock()
	if h.known == nil {
		h.known = map[string][]drift.Drift{}
	}
	if len(ds) == 0 {
		delete(h.known, id)
	} else {
		h.known[id] = ds
	}
	h.wakeLocked()
	h.mu.Unlock()
}

// Known returns the drift Report made known, by entry id.
func (h *Host) Known() map[string][]drift.Drift {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := map[string][]drift.Drift{}
	for k, v := range h.known {
		out[k] = v
	}
	return out
}

// FullCheck keeps why.
func (h *Host) FullCheck(_ context.Context, why string) {
	h.mu.Lock()
	h.checks = append(h.checks, why)
	h.wakeLocked()
	h.mu.Unlock()
}

// FullChecks returns the reasons of the full checks asked for so far.
func (h *Host) FullChecks() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.checks...)
}

// Excluded asks Exclude.
func (h *Host) Excluded(dr *drift.Drift) bool { return h.Exclude != nil && h.Exclude(dr) }

// CountsChanged counts.
func (h *Host) CountsChanged() {
	h.mu.Lock()
	h.counts++
	h.mu.Unlock()
}

// HoldChanged counts.
func (h *Host) HoldChanged(context.Context) {
	h.mu.Lock()
	h.holds++
	h.wakeLocked()
	h.mu.Unlock()
}

// OnLoop runs f as the loop would: what a test calls on a part that has
// goroutines of its own goes through it.
func (h *Host) OnLoop(f func()) {
	h.loop.Lock()
	defer h.loop.Unlock()
	f()
}

// HoldChanges is how many times HoldChanged was called.
func (h *Host) HoldChanges() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.holds
}

// Records returns the records kept so far.
func (h *Host) Records() []Record {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]Record(nil), h.records...)
}

// Find returns the records of type id.
func (h *Host) Find(id string) []Record {
	var out []Record
	for _, r := range h.Records() {
		if r.ID == id {
			out = append(out, r)
		}
	}
	return out
}

// Wait waits, at most within, until cond holds, and fails the test if it
// does not. cond runs as the loop would (OnLoop), first at once, then
// after every record and every HoldChanged.
func (h *Host) Wait(t testing.TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.NewTimer(within)
	defer deadline.Stop()
	for {
		h.mu.Lock()
		if h.changed == nil {
			h.changed = make(chan struct{})
		}
		ch := h.changed
		h.mu.Unlock()
		var ok bool
		h.OnLoop(func() { ok = cond() })
		if ok {
			return
		}
		select {
		case <-ch:
		case <-deadline.C:
			t.Fatalf("%s: not within %s; records:\n%s", what, within, dump(h.Records()))
		}
	}
}

// Has reports whether a record of type id whose message contains text was
// kept.
func (h *Host) Has(id, text string) bool {
	for _, r := range h.Find(id) {
		if strings.Contains(r.Msg, text) {
			return true
		}
	}
	return false
}

func (h *Host) wakeLocked() {
	if h.changed != nil {
		close(h.changed)
		h.changed = nil
	}
}

func dump(rs []Record) string {
	s := ""
	for _, r := range rs {
		s += fmt.Sprintf("  %s %s %q %v\n", r.Level, r.ID, r.Msg, r.Fields)
	}
	return s
}
