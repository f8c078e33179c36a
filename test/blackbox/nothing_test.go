package blackbox

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/drift-monitor/drift-monitor/test/harness"
)

// checkRoot runs `drift-monitor check --root ROOT ARGS...` and returns its
// exit status, stdout and stderr.
func checkRoot(t *testing.T, root string, args ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, harness.Binary(t), append([]string{"check", "--root", root}, args...)...)
	cmd.Env = append(os.Environ(), "CACHE_DIRECTORY="+t.TempDir())
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ee := (*exec.ExitError)(nil); err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	return cmd.ProcessState.ExitCode(), out.String(), errb.String()
}

// declaresOptFile is a config that declares /opt/file, which the roots of
// these tests do not have.
const declaresOptFile = `{"ignition":{"version":"3.6.0"},"storage":{"files":[{"path":"/opt/file","contents":{"source":"data:,x"}}]}}`

// TestCheckNothingDeclared: with no config file at all, check could not
// check: exit 2 and a message that says where it looked, whatever the
// format, and no report that reads as clean. Files in the desired-state
// directories that are not loaded are named in warnings; what they declare
// (a missing /opt/file) is not checked, so the check still has nothing.
func TestCheckNothingDeclared(t *testing.T) {
	root := t.TempDir()
	for _, format := range []string{"text", "json"} {
		code, out, errs := checkRoot(t, root, "--format", format)
		want := "drift-monitor check: no desired configuration: no config file in " + root +
			"/usr/lib/drift-monitor/desired.d or " + root + "/etc/drift-monitor/desired.d: nothing to check\n"
		if code != 2 || out != "" || errs != want {
			t.Errorf("--format %s, no config: exit %d, stdout %q, stderr %q; want 2, nothing on stdout, %q", format, code, out, errs, want)
		}
	}

	d := filepath.Join(root, "etc/drift-monitor/desired.d")
	if err := os.MkdirAll(d, 0o700); err != nil {
		t.Fatal(err)
	}
	skipped := []string{"site.ign~", "site.ign.rpmsave", ".site.ign", "site.txt"}
	for _, n := range skipped {
		if err := os.WriteFile(filepath.Join(d, n), []byte(declaresOptFile), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	code, out, errs := checkRoot(t, root)
	if code != 2 || out != "" || !strings.Contains(errs, "no desired configuration") {
		t.Errorf("only files that are not loaded: exit %d, stdout %q, stderr %q; want 2", code, out, errs)
	}
	for _, n := range skipped {
		if !strings.Contains(errs, "drift-monitor check: warning: "+filepath.Join(d, n)+": not loaded: ") {
			t.Errorf("stderr does not name %s as not loaded:\n%s", n, errs)
		}
	}

	// With a config beside them, the check runs, and still names them.
	if err := os.WriteFile(filepath.Join(d, "10-site.ign"), []byte(declaresOptFile), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errs = checkRoot(t, root, "--format", "json")
	var rep harness.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != 1 || len(rep.Drift) != 1 || rep.Drift[0].Path != "/opt/file" {
		t.Errorf("with a config: exit %d (%v), want 1 and /opt/file missing:\n%s", code, err, out)
	}
	if strings.Count(errs, ": not loaded: ") != len(skipped) {
		t.Errorf("with a config: stderr names %d files not loaded, want %d:\n%s", strings.Count(errs, ": not loaded: "), len(skipped), errs)
	}
}

// TestDaemonNothingToWatch: a daemon with no config file says it has
// nothing to watch — its status line, its State on the bus, `status` in
// every format (exit 1: not clean) and its journal — until a config
// appears; a file that is not loaded is named in a notice.
func TestDaemonNothingToWatch(t *testing.T) {
	bus := privateBus(t)
	root := t.TempDir()
	os.Chmod(root, 0o755)
	d := startDaemonWith(t, root, daemonOpts{bus: bus})
	where := "no config file in " + root + "/usr/lib/drift-monitor/desired.d or " + root + "/etc/drift-monitor/desired.d"
	d.waitStatus("Nothing to watch: " + where)
	d.waitRecord(0, harness.MsgNothingToWatch, nil)

	out, errOut, code := runCLI(t, bus, "status")
	if code != 1 || !strings.Contains(out, "Nothing to watch") {
		t.Errorf("status: exit %d, stdout %q, stderr %q; want 1 and nothing to watch", code, out, errOut)
	}
	out, _, code = runCLI(t, bus, "status", "--format", "json")
	var rep harness.StatusReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != 1 || rep.State != "unconfigured" {
		t.Errorf("status --format json: exit %d, %+v (%v); want 1 and state unconfigured:\n%s", code, rep, err, out)
	}
	out, _, code = runCLI(t, bus, "status", "--format", "summary")
	if code != 1 || out != "Nothing to watch: "+where+"\n" {
		t.Errorf("status --format summary: exit %d, %q; want 1 and the status line", code, out)
	}

	from := d.mark()
	dir := filepath.Join(root, "etc/drift-monitor/desired.d")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "site.ign~"), []byte(declaresOptFile), 0o600); err != nil {
		t.Fatal(err)
	}
	rec, _ := d.waitRecord(from, harness.MsgConfigIgnored, nil)
	if !strings.Contains(rec["MESSAGE"], filepath.Join(dir, "site.ign~")+": not loaded: a backup") {
		t.Errorf("the notice does not name the backup: %q", rec["MESSAGE"])
	}
	if err := os.WriteFile(filepath.Join(dir, "site.ign"), []byte(declaresOptFile), 0o600); err != nil {
		t.Fatal(err)
	}
	d.waitStatus("Drift: 1 path differs (/opt/file: missing)")
	out, _, code = runCLI(t, bus, "status", "--format", "json")
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != 1 || rep.State != "drifted" {
		t.Errorf("status --format json with a config: exit %d, %+v (%v); want 1 and drifted:\n%s", code, rep, err, out)
	}
}
