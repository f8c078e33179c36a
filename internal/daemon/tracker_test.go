package daemon

import (
	"fmt"
	"strings"
	"testing"

	"github.com/drift-monitor/drift-monitor/internal/desired"
	"github.com/drift-monitor/drift-monitor/internal/drift"
	"github.com/google/go-cmp/cmp"
)

func dr(id, path string, k drift.Kind) drift.Drift {
	return drift.Drift{EntryID: id, Path: path, Kind: k, Entry: desired.KindFile, Message: string(k) + " " + path}
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
	unit := drift.Drift{EntryID: "enablement:x.service", Path: "/a", Unit: "x.service", Kind: drift.Enablement, Entry: desired.KindEnablement}
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

func TestStatusLine(t *testing.T) {
	chrony := dr("file:/etc/chrony.conf", "/etc/chrony.conf", drift.Content)
	x1, x2 := dr("file:/etc/x", "/etc/x", drift.Mode), dr("file:/etc/x", "/etc/x", drift.Owner)
	nl := dr("file:/etc/a\nb", "/etc/a\nb", drift.Missing)
	cases := []struct {
		name string
		in   statusInput
		want string
	}{
		{"clean", statusInput{paths: 42, units: 6}, "No drift: watching 42 paths, 6 units"},
		{"singular", statusInput{paths: 1, units: 1}, "No drift: watching 1 path, 1 unit"},
		{"drift", statusInput{paths: 42, drift: []drift.Drift{chrony, x1, x2}},
			"Drift: 2 paths differ (/etc/chrony.conf: content; /etc/x: mode, owner)"},
		{"one path", statusInput{drift: []drift.Drift{chrony}}, "Drift: 1 path differs (/etc/chrony.conf: content)"},
		{"control characters escaped", statusInput{drift: []drift.Drift{nl}}, `Drift: 1 path differs (/etc/a\nb: missing)`},
		{"many", statusInput{drift: []drift.Drift{
			dr("1", "/a", drift.Mode), dr("2", "/b", drift.Mode), dr("3", "/c", drift.Mode), dr("4", "/d", drift.Mode)}},
			"Drift: 4 paths differ (/a: mode; /b: mode; /c: mode; …)"},
		{"the first of many", statusInput{subjects: 100000, drift: []drift.Drift{
			dr("1", "/a", drift.Mode), dr("1", "/a", drift.Owner), dr("2", "/b", drift.Mode), dr("3", "/c", drift.Mode)}},
			"Drift: 100000 paths differ (/a: mode, owner; /b: mode; /c: mode; …)"},
		{"three shown of more", statusInput{subjects: 4, drift: []drift.Drift{
			dr("1", "/a", drift.Mode), dr("2", "/b", drift.Mode), dr("3", "/c", drift.Mode)}},
			"Drift: 4 paths differ (/a: mode; /b: mode; /c: mode; …)"},
		{"long paths are shortened in the middle", statusInput{drift: []drift.Drift{
			dr("1", "/etc/"+strings.Repeat("d", 300)+"/f-1", drift.Missing)}, paths: 1, unitsDown: true},
			"Drift: 1 path differs (/etc/" + strings.Repeat("d", 47) + "…" + strings.Repeat("d", 101) + "/f-1: missing)" +
				"; systemd unreachable over D-Bus, reconnecting: unit enablement not checked"},
		{"starting", statusInput{starting: true, paths: 5, units: 1}, "Starting: first check of 5 paths, 1 unit"},
		{"bus gone", statusInput{paths: 3, unitsDown: true, apiDown: true},
			"No drift: watching 3 paths, 0 units; bus unavailable, reconnecting: unit enablement not checked, drift-monitor status cannot answer"},
		{"systemd gone", statusInput{paths: 3, unitsDown: true},
			"No drift: watching 3 paths, 0 units; systemd unreachable over D-Bus, reconnecting: unit enablement not checked"},
		{"API gone", statusInput{paths: 3, apiDown: true},
			"No drift: watching 3 paths, 0 units; D-Bus API off the bus, reconnecting: drift-monitor status cannot answer"},
		{"inhibited", statusInput{inhibitors: []string{"my-updater (pid 4711): applying config v42"}},
			"Inhibited by my-updater (pid 4711): applying config v42"},
		{"polling", statusInput{paths: 3, polled: 2}, "No drift: watching 3 paths, 0 units; polling 2 directories: inotify watches exhausted"},
		{"reading", statusInput{paths: 3, reading: 1}, "No drift: watching 3 paths, 0 units; reading 1 large file"},
		{"reading, drifted", statusInput{drift: []drift.Drift{chrony}, reading: 2}, "Drift: 1 path differs (/etc/chrony.conf: content); reading 2 large files"},
		{"refused config", statusInput{paths: 3, loadFailed: "/etc/drift-monitor/desired.d/x.ign: bad"},
			"No drift: watching 3 paths, 0 units; new config refused (/etc/drift-monitor/desired.d/x.ign: bad), checking against the last good one"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := statusLine(c.in); got != c.want {
				t.Errorf("statusLine:\nwant %q\ngot  %q", c.want, got)
			}
		})
	}
}

func TestShorten(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"/etc/short", "/etc/short"},
		{"/ééééééééééé/x", "/é…éé/x"}, // never inside a character
	} {
		if got := shorten(c.in, 12); got != c.want || len(got) > 12 && len(c.in) > 12 {
			t.Errorf("shorten(%q, 12) = %q (%d bytes), want %q", c.in, got, len(got), c.want)
		}
	}
}

func TestIndexAffected(t *testing.T) {
	ix := newIndex([]desired.Entry{
		{Kind: desired.KindFile, Path: "/etc/foo"},
		{Kind: desired.KindFile, Path: "/etc/foo.conf"},
		{Kind: desired.KindFile, Path: "/etc/foo/bar"},
		{Kind: desired.KindDirectory, Path: "/etc/foo/baz"},
		{Kind: desired.KindFile, Path: "/etc/fooa"},
		{Kind: desired.KindHardLink, Path: "/var/h", Target: "/etc/t/target"},
		{Kind: desired.KindEnablement, Path: "/etc/systemd/system/a.service", Unit: "a.service"},
	})
	got := func(p string, dir bool) []string {
		var out []string
		ix.affected(p, dir, func(i int) { out = append(out, ix.entries[i].ID()) })
		return out
	}
	cases := []struct {
		p    string
		dir  bool
		want []string
	}{
		{"/etc/foo", false, []string{"file:/etc/foo", "file:/etc/foo/bar", "directory:/etc/foo/baz"}},
		{"/etc/foo.conf", false, []string{"file:/etc/foo.conf"}},
		{"/etc/unrelated", false, nil},
		{"/etc/t/target", false, []string{"hardlink:/var/h"}},
		{"/etc/t", true, []string{"hardlink:/var/h"}},
	}
	for _, c := range cases {
		if diff := cmp.Diff(c.want, got(c.p, c.dir)); diff != "" {
			t.Errorf("affected(%q) (-want +got):\n%s", c.p, diff)
		}
	}
	if diff := cmp.Diff([]string{"/etc", "/etc/foo", "/etc/t", "/var"}, ix.dirs); diff != "" {
		t.Errorf("dirs (-want +got):\n%s", diff)
	}
}

func TestExclusions(t *testing.T) {
	x, err := parseExclusions("x.conf", []byte("# rotated by cert-manager\n/etc/pki/ca-trust\n\n/var/lib/kubelet/*.json\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]bool{
		"/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem": true,
		"/etc/pki/ca-trust":              true,
		"/etc/pki/other":                 false,
		"/var/lib/kubelet/config.json":   true,
		"/var/lib/kubelet/sub/conf.json": false,
	} {
		if got := x.match(p); got != want {
			t.Errorf("match(%q) = %v, want %v", p, got, want)
		}
	}
	if _, err := parseExclusions("x.conf", []byte("relative/path\n"), nil); err == nil || err.Error() != `x.conf:1: pattern "relative/path" is not an absolute path` {
		t.Errorf("relative pattern: got error %v", err)
	}
}
