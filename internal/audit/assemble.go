package audit

import (
	"sort"
	"time"
)

// Assembler turns records, in the order the kernel sent them, into events:
// the records of one stamp, complete when their EOE arrives. An event whose
// EOE never comes (a record lost, the kernel's backlog full) is flushed
// partial once it is older than Bound, or once more than MaxPending events
// wait. A CONFIG_CHANGE record is an event of its own at once: the kernel
// writes it while the syscall that caused it (auditctl's sendto) is still
// running, and a rule removed under us must be answered without waiting.
type Assembler struct {
	// Bound is how long an incomplete event waits for its EOE.
	Bound time.Duration
	// MaxPending bounds the events waiting for their EOE.
	MaxPending int

	pending map[Stamp]*pendingEvent
}

type pendingEvent struct {
	recs  []Record
	first time.Time
}

// maxRecords bounds the records kept of one event (a rename has five PATH
// items; an execve with many arguments more, none of which we read).
const maxRecords = 16

// NewAssembler returns an Assembler with bounds that suit a live stream:
// the kernel sends an event's records within one syscall exit.
func NewAssembler() *Assembler {
	return &Assembler{Bound: 2 * time.Second, MaxPending: 1024}
}

// Add takes one record received at now and returns the events it
// completes, and those it forces out (partial) to keep within bounds.
func (a *Assembler) Add(r Record, now time.Time) []Event {
	if a.pending == nil {
		a.pending = map[Stamp]*pendingEvent{}
	}
	switch r.Type {
	case TypeConfigChange:
		return []Event{event([]Record{r}, false)}
	case TypeEOE:
		p := a.pending[r.Stamp]
		if p == nil {
			return nil // an event with no record we keep
		}
		delete(a.pending, r.Stamp)
		return []Event{event(p.recs, false)}
	}
	p := a.pending[r.Stamp]
	if p == nil {
		p = &pendingEvent{first: now}
		a.pending[r.Stamp] = p
	}
	if len(p.recs) < maxRecords {
		p.recs = append(p.recs, r)
	}
	var out []Event
	if len(a.pending) > a.MaxPending {
		out = a.flush(func(st Stamp, _ *pendingEvent, n int) bool { return n < len(a.pending)-a.MaxPending })
	}
	return out
}

// Flush returns, partial, the events that waited longer than Bound.
func (a *Assembler) Flush(now time.Time) []Event {
	return a.flush(func(_ Stamp, p *pendingEvent, _ int) bool { return now.Sub(p.first) >= a.Bound })
}

// Pending is the number of events waiting for their EOE.
func (a *Assembler) Pending() int { return len(a.pending) }

// flush takes out, oldest first, the events for which take says so (n
// counts those already taken).
func (a *Assembler) flush(take func(Stamp, *pendingEvent, int) bool) []Event {
	stamps := make([]Stamp, 0, len(a.pending))
	for st := range a.pending {
		stamps = append(stamps, st)
	}
	sort.Slice(stamps, func(i, j int) bool { return stamps[i].Before(stamps[j]) })
	var out []Event
	for _, st := range stamps {
		p := a.pending[st]
		if !take(st, p, len(out)) {
			continue
		}
		delete(a.pending, st)
		out = append(out, event(p.recs, true))
	}
	return out
}

// Before orders stamps as the kernel issued them.
func (s Stamp) Before(t Stamp) bool {
	if s.Serial != t.Serial {
		return s.Serial < t.Serial
	}
	if s.Sec != t.Sec {
		return s.Sec < t.Sec
	}
	return s.Milli < t.Milli
}

// Time is the stamp's wall-clock time.
func (s Stamp) Time() time.Time { return time.Unix(s.Sec, int64(s.Milli)*int64(time.Millisecond)) }
