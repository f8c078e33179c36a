package daemon

import (
	"slices"
	"testing"

	"github.com/drift-monitor/drift-monitor/internal/accountdb"
	"github.com/drift-monitor/drift-monitor/internal/model"
	"github.com/google/go-cmp/cmp"
)

// TestIndexSkipsConfigNotices: an unfetched child config's entry carries a
// notice only; its path (the referencing config file) is nothing to watch.
func TestIndexSkipsConfigNotices(t *testing.T) {
	mode := uint32(0o644)
	ix := newIndex([]model.Entry{
		{Kind: model.KindFile, Type: model.TypeRegular, Mode: &mode, Path: "/etc/a.conf"},
		{Kind: model.KindConfig, Type: model.TypeNone, Path: "/srv/configs/node.ign", Target: "ignition.config.merge.0 (https://example.com/c.ign)",
			Content: &model.Content{Unverifiable: "never fetched"}},
	})
	if diff := cmp.Diff([]string{"/etc"}, ix.dirs); diff != "" {
		t.Errorf("watched directories (-want +got):\n%s", diff)
	}
	if ix.paths != 1 {
		t.Errorf("paths = %d, want 1 (the file)", ix.paths)
	}
}

func TestIndexAffected(t *testing.T) {
	ix := newIndex([]model.Entry{
		{Kind: model.KindFile, Path: "/etc/foo"},
		{Kind: model.KindFile, Path: "/etc/foo.conf"},
		{Kind: model.KindFile, Path: "/etc/foo/bar"},
		{Kind: model.KindDirectory, Path: "/etc/foo/baz"},
		{Kind: model.KindFile, Path: "/etc/fooa"},
		{Kind: model.KindHardLink, Path: "/var/h", Target: "/etc/t/target"},
		{Kind: model.KindEnablement, Path: "/etc/systemd/system/a.service", Unit: "a.service"},
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

// TestIndexAccounts: a user or group is judged by every account file, so an
// event on any of them, or on a lock a writer lets go, re-checks it once;
// their directories are watched though no file there is declared.
func TestIndexAccounts(t *testing.T) {
	ix := newIndex([]model.Entry{
		{Kind: model.KindUser, Type: model.TypeNone, Path: accountdb.PasswdFile, User: "core", Account: &model.Account{Name: "core"}},
		{Kind: model.KindGroup, Type: model.TypeNone, Path: accountdb.GroupFile, Account: &model.Account{Name: "docker"}},
		{Kind: model.KindFile, Path: "/etc/motd"},
	})
	if diff := cmp.Diff([]string{"/etc", "/usr/lib"}, ix.dirs); diff != "" {
		t.Errorf("watched directories (-want +got):\n%s", diff)
	}
	both := []string{"group:docker", "user:core"}
	for _, p := range []string{"/etc/passwd", "/etc/shadow", "/etc/group", "/etc/gshadow", "/usr/lib/passwd", "/usr/lib/group", "/etc/passwd.lock", "/etc/gshadow.lock"} {
		var got []string
		ix.affected(p, false, func(i int) { got = append(got, ix.entries[i].ID()) })
		slices.Sort(got)
		if diff := cmp.Diff(both, got); diff != "" {
			t.Errorf("an event on %s re-checks (-want +got):\n%s", p, diff)
		}
	}
	for _, p := range []string{"/etc/passwd-", "/etc/passwd+", "/etc/motd"} {
		ix.affected(p, false, func(i int) {
			if k := ix.entries[i].Kind; k == model.KindUser || k == model.KindGroup {
				t.Errorf("an event on %s re-checks %s", p, ix.entries[i].ID())
			}
		})
	}
}
