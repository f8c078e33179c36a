package cli_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/drift-monitor/drift-monitor/internal/cli"
)

// ostreeRoot is a root booted through ostree (/run/ostree-booted) whose
// /etc differs from its /usr/etc: /etc/motd declared and changed, an
// undeclared sshd_config edit, an undeclared sudoers file, a machine ID
// (runtime-written), and a config that declares /etc/motd.
func ostreeRoot(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	wr := func(p, s string, mode os.FileMode) {
		t.Helper()
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(s), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(full, mode); err != nil {
			t.Fatal(err)
		}
	}
	wr("run/ostree-booted", "", 0o644)
	for _, d := range []string{"usr/etc", "etc"} {
		wr(d+"/motd", "image motd\n", 0o644)
		wr(d+"/ssh/sshd_config", "PermitRootLogin no\n", 0o600)
	}
	wr("etc/motd", "declared motd\n", 0o644)
	wr("etc/ssh/sshd_config", "PermitRootLogin yes\n", 0o600)
	wr("etc/sudoers.d/admin", "admin ALL=(ALL) ALL\n", 0o440)
	wr("etc/machine-id", "0123456789abcdef0123456789abcdef\n", 0o444)
	wr("etc/drift-monitor/desired.d/10-motd.ign",
		`{"ignition":{"version":"3.4.0"},"storage":{"files":[{"path":"/etc/motd","mode":420,"overwrite":true,"contents":{"source":"data:,declared%20motd%0A"}}]}}`, 0o600)
	return root
}

func TestCheckImageModes(t *testing.T) {
	root := ostreeRoot(t)
	ctx := context.Background()

	// Default: undeclared changes are notices; the host is clean.
	code, out, stderr := run(t, ctx, "check", "--root", root)
	if code != cli.ExitClean || stderr != "" {
		t.Fatalf("check = %d, %q, %q", code, out, stderr)
	}
	for _, w := range []string{
		`notice: undeclared change to "/etc/ssh/sshd_config": content (19 → 20 bytes) differs from the image (the booted deployment's /usr/etc)`,
		`notice: undeclared directory "/etc/sudoers.d": the image`,
		`notice: undeclared file "/etc/sudoers.d/admin": the image`,
		"No drift: 1 entry matches 1 config file.",
	} {
		if !strings.Contains(out, w) {
			t.Errorf("check's output lacks %q:\n%s", w, out)
		}
	}
	for _, no := range []string{"/etc/motd", "machine-id", "PermitRootLogin", "/etc/drift-monitor"} {
		if strings.Contains(out, no) {
			t.Errorf("check's output names %q:\n%s", no, out)
		}
	}

	// --image=drift: the same, as drift.
	code, out, _ = run(t, ctx, "check", "--root", root, "--image=drift", "--format", "json")
	var rep struct {
		Clean bool
		Drift []struct{ Kind, Entry, Path, Attribute string }
		Image struct {
			Mode, Baseline string
			Undeclared     int
		}
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range rep.Drift {
		got = append(got, d.Kind+" "+d.Entry+" "+d.Path+" "+d.Attribute)
	}
	want := []string{
		"undeclared undeclared /etc/ssh/sshd_config content",
		"undeclared undeclared /etc/sudoers.d added",
		"undeclared undeclared /etc/sudoers.d/admin added",
	}
	if diff := cmp.Diff(want, got); code != cli.ExitDrift || rep.Clean || diff != "" {
		t.Errorf("--image=drift = %d, clean %v (-want +got):\n%s", code, rep.Clean, diff)
	}
	if rep.Image.Mode != "drift" || rep.Image.Baseline != "ostree" || rep.Image.Undeclared != 3 {
		t.Errorf("image %+v", rep.Image)
	}

	// --image=off: nothing of the image.
	code, out, _ = run(t, ctx, "check", "--root", root, "--image=off")
	if code != cli.ExitClean || strings.Contains(out, "undeclared") {
		t.Errorf("--image=off = %d:\n%s", code, out)
	}

	// --image: every difference, classed.
	code, out, _ = run(t, ctx, "check", "--root", root, "--image")
	if code != cli.ExitClean {
		t.Errorf("--image = %d", code)
	}
	for _, w := range []string{
		"Image: the booted deployment's /usr/etc (ostree)",
		"declared                M  /etc/motd  content (11 → 14 bytes)  [file]",
		"runtime                 A  /etc/machine-id",
		"undeclared              M  /etc/ssh/sshd_config  content",
		"Image: 8 differences: 1 declared, 0 extension, 4 runtime, 0 first-boot, 3 undeclared.",
	} {
		if !strings.Contains(out, w) {
			t.Errorf("--image's output lacks %q:\n%s", w, out)
		}
	}

	// An exclusion quiets a path, in check as in the daemon.
	if err := os.WriteFile(filepath.Join(root, "etc/drift-monitor/exclude.conf"), []byte("undeclared:/etc/sudoers.d\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, _ = run(t, ctx, "check", "--root", root, "--image=drift")
	if code != cli.ExitDrift || strings.Contains(out, "sudoers") || !strings.Contains(out, "sshd_config") {
		t.Errorf("with an exclusion = %d:\n%s", code, out)
	}

	// A bad value is a usage error.
	if code, _, stderr := run(t, ctx, "check", "--root", root, "--image=loud"); code != cli.ExitFailed || !strings.Contains(stderr, "want notice, drift or off") {
		t.Errorf("--image=loud = %d, %q", code, stderr)
	}
}

// TestCheckImageWithoutConfig: listing needs no config (everything is
// undeclared); the other modes keep "no config" a failure.
func TestCheckImageWithoutConfig(t *testing.T) {
	root := ostreeRoot(t)
	if err := os.RemoveAll(filepath.Join(root, "etc/drift-monitor")); err != nil {
		t.Fatal(err)
	}
	code, out, _ := run(t, context.Background(), "check", "--root", root, "--image")
	if code != cli.ExitClean || !strings.Contains(out, "undeclared              M  /etc/motd") {
		t.Errorf("--image without a config = %d:\n%s", code, out)
	}
	if code, _, _ := run(t, context.Background(), "check", "--root", root); code != cli.ExitFailed {
		t.Errorf("check without a config = %d, want %d", code, cli.ExitFailed)
	}
}
