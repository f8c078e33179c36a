package check

import (
	"unsafe"

	"github.com/drift-monitor/drift-monitor/internal/model"
	"github.com/drift-monitor/drift-monitor/internal/selinux"
)

// Every declared node's label is compared with its path's default at every
// full check. Asking a map of every declared path for it again (the
// daemon's selinux.Memo) cost more than reading the label, so each entry's
// own default is kept by the entry's position in the state (selinux.Slots):
// found without hashing its path, and without a lock, since a pass gives
// each entry to one worker. Other paths (a hard link's other names) are
// asked as before.

// checks reports whether l compares labels: there is a policy to want
// them, loaded or kept.
func (l *Labels) checks() bool { return l != nil && (l.contexts != nil || l.kept != nil) }

// slotsFor are the slots of the entries' defaults: the memo's, which a
// daemon keeps from pass to pass (and through a reload) while the policy
// stays the same, or new ones.
func slotsFor(memo *selinux.Memo, entries []model.Entry) *selinux.Slots {
	if memo == nil || len(entries) == 0 {
		return selinux.NewSlots(len(entries))
	}
	return memo.Slots(len(entries))
}

// position is e's index in l.entries, or -1 when e is not one of them (a
// copy, or an entry of another state).
func (l *Labels) position(e *model.Entry) int {
	if len(l.entries) == 0 {
		return -1
	}
	base := uintptr(unsafe.Pointer(unsafe.SliceData(l.entries)))
	off := uintptr(unsafe.Pointer(e)) - base
	i := off / unsafe.Sizeof(l.entries[0])
	if off%unsafe.Sizeof(l.entries[0]) != 0 || i >= uintptr(len(l.entries)) || &l.entries[i] != e {
		return -1
	}
	return int(i)
}

// lookup is the policy's default for p as a node of type t: kept answers
// first (a check's), else the memo (a daemon's), else the policy itself.
func (l *Labels) lookup(p string, t selinux.FileType) (string, bool) {
	switch {
	case l.kept != nil:
		return l.kept.lookup(p, t, false)
	case l.memo != nil:
		return l.memo.Lookup(p, t)
	}
	return l.contexts.Lookup(p, t)
}

// fresh is lookup without the memo: an entry's own default is kept in its
// slot, and a memo of every declared path would only hold it twice.
func (l *Labels) fresh(p string, t selinux.FileType) (string, bool) {
	if l.kept != nil {
		return l.kept.lookup(p, t, true)
	}
	return l.contexts.Lookup(p, t)
}

// entryLookup looks up the defaults an entry's label is compared with: its
// own path's in its slot, any other path's through l.
type entryLookup struct {
	l *Labels
	e *model.Entry
}

func (x entryLookup) lookup(p string, t selinux.FileType) (string, bool) {
	if p != x.e.Path {
		return x.l.lookup(p, t)
	}
	i := x.l.position(x.e)
	if i < 0 {
		return x.l.lookup(p, t)
	}
	if k := x.l.kept; k != nil && k.own != nil {
		return k.ownLookup(i, p, t)
	}
	if c, ok, found := x.l.slots.Get(i, p, t); found {
		return c, ok
	}
	c, ok := x.l.fresh(p, t)
	x.l.slots.Put(i, p, t, c, ok)
	return c, ok
}
