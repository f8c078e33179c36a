package check

import (
	"context"
	"slices"
	"testing"

	"github.com/drift-monitor/drift-monitor/internal/drift"
	"github.com/drift-monitor/drift-monitor/internal/model"
	"github.com/drift-monitor/drift-monitor/internal/ondisk"
)

// TestLabelSlotsFollowPolicyAndState: a daemon's passes under one policy
// keep each entry's default in its slot, through reloads of the state,
// answering for the path a slot holds only; another policy starts new
// slots, and the drift follows the policy.
func TestLabelSlotsFollowPolicyAndState(t *testing.T) {
	lr := newLabelledRoot(t, "/etc(/.*)? u:object_r:etc_t:s0\n")
	entries := lr.declare(map[string]string{"etc/a.conf": "u:object_r:etc_t:s0", "etc/b.conf": "u:object_r:etc_t:s0"})
	var p LabelPolicy
	pass := func(entries []model.Entry) (*Labels, []string) {
		l := p.Load(lr.r, entries, false)
		res := (&Checker{Root: lr.r, Labels: l}).All(context.Background(), entries)
		var got []string
		for _, d := range res.Drift {
			if d.Kind == drift.Label {
				got = append(got, d.Path+": "+d.Want)
			}
		}
		return l, got
	}
	l1, got := pass(entries)
	if len(got) != 0 {
		t.Errorf("first pass: %q, want no drift", got)
	}
	if _, _, found := l1.slots.Get(0, entries[0].Path, 0); found {
		t.Fatal("a slot answers for no type")
	}
	l2, _ := pass(entries)
	if l2.slots != l1.slots {
		t.Error("the next pass over the same state does not keep the slots")
	}
	// Reloaded (another slice) and changed at one position: the slots stay,
	// and answer for the paths they hold.
	other := lr.declare(map[string]string{"etc/a.conf": "u:object_r:etc_t:s0", "etc/c.conf": "u:object_r:etc_t:s0"})
	lr.write(keptFC, "/etc(/.*)? u:object_r:etc_t:s0\n/etc/c\\.conf u:object_r:c_t:s0\n")
	p.Load(lr.r, other, false) // the policy read again: new slots
	l3, got := pass(other)
	if want := []string{"/etc/c.conf: u:object_r:c_t:s0"}; !slices.Equal(got, want) {
		t.Errorf("another state: %q, want %q", got, want)
	}
	l3b, got := pass(slices.Clone(other))
	if l3b.slots != l3.slots {
		t.Error("a reload of the same state starts new slots")
	}
	if want := []string{"/etc/c.conf: u:object_r:c_t:s0"}; !slices.Equal(got, want) {
		t.Errorf("the same state reloaded: %q, want %q", got, want)
	}
	l3c, got := pass(entries)
	if want := []string{}; l3c.slots != l3.slots || !slices.Equal(got, want) {
		t.Errorf("a state with another path at a position: %q (slots kept: %v), want %q", got, l3c.slots == l3.slots, want)
	}
	lr.write(keptFC, "/etc(/.*)? u:object_r:etc_t:s0\n/etc/b\\.conf u:object_r:b_t:s0\n")
	l4, got := pass(entries)
	if l4.slots == l3.slots {
		t.Error("a pass under another policy keeps the slots")
	}
	if want := []string{"/etc/b.conf: u:object_r:b_t:s0"}; !slices.Equal(got, want) {
		t.Errorf("after the policy changed: %q, want %q", got, want)
	}
	// An entry that is not one of the state's (a copy) is looked up anew.
	e := entries[1]
	if l4.position(&e) >= 0 || l4.position(&entries[1]) != 1 {
		t.Errorf("positions: a copy at %d, the entry at %d; want -1 and 1", l4.position(&e), l4.position(&entries[1]))
	}
	o := ondisk.NewObserver(lr.r)
	defer o.Close()
	c := &Checker{Root: lr.r, Labels: l4, Declared: ondisk.Declare(entries)}
	if ds := c.Outcome(o, &e, nil).Drift; len(ds) != 1 || ds[0].Want != "u:object_r:b_t:s0" {
		t.Errorf("a copy of the entry: drift %+v, want the label b_t", ds)
	}
}
