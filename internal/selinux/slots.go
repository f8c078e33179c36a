package selinux

// Slots remember one answer per position of a list of paths that is asked
// about at every pass (a daemon's declared entries): the answer for
// position i is found by its index, without hashing the path, and with no
// lock. Each position must be asked about by one goroutine at a time, and
// a pass's answers reach the next pass's goroutines through whatever
// orders the passes.
type Slots struct {
	s []slot
}

type slot struct {
	path, context string
	typ           FileType // AnyType: nothing remembered
	ok            bool
}

// NewSlots are slots for n positions.
func NewSlots(n int) *Slots { return &Slots{s: make([]slot, n)} }

// Get returns the answer remembered at position i for p as a node of
// type t (not AnyType), and whether one is.
func (s *Slots) Get(i int, p string, t FileType) (context string, ok, found bool) {
	if x := &s.s[i]; x.typ == t && x.path == p {
		return x.context, x.ok, true
	}
	return "", false, false
}

// Put remembers at position i the answer for p as a node of type t (not
// AnyType), in place of one for another path (the list changed there); of
// two for the same path, the first, as Get will ask with the same path
// and type again, the other a node of another type.
func (s *Slots) Put(i int, p string, t FileType, context string, ok bool) {
	if x := &s.s[i]; x.typ == AnyType || x.path != p {
		*x = slot{path: p, context: context, typ: t, ok: ok}
	}
}

// Len is the number of positions.
func (s *Slots) Len() int { return len(s.s) }

// Slots returns m's slots for a list of n positions: those of the last
// call when it was for as many (a daemon's next pass over the same state,
// or over the same state reloaded: an answer is given only for the path
// it was put for), else new ones. Safe for concurrent use with Lookup; the
// slots themselves are as Slots says.
func (m *Memo) Slots(n int) *Slots {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.slots == nil || m.slots.Len() != n {
		m.slots = NewSlots(n)
	}
	return m.slots
}
