package cli_test

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
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
	if err := os.WriteFile(filepath.Join(dir, "bad.conf"), []byte("/fine\nbad\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	asRoot := os.Geteuid() == 0
	tests := []struct {
		name   string
		args   []string
		stderr string // as root; others are told that only root may
		always bool   // said before the root check
	}{
		{"unknown flag", []string{"reconcile", "--bogus"}, "flag provided but not defined: -bogus", true},
		{"bad format", []string{"reconcile", "--format", "xml"}, "must be text or json", true},
		{"relative exclusion", []string{"reconcile", "--exclude", "etc/*"}, `invalid value "etc/*" for flag -exclude: pattern "etc/*" is not an absolute path`, true},
		{"bad exclusion file", []string{"reconcile", "--root", dir, "--config", good, "--exclude-from", "/bad.conf"}, "/bad.conf:2: pattern \"bad\" is not an absolute path", false},
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

	// Excluded: listed as left alone, not written, exit 0 (nothing the
	// exclusions leave to be repaired is left); named, not repaired, exit 1.
	if err := os.WriteFile(filepath.Join(root, "etc/motd"), []byte("mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, _ = run(t, context.Background(), "reconcile", "--root", root, "--config", cfg, "--exclude", "/etc")
	if code != cli.ExitClean || !strings.Contains(stdout, `left alone: file "/etc/motd": excluded by /etc (--exclude)`) {
		t.Errorf("excluded: exit %d, want 0 and the entry listed as left alone\n%s", code, stdout)
	}
	code, stdout, _ = run(t, context.Background(), "reconcile", "--root", root, "--config", cfg, "--exclude", "/etc", "/etc/motd")
	if code != cli.ExitDrift || !strings.Contains(stdout, `not repaired: file "/etc/motd": excluded by /etc (--exclude): reconcile never writes an excluded path`) {
		t.Errorf("excluded and named: exit %d, want 1 and the entry not repaired\n%s", code, stdout)
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

// TestReconcileDryRunPlan: --dry-run prints the plan, one line per step in
// a fixed order (the entry, what is written and how, the drift it
// resolves), names escaped, contents never (their source and size only),
// writes nothing, and exits 0; --format json carries the same steps.
func TestReconcileDryRunPlan(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("reconcile is root only; the conformance tier runs it as root")
	}
	dir := t.TempDir()
	root := filepath.Join(dir, "root")
	if err := os.MkdirAll(filepath.Join(root, "etc/d"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "etc/secret"), []byte("old secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "etc/motd"), []byte("hello\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "c.ign")
	if err := os.WriteFile(cfg, []byte(`{"ignition":{"version":"3.4.0"},"storage":{
		"files":[
		{"path":"/etc/secret","overwrite":true,"mode":384,"contents":{"source":"data:,top%20secret%0A"}},
		{"path":"/etc/motd","overwrite":true,"mode":420,"contents":{"source":"data:,hello%0A"}},
		{"path":"/etc/new/t\u0001b","mode":420,"contents":{"source":"data:,x"}}],
		"directories":[{"path":"/etc/d","mode":448}],
		"links":[{"path":"/etc/l","target":"/etc/motd"}]}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	before := treeListing(t, root)
	code, stdout, stderr := run(t, context.Background(), "reconcile", "--dry-run", "--root", root, "--config", cfg)
	if code != cli.ExitClean {
		t.Fatalf("exit %d, want 0\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	want := `would repair directory "/etc/d": change the mode from 0755 to 0700 [mode]
would repair link "/etc/l": link it to "/etc/motd" [missing]
would repair file "/etc/motd": change the mode from 0600 to 0644 [mode]
would repair file "/etc/secret": write the declared content (11 bytes), mode 0600, owner 0:0 [content]
would repair file "/etc/new/t\x01b": write the declared content (1 byte), mode 0644, owner 0:0 [missing]
Dry run: 5 entries to repair in 5 steps, 0 entries not repairable; nothing was written.
`
	if stdout != want {
		t.Errorf("dry run printed:\n%s\nwant:\n%s", stdout, want)
	}
	if strings.Contains(stdout, "top") || strings.Contains(stdout, "old") {
		t.Errorf("the plan shows content:\n%s", stdout)
	}
	if after := treeListing(t, root); after != before {
		t.Errorf("a dry run changed the tree:\n%s\nwas:\n%s", after, before)
	}
	code, stdout, _ = run(t, context.Background(), "reconcile", "--dry-run", "--format", "json", "--root", root, "--config", cfg)
	var rep struct {
		DryRun   bool `json:"dry_run"`
		Repaired []struct {
			Path  string `json:"path"`
			Steps []struct {
				Op       string   `json:"op"`
				Says     string   `json:"says"`
				Resolves []string `json:"resolves"`
			} `json:"steps"`
		} `json:"repaired"`
	}
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil || code != cli.ExitClean || !rep.DryRun || len(rep.Repaired) != 5 {
		t.Fatalf("--format json: exit %d, %v, %+v\n%s", code, err, rep, stdout)
	}
	if s := rep.Repaired[3].Steps; len(s) != 1 || s[0].Op != "write" || rep.Repaired[3].Path != "/etc/secret" || strings.Contains(stdout, "top secret") {
		t.Errorf("--format json: /etc/secret's steps %+v; want one write, no content\n%s", s, stdout)
	}
}

// treeListing is every node under root with its mode, size and content
// digest: what a dry run must leave as it was.
func treeListing(t *testing.T, root string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.Walk(root, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "%s %v %d", p, fi.Mode(), fi.Size())
		if fi.Mode().IsRegular() {
			c, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			fmt.Fprintf(&b, " %x", sha256.Sum256(c))
		}
		b.WriteString("\n")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}
