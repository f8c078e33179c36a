package daemon

import (
	"testing"

	"github.com/drift-monitor/drift-monitor/internal/desired"
	"github.com/google/go-cmp/cmp"
)

// TestIndexSkipsConfigNotices: an unfetched child config's entry carries a
// notice only; its path (the referencing config file) is nothing to watch.
func TestIndexSkipsConfigNotices(t *testing.T) {
	mode := uint32(0o644)
	ix := newIndex([]desired.Entry{
		{Kind: desired.KindFile, Type: desired.TypeRegular, Mode: &mode, Path: "/etc/a.conf"},
		{Kind: desired.KindConfig, Type: desired.TypeNone, Path: "/srv/configs/node.ign", Target: "ignition.config.merge.0 (https://example.com/c.ign)",
			Content: &desired.Content{Unverifiable: "never fetched"}},
	})
	if diff := cmp.Diff([]string{"/etc"}, ix.dirs); diff != "" {
		t.Errorf("watched directories (-want +got):\n%s", diff)
	}
	if ix.paths != 1 {
		t.Errorf("paths = %d, want 1 (the file)", ix.paths)
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
