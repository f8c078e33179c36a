package cli_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/drift-monitor/drift-monitor/internal/cli"
)

// TestImageSettingsEveryCommand: the image's mode is the settings file's
// for check and plain reconcile alike (the daemon's own test follows it
// there): mode drift makes check's undeclared changes drift and reconcile
// list them as not repaired, a flag overrides the file for one run, and a
// file another user could write or a bad line is refused, naming the file.
func TestImageSettingsEveryCommand(t *testing.T) {
	if os.Geteuid() != 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal("CI runs as root: reconcile writes as root, and the settings file must be root's")
		}
		t.Skip("reconcile writes as root; the settings file must be root's")
	}
	root := ostreeRoot(t)
	ctx := context.Background()
	settings := filepath.Join(root, "etc/drift-monitor/image.conf")
	if err := os.WriteFile(settings, []byte("# the image's undeclared changes are drift here\nmode = drift\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	code, out, _ := run(t, ctx, "check", "--root", root)
	if code != cli.ExitDrift || !strings.Contains(out, `"/etc/ssh/sshd_config"`) {
		t.Errorf("check with mode = drift: exit %d, want %d with sshd_config's drift:\n%s", code, cli.ExitDrift, out)
	}
	if code, out, _ := run(t, ctx, "check", "--root", root, "--image=notice"); code != cli.ExitClean {
		t.Errorf("check --image=notice over mode = drift: exit %d, want %d:\n%s", code, cli.ExitClean, out)
	}
	code, out, errs := run(t, ctx, "reconcile", "--root", root)
	if code != cli.ExitDrift || !strings.Contains(out, "reconcile --image /etc/ssh/sshd_config") {
		t.Errorf("reconcile with mode = drift: exit %d, want %d naming reconcile --image for sshd_config:\n%s%s", code, cli.ExitDrift, out, errs)
	}

	if err := os.Chmod(settings, 0o666); err != nil {
		t.Fatal(err)
	}
	for _, cmd := range []string{"check", "reconcile"} {
		if code, _, errs := run(t, ctx, cmd, "--root", root); code != cli.ExitFailed || !strings.Contains(errs, "/etc/drift-monitor/image.conf") {
			t.Errorf("%s with a world-writable settings file: exit %d, %q; want %d naming the file", cmd, code, errs, cli.ExitFailed)
		}
	}
	if err := os.WriteFile(settings, []byte("mode = loud\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(settings, 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, errs := run(t, ctx, "check", "--root", root); code != cli.ExitFailed || !strings.Contains(errs, `image.conf:1: mode "loud": want notice, drift or off`) {
		t.Errorf("check with a bad mode: exit %d, %q", code, errs)
	}
}
