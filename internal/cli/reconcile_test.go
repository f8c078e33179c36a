package cli_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/drift-monitor/drift-monitor/internal/cli"
)

// TestReconcileFailures: what keeps reconcile from running is exit 2 with a
// message that names the file and what is wrong, and nothing on stdout.
func TestReconcileFailures(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.ign")
	if err := os.WriteFile(good, []byte(`{"ignition":{"version":"3.4.0"}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing.ign")
	asRoot := os.Geteuid() == 0
	tests := []struct {
		name   string
		args   []string
		stderr string // as root; others are told that only root may
		always bool   // said before the root check
	}{
		{"unknown flag", []string{"reconcile", "--bogus"}, "flag provided but not defined: -bogus", true},
		{"bad format", []string{"reconcile", "--format", "xml"}, "must be text or json", true},
		{"relative exclusion", []string{"reconcile", "--exclude", "etc/*"}, `--exclude "etc/*": not an absolute path pattern`, true},
		{"missing root", []string{"reconcile", "--root", filepath.Join(dir, "nope"), "--config", good}, "root:", false},
		{"missing config", []string{"reconcile", "--root", dir, "--config", missing}, missing + ": no such file or directory", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := run(t, context.Background(), tt.args...)
			if code != cli.ExitFailed || stdout != "" {
				t.Errorf("exit status %d, stdout %q; want %d and nothing", code, stdout, cli.ExitFailed)
			}
			want := tt.stderr
			if !asRoot && !tt.always {
				want = "only root can reconcile"
			}
			if !strings.Contains(stderr, want) {
				t.Errorf("stderr %q does not contain %q", stderr, want)
			}
		})
	}
}

// TestReconcileRoot: a drifted file in a --root is written back, the second
// check finds it clean, and a second run has nothing to do.
func TestReconcileRoot(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("reconcile is root only; the conformance tier runs it as root")
	}
	dir := t.TempDir()
	root := filepath.Join(dir, "root")
	if err := os.MkdirAll(filepath.Join(root, "etc"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "etc/motd"), []byte("changed\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "c.ign")
	if err := os.WriteFile(cfg, []byte(`{"ignition":{"version":"3.4.0"},"storage":{"files":[
		{"path":"/etc/motd","overwrite":true,"mode":420,"contents":{"source":"data:,hello%0A"}},
		{"path":"/etc/new/created","mode":384,"contents":{"source":"data:,x"}}]}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := run(t, context.Background(), "reconcile", "--root", root, "--config", cfg)
	if code != cli.ExitClean {
		t.Fatalf("exit %d, want 0\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	for _, w := range []string{`repaired file "/etc/motd": write the declared content (6 bytes), mode 0644, owner 0:0 [content, mode]`,
		`repaired file "/etc/new/created": write the declared content (1 byte), mode 0600, owner 0:0 [missing]`,
		"Repaired 2 entries: no drift left."} {
		if !strings.Contains(stdout, w) {
			t.Errorf("stdout lacks %q:\n%s", w, stdout)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(root, "etc/motd")); string(b) != "hello\n" {
		t.Errorf("/etc/motd = %q", b)
	}
	if fi, err := os.Stat(filepath.Join(root, "etc/new")); err != nil || fi.Mode().Perm() != 0o755 {
		t.Errorf("/etc/new: %v, %v; want a directory 0755 as Ignition creates it", fi, err)
	}
	code, stdout, _ = run(t, context.Background(), "reconcile", "--root", root, "--config", cfg)
	if code != cli.ExitClean || !strings.Contains(stdout, "Nothing to repair.") {
		t.Errorf("second run: exit %d\n%s", code, stdout)
	}

	// Excluded: listed, left alone, exit 1.
	if err := os.WriteFile(filepath.Join(root, "etc/motd"), []byte("mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, _ = run(t, context.Background(), "reconcile", "--root", root, "--config", cfg, "--exclude", "/etc")
	if code != cli.ExitDrift || !strings.Contains(stdout, `not repaired: file "/etc/motd": excluded`) {
		t.Errorf("excluded: exit %d, want 1 and the entry listed\n%s", code, stdout)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "etc/motd")); string(b) != "mine\n" {
		t.Errorf("an excluded file was written: %q", b)
	}
	// Named: only what is named is repaired.
	code, stdout, _ = run(t, context.Background(), "reconcile", "--root", root, "--config", cfg, "/etc/new/created")
	if code != cli.ExitClean || !strings.Contains(stdout, "Nothing to repair.") {
		t.Errorf("a path with no drift named: exit %d\n%s", code, stdout)
	}
	code, stdout, stderr = run(t, context.Background(), "reconcile", "--root", root, "--config", cfg, "/etc/passwd")
	if code != cli.ExitFailed || stdout != "" || !strings.Contains(stderr, `"/etc/passwd" is not a declared path or unit`) {
		t.Errorf("an undeclared path named: exit %d, stdout %q, stderr %q; want 2 and why", code, stdout, stderr)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "etc/motd")); string(b) != "mine\n" {
		t.Errorf("a file not named was written: %q", b)
	}
}
