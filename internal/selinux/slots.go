package selinux

// Slots remember one answer per position of a list of paths that is asked
// about at every pass (a daemon's declared entries): the answer for
// position i is found by its index, without hashing the path, and with no
// lock. Each position must be asked about by one goroutine at a time, and
// a pass's answers reach the next pass's goroutines through whatever
// orders the passes.
type Slots struct {
	owner any
	s     []slot
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
// AnyType): the first only, as Get will ask again with the same path and
// type, and another is asked of the policy (a node of another type).
func (s *Slots) Put(i int, p string, t FileType, context string, ok bool) {
	if x := &s.s[i]; x.typ == AnyType {
		*x = slot{path: p, context: context, typ: t, ok: ok}
	}
}

// Len is the number of positions.
func (s *Slots) Len() int { return len(s.s) }

// Slots returns m's slots for n positions of the list owner names: those
// of the last call when it named the same list (a daemon's next pass over
// the same state), else new ones. Safe for concurrent use with Lookup; the
// slots themselves are as Slots says.
func (m *Memo) Slots(owner any, n int) *Slots {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.slots == nil || m.slots.owner != owner || m.slots.Len() != n {
		m.slots = NewSlots(n)
		m.slots.owner = owner
	}
	return m.slots
}
