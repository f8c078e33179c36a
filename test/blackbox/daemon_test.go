package blackbox

import (
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
	_, at := d.waitRecord(from, harness.MsgDriftDetected, map[string]string{"DRIFT_PATH": "/etc/sentinel", "DRIFT_KIND": "mode"})
	if got := d.records(from, at, harness.MsgDriftDetected, map[string]string{"DRIFT_PATH": path}); len(got) > 0 {
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
	r, _ := d.waitRecord(m, harness.MsgDriftDetected, map[string]string{"DRIFT_PATH": "/etc/etc-file", "DRIFT_KIND": "content", "DRIFT_ENTRY": "file"})
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
	if n := len(d.records(0, d.mark(), harness.MsgDriftDetected, map[string]string{"DRIFT_PATH": "/etc/etc-file"})); n != 1 {
		t.Errorf("%d drift records for /etc/etc-file, want 1", n)
	}
}

func TestDriftReportedOnceNotPerEvent(t *testing.T) {
	f := cleanTwoFiles(t)
	d := startDaemon(t, f.root)
	m := d.mark()
	for i := 0; i < 5; i++ {
		f.write("/etc/etc-file", "wrong "+strings.Repeat("x", i)+"\n", 0o644)
	}
	d.waitRecord(m, harness.MsgDriftDetected, map[string]string{"DRIFT_PATH": "/etc/etc-file"})
	noDriftBefore(t, d, f, d.mark(), "/etc/etc-file")
}

func TestSecretDriftWithoutContent(t *testing.T) {
	f := cleanTwoFiles(t)
	d := startDaemon(t, f.root)
	m := d.mark()
	f.write("/etc/secret", "TOPSECRET-GOT\n", 0o600)
	_, at := d.waitRecord(m, harness.MsgDriftDetected, map[string]string{"DRIFT_PATH": "/etc/secret", "DRIFT_KIND": "content"})
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

// A file rewritten with its correct content by the usual writers never
// produces a drift record: the daemon checks when the write completes.
func TestWritesInProgressAreNotDrift(t *testing.T) {
	f := cleanTwoFiles(t)
	good := filepath.Join(t.TempDir(), "good")
	os.WriteFile(good, []byte("hello world\n"), 0o644)
	d := startDaemon(t, f.root, "--settle", "2s")
	target := f.host("/etc/etc-file")

	writers := []struct {
		name  string
		write func(t *testing.T)
	}{
		// One redirection: one open that truncates, two writes, one close.
		{"shell redirection", func(t *testing.T) {
			f.run("sh", "-c", `{ printf 'hello '; printf 'world\n'; } > "$1"`, "sh", target)
		}},
		{"cp", func(t *testing.T) { f.run("cp", good, target) }},
		{"editor: write a temporary file, rename it into place", func(t *testing.T) {
			tmp := f.host("/etc/.etc-file.swp")
			os.WriteFile(tmp, []byte("hello world\n"), 0o644)
			os.Rename(tmp, target)
		}},
		{"editor: truncate and write in place (backupcopy=yes)", func(t *testing.T) {
			fh, err := os.OpenFile(target, os.O_WRONLY|os.O_TRUNC, 0)
			if err != nil {
				t.Fatal(err)
			}
			fh.WriteString("hello world\n")
			fh.Close()
		}},
		{"a writer that pauses a second between chunks", func(t *testing.T) {
			fh, err := os.OpenFile(target, os.O_WRONLY|os.O_TRUNC, 0)
			if err != nil {
				t.Fatal(err)
			}
			fh.WriteString("hello ")
			time.Sleep(time.Second) // the writer's behaviour under test, not a synchronisation
			fh.WriteString("world\n")
			fh.Close()
		}},
	}
	for _, w := range writers {
		t.Run(w.name, func(t *testing.T) {
			m := d.mark()
			w.write(t)
			noDriftBefore(t, d, f, m, "/etc/etc-file")
		})
	}

	t.Run("content that stays wrong is reported though never closed", func(t *testing.T) {
		fh, err := os.OpenFile(target, os.O_WRONLY|os.O_TRUNC, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer fh.Close()
		m := d.mark()
		fh.WriteString("half-")
		d.waitRecord(m, harness.MsgDriftDetected, map[string]string{"DRIFT_PATH": "/etc/etc-file", "DRIFT_KIND": "content"})
		fh.Truncate(0)
		fh.WriteAt([]byte("hello world\n"), 0)
		fh.Close()
		d.waitRecord(m, harness.MsgDriftResolved, map[string]string{"DRIFT_PATH": "/etc/etc-file"})
	})
}

// A declared directory deleted, re-created, then drifted again: the watch
// came back with it.
func TestDirectoryDeletedRecreatedDriftsAgain(t *testing.T) {
	f := newFixture(t, `{"ignition":{"version":"3.2.0"},"storage":{
	 "directories":[{"path":"/etc/app","mode":493}],
	 "files":[{"path":"/etc/app/conf.d/a.conf","mode":420,"contents":{"source":"data:,a%0A"}}]}}`)
	f.write("/etc/app/conf.d/a.conf", "a\n", 0o644)
	os.Chmod(f.host("/etc/app"), 0o755)
	d := startDaemon(t, f.root)
	d.waitStatus("No drift: watching 2 paths, 0 units")

	m := d.mark()
	os.RemoveAll(f.host("/etc/app"))
	d.waitRecord(m, harness.MsgDriftDetected, map[string]string{"DRIFT_PATH": "/etc/app", "DRIFT_KIND": "missing"})
	d.waitRecord(m, harness.MsgDriftDetected, map[string]string{"DRIFT_PATH": "/etc/app/conf.d/a.conf", "DRIFT_KIND": "missing"})

	m = d.mark()
	os.MkdirAll(f.host("/etc/app/conf.d"), 0o755)
	os.WriteFile(f.host("/etc/app/conf.d/a.conf"), []byte("a\n"), 0o644)
	d.waitRecord(m, harness.MsgDriftResolved, map[string]string{"DRIFT_PATH": "/etc/app"})
	d.waitRecord(m, harness.MsgDriftResolved, map[string]string{"DRIFT_PATH": "/etc/app/conf.d/a.conf"})
	d.waitStatus("No drift: watching 2 paths, 0 units")

	m = d.mark()
	os.WriteFile(f.host("/etc/app/conf.d/a.conf"), []byte("b\n"), 0o644)
	d.waitRecord(m, harness.MsgDriftDetected, map[string]string{"DRIFT_PATH": "/etc/app/conf.d/a.conf", "DRIFT_KIND": "content"})
}

func TestFileTurnedIntoDirectoryOrLink(t *testing.T) {
	f := cleanTwoFiles(t)
	d := startDaemon(t, f.root)
	m := d.mark()
	os.Remove(f.host("/etc/etc-file"))
	os.Mkdir(f.host("/etc/etc-file"), 0o755)
	d.waitRecord(m, harness.MsgDriftDetected, map[string]string{"DRIFT_PATH": "/etc/etc-file", "DRIFT_KIND": "type"})
	os.Remove(f.host("/etc/etc-file"))
	os.Symlink("sentinel", f.host("/etc/etc-file"))
	// The daemon may see the directory gone before the link appears
	// (missing, then type again): flush its events with a sentinel drift
	// before looking at what follows.
	os.Chmod(f.host("/etc/sentinel"), 0o600)
	d.waitRecord(m, harness.MsgDriftDetected, map[string]string{"DRIFT_PATH": "/etc/sentinel"})
	os.Chmod(f.host("/etc/sentinel"), 0o644)
	d.waitStatus("Drift: 1 path differs (/etc/etc-file: type)")
	m = d.mark()
	os.Remove(f.host("/etc/etc-file"))
	os.WriteFile(f.host("/etc/etc-file"), []byte("hello world\n"), 0o644)
	d.waitRecord(m, harness.MsgDriftResolved, map[string]string{"DRIFT_PATH": "/etc/etc-file", "DRIFT_KIND": "type"})
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
	d.waitRecord(m, harness.MsgDriftDetected, map[string]string{"DRIFT_PATH": "/etc/etc-file"})

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
	d.waitStatus("No drift: watching 2 paths, 0 units")
	m := d.mark()
	f.write("/etc/etc-file", "rotated\n", 0o644)
	noDriftBefore(t, d, f, m, "/etc/etc-file")

	// Dropping the exclusion and reloading brings the path back.
	m = d.mark()
	f.write("/etc/drift-monitor/exclude.conf", "# nothing excluded\n", 0o644)
	d.cmd.Process.Signal(syscall.SIGHUP)
	d.waitRecord(m, harness.MsgDriftDetected, map[string]string{"DRIFT_PATH": "/etc/etc-file", "DRIFT_KIND": "content"})
	d.waitStatus("Drift: 1 path differs (/etc/etc-file: content)")
}
