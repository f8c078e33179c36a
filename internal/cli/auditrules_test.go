package cli_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/drift-monitor/drift-monitor/internal/cli"
)

func TestAuditRules(t *testing.T) {
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "etc"), 0o755)
	os.WriteFile(filepath.Join(root, "etc/motd"), []byte("x"), 0o644)
	cfg := filepath.Join(t.TempDir(), "c.ign")
	os.WriteFile(cfg, []byte(`{"ignition":{"version":"3.4.0"},"storage":{
	  "files":[{"path":"/etc/motd","contents":{"source":"data:,hi"}},
	           {"path":"/etc/app/conf.d/a.conf","contents":{"source":"data:,a"}},
	           {"path":"/etc/a b","contents":{"source":"data:,a"}}],
	  "directories":[{"path":"/etc"}]}}`), 0o644)
	code, stdout, stderr := run(t, context.Background(), "audit-rules", "--root", root, "--config", cfg)
	if code != cli.ExitClean {
		t.Fatalf("exit %d; stderr:\n%s", code, stderr)
	}
	want := []string{
		"## drift-monitor: attribution of drift to its writers (drift-monitor audit-rules)",
		"-w " + root + "/etc -p wa -k drift-monitor",
		"-w " + root + "/etc/app -p wa -k drift-monitor", // the topmost missing component
		"-w " + root + "/etc/motd -p wa -k drift-monitor",
	}
	if diff := cmp.Diff(want, strings.Split(strings.TrimSpace(stdout), "\n")); diff != "" {
		t.Errorf("rules (-want +got):\n%s", diff)
	}
	if !strings.Contains(stderr, root+"/etc/a b: cannot be written as an auditctl rule") {
		t.Errorf("stderr does not say the path with a space is not covered: %q", stderr)
	}

	// What the exclusions leave alone, in the root's exclude.conf as the
	// daemon reads it, gets no rule.
	os.MkdirAll(filepath.Join(root, "etc/drift-monitor"), 0o755)
	os.WriteFile(filepath.Join(root, "etc/drift-monitor/exclude.conf"), []byte("/etc/motd\n/etc/app\n/etc/a*\n"), 0o644)
	code, stdout, stderr = run(t, context.Background(), "audit-rules", "--root", root, "--config", cfg)
	want = []string{
		"## drift-monitor: attribution of drift to its writers (drift-monitor audit-rules)",
		"-w " + root + "/etc -p wa -k drift-monitor",
	}
	if diff := cmp.Diff(want, strings.Split(strings.TrimSpace(stdout), "\n")); code != cli.ExitClean || stderr != "" || diff != "" {
		t.Errorf("with exclusions: exit %d, stderr %q, rules (-want +got):\n%s", code, stderr, diff)
	}
	os.WriteFile(filepath.Join(root, "etc/drift-monitor/exclude.conf"), []byte("motd\n"), 0o644)
	code, stdout, stderr = run(t, context.Background(), "audit-rules", "--root", root, "--config", cfg)
	if code != cli.ExitFailed || stdout != "" || !strings.Contains(stderr, "/etc/drift-monitor/exclude.conf:1: pattern") {
		t.Errorf("a bad exclude.conf: exit %d, stdout %q, stderr %q; want 2 naming it", code, stdout, stderr)
	}
}
