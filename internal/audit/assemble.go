package audit

import "time"

// Assembler turns records, in the order the kernel sent them, into events:
// the records of one stamp, complete when their EOE arrives. An event whose
// EOE never comes (a record lost, the kernel's backlog full, a userspace
// record, which has none) is flushed partial once it is older than Bound,
// or once more than MaxPending events wait. A CONFIG_CHANGE record is an
// event of its own at once: the kernel writes it while the syscall that
// caused it (auditctl's sendto) is still running, and a rule removed under
// us must be answered without waiting.
//
// What a record costs does not grow with the events waiting: they are kept
// in the order they began, which is the order of their first records'
// arrival and so of their ages, and flushing takes them from the front.
type Assembler struct {
	// Bound is how long an incomplete event waits for its EOE.
	Bound time.Duration
	// MaxPending bounds the events waiting for their EOE.
	MaxPending int

	pending map[Stamp]*pendingEvent
	// began holds the waiting events in the order they began, from head
	// on; an entry whose event has come out since is skipped (its seq is
	// not the pending event's).
	began []begun
	head  int
	seq   uint64
}

type pendingEvent struct {
	recs  []Record
	first time.Time
	seq   uint64
}

type begun struct {
	stamp Stamp
	seq   uint64
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
		a.seq++
		p = &pendingEvent{first: now, seq: a.seq}
		a.pending[r.Stamp] = p
		a.began = append(a.began, begun{r.Stamp, p.seq})
		if len(a.began)-a.head > 4*(a.MaxPending+1) {
			a.compact()
		}
	}
	if len(p.recs) < maxRecords {
		p.recs = append(p.recs, r)
	}
	var out []Event
	for len(a.pending) > a.MaxPending {
		out = append(out, a.takeOldest())
	}
	return out
}

// Flush returns, partial, the events that waited longer than Bound.
func (a *Assembler) Flush(now time.Time) []Event {
	var out []Event
	for {
		p := a.oldest()
		if p == nil || now.Sub(p.first) < a.Bound {
			return out
		}
		out = append(out, a.takeOldest())
	}
}

// Pending is the number of events waiting for their EOE.
func (a *Assembler) Pending() int { return len(a.pending) }

// oldest is the event that began first of those waiting, nil for none;
// the entries of events that came out since are dropped on the way.
func (a *Assembler) oldest() *pendingEvent {
	for a.head < len(a.began) {
		b := a.began[a.head]
		if p := a.pending[b.stamp]; p != nil && p.seq == b.seq {
			return p
		}
		a.head++
	}
	a.began, a.head = a.began[:0], 0
	return nil
}

// compact drops the entries of events that came out since they began:
// events completed behind one that waits long would otherwise pile up.
func (a *Assembler) compact() {
	kept := a.began[:0]
	for _, b := range a.began[a.head:] {
		if p := a.pending[b.stamp]; p != nil && p.seq == b.seq {
			kept = append(kept, b)
		}
	}
	a.began, a.head = kept, 0
}

// takeOldest takes out the oldest waiting event, partial; there is one.
func (a *Assembler) takeOldest() Event {
	p := a.oldest()
	st := a.began[a.head].stamp
	a.head++
	delete(a.pending, st)
	if a.head > len(a.began)/2 {
		// Keep the list's length within twice the events waiting.
		a.began, a.head = append(a.began[:0], a.began[a.head:]...), 0
	}
	return event(p.recs, true)
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
