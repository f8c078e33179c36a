package daemon

import (
	"fmt"
	"testing"

	"github.com/drift-monitor/drift-monitor/internal/drift"
	"github.com/drift-monitor/drift-monitor/internal/model"
	"github.com/google/go-cmp/cmp"
)

func dr(id, path string, k drift.Kind) drift.Drift {
	return drift.Drift{EntryID: id, Path: path, Kind: k, Entry: model.KindFile, Message: string(k) + " " + path}
}

func keys(ds []drift.Drift) []string {
	var out []string
	for i := range ds {
		out = append(out, ds[i].Key())
	}
	return out
}

func TestTrackerReportsOnceWhenAppearsAndOnceWhenResolved(t *testing.T) {
	tr := newTracker()
	a := dr("file:/etc/a", "/etc/a", drift.Content)
	steps := []struct {
		name               string
		now                []drift.Drift
		appeared, resolved []string
	}{
		{"appears", []drift.Drift{a}, []string{a.Key()}, nil},
		{"same drift again: silent", []drift.Drift{a}, nil, nil},
		{"other details, same kind: silent", []drift.Drift{{EntryID: a.EntryID, Kind: drift.Content, Got: "other"}}, nil, nil},
		{"a second kind appears", []drift.Drift{a, dr("file:/etc/a", "/etc/a", drift.Mode)}, []string{"file:/etc/a|mode"}, nil},
		{"both resolved", nil, nil, []string{a.Key(), "file:/etc/a|mode"}},
		{"clean again: silent", nil, nil, nil},
	}
	for _, s := range steps {
		app, res := tr.update(a.EntryID, s.now)
		if diff := cmp.Diff(s.appeared, keys(app)); diff != "" {
			t.Errorf("%s: appeared (-want +got):\n%s", s.name, diff)
		}
		if diff := cmp.Diff(s.resolved, keys(res)); diff != "" {
			t.Errorf("%s: resolved (-want +got):\n%s", s.name, diff)
		}
	}
}

func TestTrackerReplaceResolvesWhatAFullCheckNoLongerFinds(t *testing.T) {
	tr := newTracker()
	a, b := dr("file:/a", "/a", drift.Content), dr("file:/b", "/b", drift.Missing)
	tr.replace(map[string][]drift.Drift{a.EntryID: {a}, b.EntryID: {b}})
	app, res := tr.replace(map[string][]drift.Drift{b.EntryID: {b}})
	if len(app) != 0 {
		t.Errorf("appeared %v, want none", keys(app))
	}
	if diff := cmp.Diff([]string{a.Key()}, keys(res)); diff != "" {
		t.Errorf("resolved (-want +got):\n%s", diff)
	}
}

// The tracker keeps the set in order, counts its subjects, and changes its
// generation exactly when what the bus shows changes.
func TestTrackerOrderCountsAndGeneration(t *testing.T) {
	tr := newTracker()
	b, a1, a2 := dr("file:/b", "/b", drift.Missing), dr("file:/a", "/a", drift.Content), dr("file:/a", "/a", drift.Mode)
	unit := drift.Drift{EntryID: "enablement:x.service", Path: "/a", Unit: "x.service", Kind: drift.Enablement, Entry: model.KindEnablement}
	gen := tr.gen
	step := func(name string, id string, now []drift.Drift, wantPaths []string, wantSubjects int, changes bool) {
		t.Helper()
		tr.update(id, now)
		var got []string
		for _, d := range tr.page(0, 100) {
			got = append(got, d.Path+" "+string(d.Kind))
		}
		if diff := cmp.Diff(wantPaths, got); diff != "" {
			t.Errorf("%s: order (-want +got):\n%s", name, diff)
		}
		if tr.count() != len(wantPaths) || len(tr.subjects) != wantSubjects {
			t.Errorf("%s: count %d, subjects %d; want %d, %d", name, tr.count(), len(tr.subjects), len(wantPaths), wantSubjects)
		}
		if changed := tr.gen != gen; changed != changes {
			t.Errorf("%s: generation changed %v, want %v", name, changed, changes)
		}
		gen = tr.gen
	}
	step("b", b.EntryID, []drift.Drift{b}, []string{"/b missing"}, 1, true)
	step("a, two kinds", a1.EntryID, []drift.Drift{a2, a1}, []string{"/a content", "/a mode", "/b missing"}, 2, true)
	// By path, then entry: the unit's enablement sorts before the file.
	step("a unit on a's path: another subject", unit.EntryID, []drift.Drift{unit}, []string{"/a enablement", "/a content", "/a mode", "/b missing"}, 3, true)
	step("the same again", a1.EntryID, []drift.Drift{a2, a1}, []string{"/a enablement", "/a content", "/a mode", "/b missing"}, 3, false)
	a1got := a1
	a1got.Message = "content mismatch, other sizes"
	step("a message changes", a1.EntryID, []drift.Drift{a2, a1got}, []string{"/a enablement", "/a content", "/a mode", "/b missing"}, 3, true)
	step("a resolved", a1.EntryID, nil, []string{"/a enablement", "/b missing"}, 2, true)
	if got := tr.page(1, 5); len(got) != 1 || got[0].Path != "/b" {
		t.Errorf("page(1, 5) = %+v, want /b", got)
	}
	if got := tr.page(2, 5); len(got) != 0 {
		t.Errorf("page past the end = %+v", got)
	}
	tr.replace(map[string][]drift.Drift{})
	if tr.count() != 0 || len(tr.subjects) != 0 || len(tr.byEntry) != 0 {
		t.Errorf("after a clean full check: count %d, subjects %v, entries %d", tr.count(), tr.subjects, len(tr.byEntry))
	}
}

// A full check that changes many entries sorts them once; the order is the
// same as if each had been moved into place, and stays right for the small
// changes after it.
func TestTrackerBulkReplace(t *testing.T) {
	tr := newTracker()
	now := map[string][]drift.Drift{}
	for i := range 3 * bulkChanges {
		d := dr(fmt.Sprintf("file:/f%05d", (i*7919)%(3*bulkChanges)), fmt.Sprintf("/f%05d", (i*7919)%(3*bulkChanges)), drift.Missing)
		now[d.EntryID] = []drift.Drift{d}
	}
	appeared, _ := tr.replace(now)
	if len(appeared) != 3*bulkChanges || tr.count() != 3*bulkChanges || len(tr.subjects) != 3*bulkChanges || tr.stale {
		t.Fatalf("appeared %d, count %d, subjects %d, stale %v; want %d each", len(appeared), tr.count(), len(tr.subjects), tr.stale, 3*bulkChanges)
	}
	inOrder := func() bool {
		prev := ""
		ok := true
		tr.order.each(0, func(d *drift.Drift) bool {
			ok = d.Path > prev
			prev = d.Path
			return ok
		})
		return ok
	}
	if !inOrder() {
		t.Fatal("not in order after the bulk replace")
	}
	delete(now, "file:/f00010")
	extra := dr("file:/f00010x", "/f00010x", drift.Mode)
	now[extra.EntryID] = []drift.Drift{extra}
	appeared, resolved := tr.replace(now)
	if len(appeared) != 1 || len(resolved) != 1 || !inOrder() {
		t.Errorf("a small replace after it: %d appeared, %d resolved, in order %v; want 1, 1, true", len(appeared), len(resolved), inOrder())
	}
	if got := tr.page(10, 1); len(got) != 1 || got[0].Path != "/f00010x" {
		t.Errorf("page(10, 1) = %+v, want /f00010x", got)
	}
}

// page is pageOf as the tests read it.
func (t *tracker) page(offset, limit int) []drift.Drift {
	return pageOf(t, offset, limit, func(d *drift.Drift) drift.Drift { return *d })
}
