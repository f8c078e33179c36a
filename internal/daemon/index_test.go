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
