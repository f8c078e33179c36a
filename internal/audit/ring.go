package audit

import (
	"path"
	"time"
)

// Ring keeps the last Cap write events, indexed by the inodes and the
// resolved paths their PATH items name, and by (parent inode, base name)
// for the entries they created or deleted, so that a drift found later can
// be traced to the writers that touched its path, its old or new inode, or
// its parent's entry of that name. Memory is bounded by Cap (and by
// maxRecords per event), not by the number of declared paths: an evicted
// event leaves every index.
type Ring struct {
	cap    int
	events []*ringEvent // circular, len cap once full
	next   uint64       // sequence number of the next event
	// lastEvicted is the stamp time of the newest evicted event: a drift
	// older than it may have lost its writer.
	lastEvicted time.Time
	evicted     uint64

	byInode map[Inode][]uint64
	// byGone: inodes a DELETE item names, which the kernel frees and
	// reuses at once: only a query for a node's former inode asks it.
	byGone  map[Inode][]uint64
	byPath  map[string][]uint64
	byEntry map[entryKey][]uint64
}

type ringEvent struct {
	seq  uint64
	ev   Event
	keys []any // the index keys it was filed under
}

type goneKey Inode

type entryKey struct {
	Parent Inode
	Base   string
}

// NewRing returns a ring that keeps n events.
func NewRing(n int) *Ring {
	if n < 1 {
		n = 1
	}
	return &Ring{cap: n, byInode: map[Inode][]uint64{}, byGone: map[Inode][]uint64{}, byPath: map[string][]uint64{}, byEntry: map[entryKey][]uint64{}}
}

// Add files e, evicting the oldest event when the ring is full.
func (r *Ring) Add(e Event) {
	if len(r.events) == r.cap {
		old := r.events[r.next%uint64(r.cap)]
		r.evict(old)
	}
	re := &ringEvent{seq: r.next, ev: e}
	var parents []Inode
	for _, p := range e.Paths {
		if p.NameType == "PARENT" && p.Inode.Ino != 0 {
			parents = append(parents, p.Inode)
		}
	}
	for _, p := range e.Paths {
		switch {
		case p.Inode.Ino == 0 || p.NameType == "PARENT":
		case p.NameType == "DELETE":
			re.keys = append(re.keys, goneKey(p.Inode))
		default:
			re.keys = append(re.keys, p.Inode)
		}
		if p.Path != "" && p.NameType != "PARENT" {
			re.keys = append(re.keys, p.Path)
		}
		if p.NameType == "CREATE" || p.NameType == "DELETE" {
			// The record does not say which PARENT item is this child's
			// (a rename has two): file it under each, by base name.
			base := path.Base(p.Name)
			for _, par := range parents {
				re.keys = append(re.keys, entryKey{par, base})
			}
		}
	}
	re.keys = dedupKeys(re.keys)
	for _, k := range re.keys {
		switch k := k.(type) {
		case Inode:
			r.byInode[k] = append(r.byInode[k], re.seq)
		case goneKey:
			r.byGone[Inode(k)] = append(r.byGone[Inode(k)], re.seq)
		case string:
			r.byPath[k] = append(r.byPath[k], re.seq)
		case entryKey:
			r.byEntry[k] = append(r.byEntry[k], re.seq)
		}
	}
	if len(r.events) < r.cap {
		r.events = append(r.events, re)
	} else {
		r.events[r.next%uint64(r.cap)] = re
	}
	r.next++
}

func dedupKeys(ks []any) []any {
	out := ks[:0]
	seen := make(map[any]bool, len(ks))
	for _, k := range ks {
		if !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	return out
}

// evict removes old from every index. Being the oldest, its sequence
// number is first in each list it is on.
func (r *Ring) evict(old *ringEvent) {
	for _, k := range old.keys {
		switch k := k.(type) {
		case Inode:
			r.byInode[k] = dropFirst(r.byInode[k], old.seq)
			if len(r.byInode[k]) == 0 {
				delete(r.byInode, k)
			}
		case goneKey:
			r.byGone[Inode(k)] = dropFirst(r.byGone[Inode(k)], old.seq)
			if len(r.byGone[Inode(k)]) == 0 {
				delete(r.byGone, Inode(k))
			}
		case string:
			r.byPath[k] = dropFirst(r.byPath[k], old.seq)
			if len(r.byPath[k]) == 0 {
				delete(r.byPath, k)
			}
		case entryKey:
			r.byEntry[k] = dropFirst(r.byEntry[k], old.seq)
			if len(r.byEntry[k]) == 0 {
				delete(r.byEntry, k)
			}
		}
	}
	if t := old.ev.Stamp.Time(); t.After(r.lastEvicted) {
		r.lastEvicted = t
	}
	r.evicted++
}

func dropFirst(s []uint64, seq uint64) []uint64 {
	if len(s) > 0 && s[0] == seq {
		// Copy down rather than reslice so that the backing array does
		// not keep growing at its front.
		copy(s, s[1:])
		return s[:len(s)-1]
	}
	return s
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
	seen := map[uint64]bool{}
	var seqs []uint64
	add := func(l []uint64) {
		for _, s := range l {
			if !seen[s] {
				seen[s] = true
				seqs = append(seqs, s)
			}
		}
	}
	if q.Path != "" {
		add(r.byPath[q.Path])
	}
	for _, in := range q.Inodes {
		if in.Ino != 0 {
			add(r.byInode[in])
		}
	}
	for _, in := range q.Former {
		if in.Ino != 0 {
			add(r.byInode[in])
			add(r.byGone[in])
		}
	}
	if q.Parent.Ino != 0 && q.Path != "" {
		add(r.byEntry[entryKey{q.Parent, path.Base(q.Path)}])
	}
	// Sequence numbers are in arrival order: newest first is descending.
	sortDesc(seqs)
	out := make([]Event, 0, len(seqs))
	for _, s := range seqs {
		out = append(out, r.events[s%uint64(r.cap)].ev)
	}
	return out
}

func sortDesc(s []uint64) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] > s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
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
