package daemon

import (
	"slices"
	"sort"

	"github.com/drift-monitor/drift-monitor/internal/drift"
)

// tracker holds the drift currently known, per entry, so that a drift is
// reported once when it appears and once when it is resolved — never once
// per event. It keeps the whole set in order, and counts its subjects, as
// it changes: what the status line and the bus show after every event costs
// what they show, not what is known (100,000 drifted paths included).
type tracker struct {
	byEntry map[string][]drift.Drift
	order   sortedDrifts
	// subjects counts the drift of each subject (drift.Subject): the
	// status line's "N paths differ".
	subjects map[string]int
	// gen changes whenever what is shown of the set (the bus's fields of
	// any drift) changes.
	gen uint64
	// bulk: a full check changes so much that the order is rebuilt at its
	// end (stale: it must be) instead of kept at every update.
	bulk, stale bool
}

func newTracker() *tracker {
	return &tracker{byEntry: map[string][]drift.Drift{}, subjects: map[string]int{}}
}

// update replaces what is known of one entry and returns what changed.
// A drift that persists with other details (the content changed again) is
// not reported again: its key is the same. The tracker keeps now (its order
// points into it): the caller must not change it afterwards.
func (t *tracker) update(entryID string, now []drift.Drift) (appeared, resolved []drift.Drift) {
	old := t.byEntry[entryID]
	if slices.Equal(old, now) {
		return nil, nil // the same drift, to the letter (or none, still)
	}
	appeared, resolved = diffKeys(old, now)
	if !sameShown(old, now) {
		t.gen++
	}
	for i := range old {
		if !t.bulk {
			t.order.remove(&old[i])
		}
		if t.subjects[old[i].Subject()]--; t.subjects[old[i].Subject()] == 0 {
			delete(t.subjects, old[i].Subject())
		}
	}
	t.stale = t.bulk
	if len(now) == 0 {
		delete(t.byEntry, entryID)
		return appeared, resolved
	}
	t.byEntry[entryID] = now
	for i := range now {
		if !t.bulk {
			t.order.insert(&now[i])
		}
		t.subjects[now[i].Subject()]++
	}
	return appeared, resolved
}

// bulkChanges is how many entries a full check must change for the tracker
// to sort everything once rather than move each drift into place.
const bulkChanges = 4 * blockMax

// rebuild makes the order anew from byEntry.
func (t *tracker) rebuild() {
	all := make([]*drift.Drift, 0, t.order.len())
	for _, ds := range t.byEntry {
		for i := range ds {
			all = append(all, &ds[i])
		}
	}
	slices.SortFunc(all, cmpDrift)
	t.order = sortedDrifts{n: len(all)}
	for len(all) > 0 {
		n := min(blockMax, len(all))
		t.order.blocks = append(t.order.blocks, slices.Clone(all[:n]))
		all = all[n:]
	}
	t.stale = false
}

// sameShown reports whether two lists of an entry's drift look the same on
// the bus.
func sameShown(a, b []drift.Drift) bool {
	return slices.EqualFunc(a, b, func(x, y drift.Drift) bool {
		return x.Kind == y.Kind && x.Entry == y.Entry && x.Path == y.Path && x.Unit == y.Unit && x.Message == y.Message
	})
}

// replace sets everything known from a full check: entries that are absent
// from now (clean, or no longer declared) lose their drift. It keeps now's
// slices, as update does.
func (t *tracker) replace(now map[string][]drift.Drift) (appeared, resolved []drift.Drift) {
	var gone []string
	for id := range t.byEntry {
		if _, ok := now[id]; !ok {
			gone = append(gone, id)
		}
	}
	changes := len(gone)
	for id, ds := range now {
		if !slices.Equal(t.byEntry[id], ds) {
			changes++
		}
	}
	// A first check that finds 100,000 drifts sorts them once.
	t.bulk = changes > bulkChanges
	defer func() {
		if t.bulk = false; t.stale {
			t.rebuild()
		}
	}()
	for _, id := range gone {
		_, r := t.update(id, nil)
		resolved = append(resolved, r...)
	}
	ids := make([]string, 0, len(now))
	for id := range now {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		a, r := t.update(id, now[id])
		appeared = append(appeared, a...)
		resolved = append(resolved, r...)
	}
	drift.Sort(appeared)
	drift.Sort(resolved)
	return appeared, resolved
}

func diffKeys(old, now []drift.Drift) (appeared, resolved []drift.Drift) {
	was := make(map[string]bool, len(old))
	for i := range old {
		was[old[i].Key()] = true
	}
	is := make(map[string]bool, len(now))
	for i := range now {
		is[now[i].Key()] = true
		if !was[now[i].Key()] {
			appeared = append(appeared, now[i])
		}
	}
	for i := range old {
		if !is[old[i].Key()] {
			resolved = append(resolved, old[i])
		}
	}
	return appeared, resolved
}

// count is how many drifts are known.
func (t *tracker) count() int { return t.order.len() }

// head copies the drift of the first k subjects, in order: what the status
// line names. (The drifts of one subject are adjacent: they share a path.)
func (t *tracker) head(k int) []drift.Drift {
	var out []drift.Drift
	seen := make(map[string]bool, k)
	t.order.each(0, func(d *drift.Drift) bool {
		s := d.Subject()
		if !seen[s] {
			if len(seen) == k {
				return false
			}
			seen[s] = true
		}
		out = append(out, *d)
		return true
	})
	return out
}

// pageOf copies at most limit drifts in order, from offset on, each made
// a T.
func pageOf[T any](t *tracker, offset, limit int, as func(*drift.Drift) T) []T {
	out := make([]T, 0, max(0, min(limit, t.count()-offset)))
	if limit <= 0 {
		return out
	}
	t.order.each(offset, func(d *drift.Drift) bool {
		out = append(out, as(d))
		return len(out) < limit
	})
	return out
}
