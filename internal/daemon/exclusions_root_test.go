package daemon

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The exclusion file is read inside the root: with the root's /etc an
// absolute link, a lexical join read the running host's file at the link's
// target.
func TestExclusionFileReadInsideTheRoot(t *testing.T) {
	hostSide, root := t.TempDir(), t.TempDir()
	target := filepath.Join(hostSide, "etc")
	for dir, pattern := range map[string]string{target: "/host/*", filepath.Join(root, target): "/in-root/*"} {
		if err := os.MkdirAll(filepath.Join(dir, "drift-monitor"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "drift-monitor/exclude.conf"), []byte(pattern+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(target, filepath.Join(root, "etc")); err != nil {
		t.Fatal(err)
	}
	d, err := New(Options{Root: root, ExcludeFile: "/etc/drift-monitor/exclude.conf"})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	x, err := d.exclusions()
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(exclusion{"/in-root/*"}, x); diff != "" {
		t.Errorf("exclusions (-want +got):\n%s", diff)
	}
}
