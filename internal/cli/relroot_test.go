package cli_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestRelativeRoot: every command that takes --root gives the same answer
// for a relative root as for the same root named absolutely: the root is
// made absolute once, where commands open it. audit-rules once printed no
// rule for a relative root (its paths were joined to it and then skipped
// as not absolute), and exited 0.
func TestRelativeRoot(t *testing.T) {
	root := t.TempDir()
	for p, content := range map[string]string{
		"etc/drift-monitor/desired.d/50-motd.ign": `{"ignition":{"version":"3.4.0"},"storage":{"files":[` +
			`{"path":"/etc/motd","mode":420,"contents":{"source":"data:,want%0A"}},` +
			`{"path":"/etc/issue","mode":420,"contents":{"source":"data:,issue%0A"}}]}}`,
		"etc/motd":                       "got\n",
		"etc/issue":                      "issue\n",
		"etc/drift-monitor/exclude.conf": "/etc/issue\n",
	} {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	commands := [][]string{
		{"audit-rules"},
		{"check", "--format", "json", "--no-cache"},
		{"check", "--no-cache"},
	}
	if os.Geteuid() == 0 {
		commands = append(commands, []string{"reconcile", "--dry-run", "--format", "json"})
	}
	t.Chdir(filepath.Dir(root))
	rel := filepath.Base(root)
	for _, args := range commands {
		name := strings.Join(args, " ")
		absCode, absOut, absErr := run(t, context.Background(), append(args, "--root", root)...)
		relCode, relOut, relErr := run(t, context.Background(), append(args, "--root", rel)...)
		if diff := cmp.Diff(absOut, relOut); relCode != absCode || relErr != absErr || diff != "" {
			t.Errorf("%s: --root %s: exit %d, stderr %q; --root %s: exit %d, stderr %q; stdout (-absolute +relative):\n%s",
				name, root, absCode, absErr, rel, relCode, relErr, diff)
		}
		if args[0] == "audit-rules" && !strings.Contains(absOut, "path="+root+"/etc/motd ") {
			t.Errorf("audit-rules watches no %s/etc/motd; nothing is proven:\n%s", root, absOut)
		}
	}
}
