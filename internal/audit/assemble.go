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
	// free holds events that came out, for the next ones: a storm's
	// events would otherwise cost an allocation or two each.
	free []*pendingEvent
	in   interner
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
func (a *Assembler) Add(r Record, now time.Time) []Event { return a.Append(nil, r, now) }

// Append is Add appending the events to out.
func (a *Assembler) Append(out []Event, r Record, now time.Time) []Event {
	if a.pending == nil {
		a.pending = map[Stamp]*pendingEvent{}
	}
	switch r.Type {
	case TypeConfigChange:
		return append(out, event([]Record{r}, false, &a.in))
	case TypeEOE:
		p := a.pending[r.Stamp]
		if p == nil {
			return out // an event with no record we keep
		}
		delete(a.pending, r.Stamp)
		return append(out, a.done(p, false))
	}
	p := a.pending[r.Stamp]
	if p == nil {
		a.seq++
		p = a.fresh()
		p.first, p.seq = now, a.seq
		a.pending[r.Stamp] = p
		a.began = append(a.began, begun{r.Stamp, p.seq})
		if len(a.began)-a.head > 4*(a.MaxPending+1) {
			a.compact()
		}
	}
	if len(p.recs) < maxRecords {
		p.recs = append(p.recs, r)
	}
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
	return a.done(p, true)
}

// fresh is an empty pending event, a former one if there is one.
func (a *Assembler) fresh() *pendingEvent {
	if n := len(a.free); n > 0 {
		p := a.free[n-1]
		a.free = a.free[:n-1]
		return p
	}
	return &pendingEvent{recs: make([]Record, 0, 4)}
}

// done makes p's event and keeps p for a later one (event copies out
// what it keeps of the records).
func (a *Assembler) done(p *pendingEvent, partial bool) Event {
	e := event(p.recs, partial, &a.in)
	clear(p.recs)
	p.recs = p.recs[:0]
	if len(a.free) < 64 {
		a.free = append(a.free, p)
	}
	return e
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
