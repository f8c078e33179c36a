package selinux

import "sync"

// Memo remembers a Contexts' answers by path and type: a Contexts never
// changes once loaded and Lookup is a function of its arguments, so a
// daemon that checks the same declared paths at every pass asks the
// regular expressions once per path and policy, not once per pass. Safe
// for concurrent use; it grows with the paths asked about (the declared
// ones), and is dropped with its Contexts when the policy changes.
type Memo struct {
	c     *Contexts
	mu    sync.RWMutex
	m     map[memoKey]memoAnswer
	slots *Slots // by position (slots.go)
}

type memoKey struct {
	path string
	typ  FileType
}

type memoAnswer struct {
	context string
	ok      bool
}

// NewMemo remembers c's answers.
func NewMemo(c *Contexts) *Memo { return &Memo{c: c, m: map[memoKey]memoAnswer{}} }

// Lookup is c.Lookup, remembered.
func (m *Memo) Lookup(p string, t FileType) (string, bool) {
	k := memoKey{p, t}
	m.mu.RLock()
	a, ok := m.m[k]
	m.mu.RUnlock()
	if ok {
		return a.context, a.ok
	}
	a.context, a.ok = m.c.Lookup(p, t)
	m.mu.Lock()
	m.m[k] = a
	m.mu.Unlock()
	return a.context, a.ok
}
