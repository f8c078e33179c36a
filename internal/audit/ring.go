package audit

import (
	"path"
	"slices"
	"time"
)

// Ring keeps the last Cap write events, indexed by the inodes and the
// resolved paths their PATH items name, and by (parent inode, base name)
// for the entries they created or deleted, so that a drift found later can
// be traced to the writers that touched its path, its old or new inode, or
// its parent's entry of that name. Memory is bounded by Cap (and by
// maxRecords per event), not by the number of declared paths: an evicted
// event leaves every index.
//
// An event that repeats the newest one — the same writer (pid, ids, comm,
// exe, system call, result) touching the same nodes by the same names — is
// that event again, not one more: a writer appending to a file in a loop
// takes one place in the ring, not all of them, and its stamp becomes the
// repeat's. What an event costs does not grow with the events held: each
// index list drops its oldest in constant time.
type Ring struct {
	cap    int
	events []*ringEvent // circular, len cap once full
	next   uint64       // sequence number of the next event
	// lastEvicted is the stamp time of the newest evicted event: a drift
	// older than it may have lost its writer.
	lastEvicted time.Time
	evicted     uint64

	byInode, byGone index[Inode]
	byPath          index[string]
	byEntry         index[entryKey]
}

type entryKey struct {
	Parent Inode
	Base   string
}

// index is the sequence numbers of the events filed under each key,
// oldest first.
type index[K comparable] map[K][]uint64

// file appends seq to k's list, or (add false) drops seq from it if it is
// the oldest there (it is, for the oldest event held). Dropping reslices,
// in constant time; the list's array is copied, live part only, when an
// append outgrows it, so it stays within twice what it holds.
func (ix index[K]) file(k K, seq uint64, add bool) {
	if add {
		ix[k] = append(ix[k], seq)
		return
	}
	s := ix[k]
	if len(s) > 0 && s[0] == seq {
		s = s[1:]
	}
	if len(s) == 0 {
		delete(ix, k)
	} else {
		ix[k] = s
	}
}

type ringEvent struct {
	seq  uint64
	ev   Event
	keys []ringKey // the index keys it was filed under
}

// ringKey is one key an event is filed under: an inode it touched
// (keyInode: byInode), an inode a DELETE item named, which the kernel frees
// and reuses at once, so only a query for a node's former inode asks it
// (keyGone: byGone), a resolved path (keyPath: byPath, name), or a
// parent's entry by base name (keyEntry: byEntry, ino the parent, name
// the base).
type ringKey struct {
	kind uint8
	ino  Inode
	name string
}

const (
	keyInode uint8 = iota
	keyGone
	keyPath
	keyEntry
)

// NewRing returns a ring that keeps n events.
func NewRing(n int) *Ring {
	if n < 1 {
		n = 1
	}
	return &Ring{cap: n, byInode: index[Inode]{}, byGone: index[Inode]{}, byPath: index[string]{}, byEntry: index[entryKey]{}}
}

// Add files e, evicting the oldest event when the ring is full.
func (r *Ring) Add(e Event) {
	if last := r.newest(); last != nil && sameWrite(&last.ev, &e) {
		last.ev.Stamp = e.Stamp
		return
	}
	if len(r.events) == r.cap {
		old := r.events[r.next%uint64(r.cap)]
		r.evict(old)
	}
	re := &ringEvent{seq: r.next, ev: e, keys: ringKeys(&e)}
	for _, k := range re.keys {
		r.file(k, re.seq, true)
	}
	if len(r.events) < r.cap {
		r.events = append(r.events, re)
	} else {
		r.events[r.next%uint64(r.cap)] = re
	}
	r.next++
}

// file files seq under k in its index, or (add false) drops it, the
// oldest, from there.
func (r *Ring) file(k ringKey, seq uint64, add bool) {
	switch k.kind {
	case keyInode:
		r.byInode.file(k.ino, seq, add)
	case keyGone:
		r.byGone.file(k.ino, seq, add)
	case keyPath:
		r.byPath.file(k.name, seq, add)
	case keyEntry:
		r.byEntry.file(entryKey{k.ino, k.name}, seq, add)
	}
}

// newest is the event added last, nil for none.
func (r *Ring) newest() *ringEvent {
	if len(r.events) == 0 {
		return nil
	}
	return r.events[(r.next-1)%uint64(r.cap)]
}

// sameWrite reports whether b repeats a: the same writer, result and
// nodes, named alike; only the stamp may differ.
func sameWrite(a, b *Event) bool {
	if a.Writer != b.Writer || a.Key != b.Key || a.CWD != b.CWD || a.Partial != b.Partial || a.Config != nil || b.Config != nil || len(a.Paths) != len(b.Paths) {
		return false
	}
	for i := range a.Paths {
		if a.Paths[i] != b.Paths[i] {
			return false
		}
	}
	return true
}

// ringKeys are the keys e is filed under, each once.
func ringKeys(e *Event) []ringKey {
	var keys []ringKey
	add := func(k ringKey) {
		for _, have := range keys {
			if have == k {
				return
			}
		}
		keys = append(keys, k)
	}
	for _, p := range e.Paths {
		switch {
		case p.Inode.Ino == 0 || p.NameType == "PARENT":
		case p.NameType == "DELETE":
			add(ringKey{kind: keyGone, ino: p.Inode})
		default:
			add(ringKey{kind: keyInode, ino: p.Inode})
		}
		if p.Path != "" && p.NameType != "PARENT" {
			add(ringKey{kind: keyPath, name: p.Path})
		}
		if p.NameType == "CREATE" || p.NameType == "DELETE" {
			// The record does not say which PARENT item is this child's
			// (a rename has two): file it under each, by base name.
			base := path.Base(p.Name)
			for _, par := range e.Paths {
				if par.NameType == "PARENT" && par.Inode.Ino != 0 {
					add(ringKey{kind: keyEntry, ino: par.Inode, name: base})
				}
			}
		}
	}
	return keys
}

// evict removes old from every index. Being the oldest, its sequence
// number is first in each list it is on.
func (r *Ring) evict(old *ringEvent) {
	for _, k := range old.keys {
		r.file(k, old.seq, false)
	}
	if t := old.ev.Stamp.Time(); t.After(r.lastEvicted) {
		r.lastEvicted = t
	}
	r.evicted++
}

// Query names what a drift's writer may have touched.
type Query struct {
	Path string // the declared path, resolved on the host
	// Inodes are the node's now: writes that touched or created them.
	Inodes []Inode
	// Former are inodes it had (recorded at the last check): writes that
	// touched, created or deleted them. A current inode is never asked
	// as a deleted one: the kernel reuses a freed number at once, and a
	// rename over another file would name that file's writer.
	Former []Inode
	Parent Inode // its parent directory's inode: entries created or deleted there by base name
}

// Find returns the events that touched what q names, newest first, each
// once.
func (r *Ring) Find(q Query) []Event {
	var seqs []uint64
	if q.Path != "" {
		seqs = append(seqs, r.byPath[q.Path]...)
	}
	for _, in := range q.Inodes {
		if in.Ino != 0 {
			seqs = append(seqs, r.byInode[in]...)
		}
	}
	for _, in := range q.Former {
		if in.Ino != 0 {
			seqs = append(seqs, r.byInode[in]...)
			seqs = append(seqs, r.byGone[in]...)
		}
	}
	if q.Parent.Ino != 0 && q.Path != "" {
		seqs = append(seqs, r.byEntry[entryKey{q.Parent, path.Base(q.Path)}]...)
	}
	// Sequence numbers are in arrival order: newest first is descending.
	slices.Sort(seqs)
	seqs = slices.Compact(seqs)
	slices.Reverse(seqs)
	out := make([]Event, 0, len(seqs))
	for _, s := range seqs {
		out = append(out, r.events[s%uint64(r.cap)].ev)
	}
	return out
}

// Len is the number of events held.
func (r *Ring) Len() int { return len(r.events) }

// Evicted is the number of events dropped to stay within the bound.
func (r *Ring) Evicted() uint64 { return r.evicted }

// Complete reports whether the ring still holds every event since t: false
// when an event at or after t was evicted, so a writer since t may be lost.
func (r *Ring) Complete(since time.Time) bool {
	return r.evicted == 0 || r.lastEvicted.Before(since)
}
