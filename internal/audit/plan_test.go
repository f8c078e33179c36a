package audit

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestPlanWatches(t *testing.T) {
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "etc/ssh"), 0o755)
	os.WriteFile(filepath.Join(root, "etc/motd"), nil, 0o644)
	os.Symlink("motd", filepath.Join(root, "etc/link"))
	j := func(p string) string { return filepath.Join(root, p) }
	got := PlanWatches([]string{
		j("etc/motd"), j("etc/motd"), // once
		j("etc/link"),   // the link itself, not its target
		j("etc/ssh"),    // a directory: a tree watch
		j("etc/notyet"), // missing, parent there
		j("etc/a/b/c"),  // missing down to etc/a
		j("etc/a/b/d"),  // the same cover
		"relative", "/", // never
	}, Key, nil)
	var lines []string
	for _, r := range got {
		lines = append(lines, r.String())
	}
	want := []string{
		"-w " + j("etc/a") + " -p wa -k drift-monitor",
		"-w " + j("etc/link") + " -p wa -k drift-monitor",
		"-w " + j("etc/motd") + " -p wa -k drift-monitor",
		"-w " + j("etc/notyet") + " -p wa -k drift-monitor",
		"-w " + j("etc/ssh") + " -p wa -k drift-monitor",
	}
	if diff := cmp.Diff(want, lines); diff != "" {
		t.Errorf("rules (-want +got):\n%s", diff)
	}
	for _, r := range got {
		if p, dir, _, _ := r.Watch(); dir != (p == j("etc/ssh")) {
			t.Errorf("%s: dir = %v", r, dir)
		}
	}
}
