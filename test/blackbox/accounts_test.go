package blackbox

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/drift-monitor/drift-monitor/test/harness"
)

const (
	accountsWantHash = "$6$bbWantSalt$WantedHashThatNoRecordMayShow"
	accountsGotHash  = "$6$bbGotSalt$AnotherHashThatNoRecordMayShow"
)

// accountsConfig declares core's shell, groups and password, and the group
// docker.
var accountsConfig = fmt.Sprintf(`{"ignition":{"version":"3.4.0"},
 "storage":{"files":[{"path":"/etc/sentinel","mode":420,"contents":{"source":"data:,s%%0A"}}]},
 "passwd":{
 "groups":[{"name":"docker","gid":1500}],
 "users":[{"name":"core","shell":"/bin/bash","groups":["docker"],"passwordHash":%q}]}}`, accountsWantHash)

// accountsRoot is a root whose account files hold what the config declares,
// as Ignition leaves them.
func accountsRoot(t *testing.T) *fixture {
	f := newFixture(t, accountsConfig)
	f.write("/etc/passwd", "root:x:0:0:root:/root:/bin/bash\ncore:x:1000:1000::/home/core:/bin/bash\n", 0o644)
	f.write("/etc/shadow", "root:*:19000:0:99999:7:::\ncore:"+accountsWantHash+":19000:0:99999:7:::\n", 0o640)
	f.write("/etc/group", "root:x:0:\ncore:x:1000:\ndocker:x:1500:core\n", 0o644)
	f.write("/etc/gshadow", "root:*::\ncore:!::\ndocker:!::core\n", 0o640)
	f.write("/etc/sentinel", "s\n", 0o644)
	return f
}

// replaceByRename writes p anew and renames it into place, as vipw and
// shadow-utils do (FILE+ then rename).
func (f *fixture) replaceByRename(p, content string) {
	f.t.Helper()
	tmp := f.host(p + "+")
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		f.t.Fatal(err)
	}
	if err := os.Rename(tmp, f.host(p)); err != nil {
		f.t.Fatal(err)
	}
}

// TestAccountsWatched: the daemon watches the account files, which are
// replaced by rename: a shell or password changed on a declared user is
// one record naming it and the field, within the usual latency; a change
// to an undeclared user is none; no record shows a hash; and a change made
// while a live writer holds the files' lock is judged once it lets go.
func TestAccountsWatched(t *testing.T) {
	f := accountsRoot(t)
	d := startDaemon(t, f.root)
	d.waitStatus("No drift: watching 3 paths, 0 units")

	m := d.mark()
	start := time.Now()
	f.replaceByRename("/etc/passwd", "root:x:0:0:root:/root:/bin/bash\ncore:x:1000:1000::/home/core:/bin/sh\n")
	r, _ := d.waitRecord(m, harness.DriftDetected, map[string]string{"DRIFT_ENTRY": "user", "DRIFT_KIND": "shell", "DRIFT_USER": "core", "DRIFT_PATH": "/etc/passwd"})
	t.Logf("a shell changed by rename: reported in %s", fmtDur(time.Since(start)))
	if !strings.Contains(r["MESSAGE"], `user "core": shell is "/bin/sh", want "/bin/bash"`) {
		t.Errorf("message %q", r["MESSAGE"])
	}
	d.waitStatus(`Drift: 1 path differs (user core: shell)`)

	// An undeclared user added: nothing, as the sentinel's record (a
	// declared field drifted after it) proves by coming first.
	m = d.mark()
	f.replaceByRename("/etc/passwd", "root:x:0:0:root:/root:/bin/bash\ncore:x:1000:1000::/home/core:/bin/sh\nmallory:x:0:0::/:/bin/bash\n")
	f.replaceByRename("/etc/group", "root:x:0:\ncore:x:1000:\ndocker:x:1500:core,mallory\nwheel:x:10:mallory\n")
	f.replaceByRename("/etc/shadow", "root:*:19000:0:99999:7:::\ncore:"+accountsGotHash+":19000:0:99999:7:::\nmallory::19000::::::\n")
	_, at := d.waitRecord(m, harness.DriftDetected, map[string]string{"DRIFT_KIND": "password-hash", "DRIFT_USER": "core", "DRIFT_PATH": "/etc/shadow"})
	if got := d.records(m, at, harness.DriftDetected, nil); len(got) > 0 {
		t.Errorf("a change to an undeclared user was reported: %v", got)
	}
	if line := d.line(at); !strings.Contains(line, "password hash differs") {
		t.Errorf("password record %q", line)
	}

	// A writer holds the lock (its pid: this test's) while it changes the
	// groups: nothing until it lets go, then the drift.
	m = d.mark()
	f.write("/etc/group.lock", fmt.Sprintf("%d", os.Getpid()), 0o600)
	f.replaceByRename("/etc/group", "root:x:0:\ncore:x:1000:\ndocker:x:1500:mallory\nwheel:x:10:mallory\n")
	f.replaceByRename("/etc/passwd", "root:x:0:0:root:/root:/bin/bash\ncore:x:1000:1000::/home/core:/bin/zsh\nmallory:x:0:0::/:/bin/bash\n")
	// The sentinel's record comes after the daemon saw both changes.
	os.Chmod(f.host("/etc/sentinel"), 0o600)
	_, at = d.waitRecord(m, harness.DriftDetected, map[string]string{"DRIFT_PATH": "/etc/sentinel", "DRIFT_KIND": "mode"})
	if got := d.records(m, at, harness.DriftDetected, map[string]string{"DRIFT_USER": "core"}); len(got) > 0 {
		t.Errorf("reported while the account files were locked: %v", got)
	}
	os.Chmod(f.host("/etc/sentinel"), 0o644)
	start = time.Now()
	if err := os.Remove(f.host("/etc/group.lock")); err != nil {
		t.Fatal(err)
	}
	d.waitRecord(m, harness.DriftDetected, map[string]string{"DRIFT_KIND": "groups", "DRIFT_USER": "core", "DRIFT_PATH": "/etc/group"})
	t.Logf("a change under the lock: reported %s after it went", fmtDur(time.Since(start)))

	// Put back: every drift resolved.
	m = d.mark()
	f.replaceByRename("/etc/passwd", "root:x:0:0:root:/root:/bin/bash\ncore:x:1000:1000::/home/core:/bin/bash\n")
	f.replaceByRename("/etc/shadow", "root:*:19000:0:99999:7:::\ncore:"+accountsWantHash+":19000:0:99999:7:::\n")
	f.replaceByRename("/etc/group", "root:x:0:\ncore:x:1000:\ndocker:x:1500:core\n")
	d.waitStatus("No drift: watching 3 paths, 0 units")
	for _, kind := range []string{"shell", "password-hash", "groups"} {
		d.waitRecord(m, harness.MsgDriftResolved, map[string]string{"DRIFT_KIND": kind, "DRIFT_USER": "core"})
	}
	for _, s := range []string{"WantedHashThatNoRecordMayShow", "AnotherHashThatNoRecordMayShow", "bbWantSalt", "bbGotSalt"} {
		if strings.Contains(d.log(), s) {
			t.Errorf("a password hash reached the records (%s)", s)
		}
	}
}

// TestAccountsWithShadowUtils: the real usermod, with --root, on a root the
// daemon watches.
func TestAccountsWithShadowUtils(t *testing.T) {
	harness.RequireRoot(t, "usermod --root chroots into the root")
	harness.RequireTools(t, "usermod")
	f := accountsRoot(t)
	d := startDaemon(t, f.root)
	d.waitStatus("No drift: watching 3 paths, 0 units")
	m := d.mark()
	start := time.Now()
	if out, err := exec.Command("usermod", "--root", f.root, "--shell", "/bin/sh", "core").CombinedOutput(); err != nil {
		t.Fatalf("usermod: %v\n%s", err, out)
	}
	d.waitRecord(m, harness.DriftDetected, map[string]string{"DRIFT_KIND": "shell", "DRIFT_USER": "core"})
	t.Logf("usermod --shell: reported in %s", fmtDur(time.Since(start)))
	if got := d.records(m, d.mark(), harness.DriftDetected, nil); len(got) != 1 {
		t.Errorf("usermod --shell brought %d drift records, want 1: %v", len(got), got)
	}
}

// TestAccountsSecretsInEveryOutput: a password hash that differs reaches
// no output of the daemon's: its records, its status over the bus (text and
// JSON), its metrics textfile; the metrics count the drift by its kind.
func TestAccountsSecretsInEveryOutput(t *testing.T) {
	bus := privateBus(t)
	f := accountsRoot(t)
	metrics := filepath.Join(t.TempDir(), "drift-monitor.prom")
	d := startDaemonWith(t, f.root, daemonOpts{bus: bus, args: []string{"--metrics-textfile", metrics}})
	d.waitStatus("No drift: watching 3 paths, 0 units")
	m := d.mark()
	f.replaceByRename("/etc/shadow", "root:*:19000:0:99999:7:::\ncore:"+accountsGotHash+":19000:0:99999:7:::\n")
	d.waitRecord(m, harness.DriftDetected, map[string]string{"DRIFT_KIND": "password-hash", "DRIFT_USER": "core"})
	var outs []string
	d.wait("status drifted over the bus", 10*time.Second, func() bool {
		text, _, code := runCLI(t, bus, "status")
		js, _, _ := runCLI(t, bus, "status", "--format", "json")
		outs = []string{text, js}
		return code == 1 && strings.Contains(text, "user core: password-hash") && strings.Contains(js, "password hash differs")
	})
	d.wait("the metrics count the drift", 10*time.Second, func() bool {
		b, _ := os.ReadFile(metrics)
		outs = append(outs[:2], string(b))
		return strings.Contains(string(b), `drift_monitor_drift_entries{kind="password-hash"} 1`)
	})
	outs = append(outs, d.log())
	for _, o := range outs {
		for _, s := range []string{"WantedHashThatNoRecordMayShow", "AnotherHashThatNoRecordMayShow", "bbWantSalt", "bbGotSalt"} {
			if strings.Contains(o, s) {
				t.Errorf("a password hash (%s) in an output:\n%s", s, o)
			}
		}
	}
}

// TestAccountsCheckedUnprivileged: a check that cannot read /etc/shadow
// (not root) judges what it can read and says which hash it could not: a
// declared password is unreadable (drift: not seen is not clean), the
// rest as usual.
func TestAccountsCheckedUnprivileged(t *testing.T) {
	harness.RequireRoot(t, "the check runs as nobody")
	f := accountsRoot(t)
	// Where nobody can reach it: t.TempDir's parent is 0700.
	dir, err := os.MkdirTemp("", "dm-accounts-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o755)
	if out, err := exec.Command("cp", "-a", f.root, dir+"/root").CombinedOutput(); err != nil {
		t.Fatalf("cp: %v\n%s", err, out)
	}
	f.root = dir + "/root"
	os.Chmod(f.host("/etc/shadow"), 0o600)
	out, code := asNobody(t, []string{"CACHE_DIRECTORY=" + t.TempDir()}, harness.Binary(t), "check", "--root", f.root, "--format", "json")
	if code != 1 {
		t.Fatalf("exit %d, want 1:\n%s", code, out)
	}
	var rep harness.Report
	if err := json.Unmarshal([]byte(out[strings.Index(out, "{"):]), &rep); err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	if len(rep.Drift) != 1 || rep.Drift[0].Kind != "unreadable" || rep.Drift[0].Path != "/etc/shadow" || rep.Drift[0].User != "core" {
		t.Errorf("drift %+v, want only core's password unreadable", rep.Drift)
	}
}
