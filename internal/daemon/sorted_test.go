package daemon

import (
	"fmt"
	"math/rand"
	"slices"
	"testing"

	"github.com/drift-monitor/drift-monitor/internal/drift"
	"github.com/google/go-cmp/cmp"
)

// TestSortedDriftsMatchesASortedSlice drives the block list and a plain
// sorted slice with the same random inserts and removals (ties included,
// enough to split and merge blocks many times) and compares them after each
// step.
func TestSortedDriftsMatchesASortedSlice(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	var s sortedDrifts
	var ref []*drift.Drift
	kinds := []drift.Kind{drift.Content, drift.Mode, drift.Missing}
	check := func(step int) {
		t.Helper()
		if s.len() != len(ref) {
			t.Fatalf("step %d: len %d, want %d", step, s.len(), len(ref))
		}
		var got []*drift.Drift
		s.each(0, func(d *drift.Drift) bool { got = append(got, d); return true })
		if !slices.Equal(got, ref) {
			t.Fatalf("step %d: the block list is not the sorted slice", step)
		}
		for _, b := range s.blocks {
			if len(b) == 0 || len(b) > 2*blockMax {
				t.Fatalf("step %d: a block of %d", step, len(b))
			}
		}
	}
	for step := range 40000 {
		// Grow to about 8,000, then shrink to about nothing.
		grow := step < 20000 && rng.Intn(10) < 7 || step >= 20000 && rng.Intn(10) < 3
		if grow || len(ref) == 0 {
			d := &drift.Drift{Path: fmt.Sprintf("/p%04d", rng.Intn(3000)), Kind: kinds[rng.Intn(len(kinds))], EntryID: "e"}
			s.insert(d)
			// After its equals, as insert promises.
			i, _ := slices.BinarySearchFunc(ref, d, func(a, b *drift.Drift) int {
				if c := cmpDrift(a, b); c != 0 {
					return c
				}
				return -1
			})
			ref = slices.Insert(ref, i, d)
		} else {
			i := rng.Intn(len(ref))
			if !s.remove(ref[i]) {
				t.Fatalf("step %d: remove did not find an element", step)
			}
			ref = slices.Delete(ref, i, i+1)
		}
		if step%997 == 0 || len(ref) == 0 {
			check(step)
		}
	}
	check(-1)
	if s.remove(&drift.Drift{Path: "/p0001"}) {
		t.Error("removed an element that was never inserted")
	}
}

func TestSortedDriftsEachFrom(t *testing.T) {
	var s sortedDrifts
	for i := range 3000 {
		s.insert(&drift.Drift{Path: fmt.Sprintf("/p%05d", i)})
	}
	for _, from := range []int{0, 1, blockMax - 1, blockMax, 2999, 3000, 5000} {
		var got []string
		s.each(from, func(d *drift.Drift) bool { got = append(got, d.Path); return len(got) < 3 })
		var want []string
		for i := from; i < min(from+3, 3000); i++ {
			want = append(want, fmt.Sprintf("/p%05d", i))
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("each(%d) (-want +got):\n%s", from, diff)
		}
	}
}
