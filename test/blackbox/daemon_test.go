package blackbox

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/drift-monitor/drift-monitor/test/harness"
)

// The seed's example: one file, plus a sentinel the tests drift on purpose
// to prove, by the order of records, that nothing was reported before it.
const twoFiles = `{"ignition":{"version":"3.2.0"},"storage":{"files":[
 {"path":"/etc/etc-file","mode":420,"contents":{"source":"data:,hello%20world%0A"}},
 {"path":"/etc/sentinel","mode":420,"contents":{"source":"data:,s%0A"}},
 {"path":"/etc/secret","mode":384,"contents":{"source":"data:,TOPSECRET-WANT%0A"}}]}}`

func cleanTwoFiles(t *testing.T) *fixture {
	f := newFixture(t, twoFiles)
	f.write("/etc/etc-file", "hello world\n", 0o644)
	f.write("/etc/sentinel", "s\n", 0o644)
	f.write("/etc/secret", "TOPSECRET-WANT\n", 0o600)
	return f
}

// noDriftBefore drifts the sentinel and asserts that no drift record for
// path came before the sentinel's, then restores the sentinel.
func noDriftBefore(t *testing.T, d *daemonProc, f *fixture, from int, path string) {
	t.Helper()
	os.Chmod(f.host("/etc/sentinel"), 0o600)
	_, at := d.waitRecord(from, harness.DriftDetected, map[string]string{"DRIFT_PATH": "/etc/sentinel", "DRIFT_KIND": "mode"})
	if got := d.records(from, at, harness.DriftDetected, map[string]string{"DRIFT_PATH": path}); len(got) > 0 {
		t.Errorf("false drift reported for %s: %s", path, got[0])
	}
	m := d.mark()
	os.Chmod(f.host("/etc/sentinel"), 0o644)
	d.waitRecord(m, harness.MsgDriftResolved, map[string]string{"DRIFT_PATH": "/etc/sentinel"})
}

func TestDetectAndResolve(t *testing.T) {
	f := cleanTwoFiles(t)
	d := startDaemon(t, f.root)
	d.waitStatus("No drift: watching 3 paths, 0 units")

	m := d.mark()
	f.write("/etc/etc-file", "not-the-data", 0o644)
	r, _ := d.waitRecord(m, harness.DriftDetected, map[string]string{"DRIFT_PATH": "/etc/etc-file", "DRIFT_KIND": "content", "DRIFT_ENTRY": "file"})
	if !strings.HasPrefix(r["MESSAGE"], `content mismatch for file "/etc/etc-file" (-want +got):`) || !strings.Contains(r["MESSAGE"], `-hello world\n+not-the-data`) {
		t.Errorf("drift record message = %q, want the seed's line and a -want +got diff", r["MESSAGE"])
	}
	if r[harness.PlainLevel] != "WARN" {
		t.Errorf("drift record level = %s, want WARN", r[harness.PlainLevel])
	}
	d.waitStatus("Drift: 1 path differs (/etc/etc-file: content)")

	m = d.mark()
	f.write("/etc/etc-file", "hello world\n", 0o644)
	d.waitRecord(m, harness.MsgDriftResolved, map[string]string{"DRIFT_PATH": "/etc/etc-file", "DRIFT_KIND": "content"})
	d.waitStatus("No drift: watching 3 paths, 0 units")
	// Once when it appears, once when resolved: exactly one of each.
	if n := len(d.records(0, d.mark(), harness.DriftDetected, map[string]string{"DRIFT_PATH": "/etc/etc-file"})); n != 1 {
		t.Errorf("%d drift records for /etc/etc-file, want 1", n)
	}
}

func TestSecretDriftWithoutContent(t *testing.T) {
	f := cleanTwoFiles(t)
	d := startDaemon(t, f.root)
	m := d.mark()
	f.write("/etc/secret", "TOPSECRET-GOT\n", 0o600)
	_, at := d.waitRecord(m, harness.DriftDetected, map[string]string{"DRIFT_PATH": "/etc/secret", "DRIFT_KIND": "content"})
	line := d.line(at)
	if strings.Contains(d.log(), "TOPSECRET") {
		t.Errorf("secret content reached the records: %s", line)
	}
	// Sizes and keyed digests stand for the bytes (the daemon made the key
	// in its state directory).
	if !strings.Contains(line, "hmac-sha256:") || strings.Contains(line, "sha256 ") || strings.Contains(line, " sha256:") {
		t.Errorf("secret drift record gives no keyed digest, or a plain one: %s", line)
	}
}

// Content that stays wrong is reported though its writer never closes the
// file: the settle time bounds the wait for a write to complete. (The
// writes that end as declared are positive cases: positive_test.go.)
func TestWrongContentNeverClosedIsDrift(t *testing.T) {
	f := cleanTwoFiles(t)
	d := startDaemon(t, f.root, "--settle", "2s")
	target := f.host("/etc/etc-file")
	fh, err := os.OpenFile(target, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	m := d.mark()
	fh.WriteString("half-")
	d.waitRecord(m, harness.DriftDetected, map[string]string{"DRIFT_PATH": "/etc/etc-file", "DRIFT_KIND": "content"})
	fh.Truncate(0)
	fh.WriteAt([]byte("hello world\n"), 0)
	fh.Close()
	d.waitRecord(m, harness.MsgDriftResolved, map[string]string{"DRIFT_PATH": "/etc/etc-file"})
}

// A changed fragment reloads the desired state; a broken one is refused and
// the last good state stays in force.
func TestReloadKeepsLastGoodState(t *testing.T) {
	f := cleanTwoFiles(t)
	d := startDaemon(t, f.root)

	m := d.mark()
	f.write("/etc/drift-monitor/desired.d/60-broken.ign", `{"ignition":{"version":"3.2.0"},"storage":{"files":[{"path":"relative"}]}}`, 0o644)
	r, _ := d.waitRecord(m, harness.MsgLoadFailed, nil)
	if !strings.Contains(r["MESSAGE"], "60-broken.ign") || !strings.Contains(r["MESSAGE"], "path not absolute") {
		t.Errorf("load-failed record does not name the file and the problem: %q", r["MESSAGE"])
	}
	d.wait("status naming the refused config", 10*time.Second, func() bool {
		return strings.Contains(d.status(), "new config refused") && strings.Contains(d.status(), "60-broken.ign")
	})
	// Still checking against the last good state.
	m = d.mark()
	f.write("/etc/etc-file", "drifted\n", 0o644)
	d.waitRecord(m, harness.DriftDetected, map[string]string{"DRIFT_PATH": "/etc/etc-file"})

	// Fixed, and reloaded through SIGHUP too.
	m = d.mark()
	os.Remove(f.host("/etc/drift-monitor/desired.d/60-broken.ign"))
	d.waitRecord(m, harness.MsgReloaded, nil)
	m = d.mark()
	d.cmd.Process.Signal(syscall.SIGHUP)
	d.waitRecord(m, harness.MsgReloaded, nil)
	d.waitNotify("RELOADING=1", 5*time.Second)
	if strings.Contains(d.status(), "refused") {
		t.Errorf("status still says refused after a good reload: %q", d.status())
	}
}

func TestStopsCleanly(t *testing.T) {
	f := cleanTwoFiles(t)
	d := startDaemon(t, f.root)
	d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-d.exited:
		if err != nil {
			t.Errorf("daemon exit: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("daemon did not stop within 10s of SIGTERM")
	}
	d.waitNotify("STOPPING=1", time.Second)
}

var _ = exec.Command

// Exclusions: a declared path that another component legitimately rewrites
// is neither watched nor reported; the admin lists it in a file the daemon
// re-reads on reload.
func TestExclusions(t *testing.T) {
	f := cleanTwoFiles(t)
	f.write("/etc/drift-monitor/exclude.conf", "# rotated by the CA operator\n/etc/etc-file\n", 0o644)
	d := startDaemon(t, f.root, "--exclude-from", "/etc/drift-monitor/exclude.conf")
	d.waitStatus("No drift: watching 2 paths, 0 units; 1 declared path excluded")
	m := d.mark()
	f.write("/etc/etc-file", "rotated\n", 0o644)
	noDriftBefore(t, d, f, m, "/etc/etc-file")

	// Dropping the exclusion and reloading brings the path back.
	m = d.mark()
	f.write("/etc/drift-monitor/exclude.conf", "# nothing excluded\n", 0o644)
	d.cmd.Process.Signal(syscall.SIGHUP)
	d.waitRecord(m, harness.DriftDetected, map[string]string{"DRIFT_PATH": "/etc/etc-file", "DRIFT_KIND": "content"})
	d.waitStatus("Drift: 1 path differs (/etc/etc-file: content)")
}

// TestExclusionsOthersMayWriteAtStart: an exclusion file that any user
// could have written is refused from the start, like a malformed one: a
// record naming the file, its mode and its owner, the status saying that
// only --exclude applies, the path it meant to leave alone reported; made
// root's alone, it applies at once.
func TestExclusionsOthersMayWriteAtStart(t *testing.T) {
	f := cleanTwoFiles(t)
	const conf = "/etc/drift-monitor/exclude.conf"
	f.write(conf, "/etc/etc-file\n", 0o666)
	d := startDaemon(t, f.root)
	r, _ := d.waitRecord(0, harness.MsgLoadFailed, nil)
	why := fmt.Sprintf("%s: mode 0666, owned by uid %d: writable by every user: a user other than root could have written it", conf, os.Geteuid())
	if !strings.Contains(r["MESSAGE"], why) || !strings.Contains(r["MESSAGE"], "none of the file's patterns apply") {
		t.Errorf("the record of the refused file: %q, want it to say %q, and what applies", r["MESSAGE"], why)
	}
	d.wait("the status saying the exclusions are refused", 20*time.Second, func() bool {
		s := d.status()
		return strings.HasPrefix(s, "No drift: watching 3 paths, 0 units; exclusions refused ("+why) && strings.HasSuffix(s, "): only --exclude applies")
	})
	m := d.mark()
	f.write("/etc/etc-file", "rotated\n", 0o644)
	d.waitRecord(m, harness.DriftDetected, map[string]string{"DRIFT_PATH": "/etc/etc-file", "DRIFT_KIND": "content"})
	os.Chmod(f.host(conf), 0o644)
	d.waitStatus("No drift: watching 2 paths, 0 units; 1 declared path excluded")
}

// TestExclusionsRefused: a bad exclusion file never blinds the daemon. At
// start it is refused with a record naming the file and line, the status
// says so, and every declared path is watched (the one it meant to exclude
// is reported); fixed, it applies at once; broken again, the last good
// rules stay in force, and the status says that too. The metrics say it
// all along.
func TestExclusionsRefused(t *testing.T) {
	f := cleanTwoFiles(t)
	const conf = "/etc/drift-monitor/exclude.conf"
	f.write(conf, "/etc/etc-file\netc/sentinel\n", 0o644)
	prom := filepath.Join(t.TempDir(), "drift-monitor.prom")
	d := startDaemon(t, f.root, "--metrics-textfile", prom)
	metrics := func(want ...string) {
		t.Helper()
		d.wait(fmt.Sprintf("metrics %q", want), 20*time.Second, func() bool {
			b, _ := os.ReadFile(prom)
			for _, w := range want {
				if !strings.Contains(string(b), "\n"+w+"\n") {
					return false
				}
			}
			return true
		})
	}
	r, _ := d.waitRecord(0, harness.MsgLoadFailed, nil)
	why := `/etc/drift-monitor/exclude.conf:2: pattern "etc/sentinel" is not an absolute path`
	if !strings.Contains(r["MESSAGE"], why) || !strings.Contains(r["MESSAGE"], "none of the file's patterns apply") {
		t.Errorf("the record of the refused file: %q, want it to name the file and line, and what applies", r["MESSAGE"])
	}
	d.waitStatus("No drift: watching 3 paths, 0 units; exclusions refused (" + why + "): only --exclude applies")
	metrics("drift_monitor_desired_load_failing 1", "drift_monitor_excluded_paths 0", "drift_monitor_watched_paths 3")
	m := d.mark()
	f.write("/etc/etc-file", "rotated\n", 0o644)
	d.waitRecord(m, harness.DriftDetected, map[string]string{"DRIFT_PATH": "/etc/etc-file", "DRIFT_KIND": "content"})

	// Fixed: the file is watched, and applies.
	f.write(conf, "/etc/etc-file\n", 0o644)
	d.waitStatus("No drift: watching 2 paths, 0 units; 1 declared path excluded")
	metrics("drift_monitor_desired_load_failing 0", "drift_monitor_excluded_paths 1", "drift_monitor_watched_paths 2")

	// Broken again: the last good rules stay.
	m = d.mark()
	f.write(conf, "/etc/etc-file\nrelative\n", 0o644)
	d.waitRecord(m, harness.MsgLoadFailed, nil)
	d.waitStatus(`No drift: watching 2 paths, 0 units; 1 declared path excluded; exclusions refused (/etc/drift-monitor/exclude.conf:2: pattern "relative" is not an absolute path), keeping the last good ones`)
	metrics("drift_monitor_desired_load_failing 1", "drift_monitor_excluded_paths 1")
	m = d.mark()
	f.write("/etc/etc-file", "rotated again\n", 0o644)
	noDriftBefore(t, d, f, m, "/etc/etc-file")
}
