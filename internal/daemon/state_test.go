package daemon

import (
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
