package blackbox

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/drift-monitor/drift-monitor/test/harness"
	"github.com/godbus/dbus/v5"
)

// The kernel's audit is not namespaced: these run the daemon on the host,
// on a temporary root, with the kernel's real audit records. harness's
// AuditHost restores the host's audit state (rules of the key
// drift-monitor deleted, the enabled flag) after each test.

const attributed = `{"ignition":{"version":"3.4.0"},"storage":{
 "files":[
  {"path":"/etc/shared","mode":438,"contents":{"source":"data:,s%0A"}},
  {"path":"/etc/sed-me","mode":420,"contents":{"source":"data:,a%0A"}},
  {"path":"/etc/moved","mode":420,"contents":{"source":"data:,m%0A"}},
  {"path":"/etc/mode","mode":420,"contents":{"source":"data:,c%0A"}},
  {"path":"/etc/removed","mode":420,"contents":{"source":"data:,r%0A"}},
  {"path":"/etc/locked","mode":420,"contents":{"source":"data:,l%0A"}},
  {"path":"/etc/immutable","mode":420,"contents":{"source":"data:,i%0A"}}],
 "links":[{"path":"/etc/link","target":"/etc/mode"}]}}`

func attributionFixture(t *testing.T, bus string) (*fixture, *daemonProc, *os.File) {
	t.Helper()
	harness.AuditHost(t, "drift-monitor")
	harness.RequireTools(t, "setpriv", "sed", "chattr")
	f := newFixture(t, attributed)
	f.write("/etc/shared", "s\n", 0o666)
	f.write("/etc/sed-me", "a\n", 0o644)
	f.write("/etc/moved", "m\n", 0o644)
	f.write("/etc/mode", "c\n", 0o644)
	f.write("/etc/removed", "r\n", 0o644)
	f.write("/etc/locked", "l\n", 0o644)
	f.write("/etc/immutable", "i\n", 0o644)
	if err := os.Symlink("/etc/mode", f.host("/etc/link")); err != nil {
		t.Fatal(err)
	}
	f.write("/etc/passwd", "root:x:0:0::/root:/bin/sh\nalice:x:1000:1000::/home/alice:/bin/sh\n", 0o644)
	// Nobody must reach /etc/shared through the test's temporary
	// directory (t.TempDir's parent is 0700; never touch /tmp itself).
	os.Chmod(parentDir(f.root), 0o755)
	// A write through a descriptor opened before the rules existed is
	// no audited event (-p w audits the open).
	early, err := os.OpenFile(f.host("/etc/locked"), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { early.Close() })
	d := startDaemonWith(t, f.root, daemonOpts{bus: bus, args: []string{"--attribution=audit"}, env: []string{"STATE_DIRECTORY=" + t.TempDir()}})
	d.waitStatus("No drift: watching 8 paths, 0 units")
	return f, d, early
}

func parentDir(p string) string {
	i := strings.LastIndexByte(p, '/')
	if i <= 0 {
		return "/"
	}
	return p[:i]
}

// drifted waits for path's drift record and checks its writer's fields.
func drifted(t *testing.T, d *daemonProc, from int, path string, want map[string]string) harness.Record {
	t.Helper()
	r, _ := d.waitRecord(from, harness.DriftDetected, map[string]string{"DRIFT_PATH": path})
	for k, v := range want {
		if r[k] != v {
			t.Errorf("%s: %s = %q, want %q (record %s)", path, k, r[k], v, r)
		}
	}
	return r
}

func TestAttributionWriters(t *testing.T) {
	bus := privateBus(t)
	f, d, early := attributionFixture(t, bus)

	// Another uid with a login uid set: the record keeps auid 1000.
	m := d.mark()
	cmd := exec.Command("sh", "-c", `echo 1000 > /proc/self/loginuid && exec setpriv --reuid=65534 --regid=65534 --clear-groups sh -c 'echo y >> "$0"' "$1"`, "sh", f.host("/etc/shared"))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("append as nobody: %v: %s", err, out)
	}
	r := drifted(t, d, m, "/etc/shared", map[string]string{
		"DRIFT_WRITER_AUID": "1000", "DRIFT_WRITER_UID": "65534", "DRIFT_WRITER_COMM": "sh",
		"DRIFT_WRITER_PID": strconv.Itoa(cmd.Process.Pid),
	})
	shared := r
	if !strings.Contains(r["MESSAGE"], "changed by alice (auid 1000, session ") || !strings.Contains(r["MESSAGE"], "as uid 65534) running sh (pid "+strconv.Itoa(cmd.Process.Pid)+")") {
		t.Errorf("message does not say who in words: %q", r["MESSAGE"])
	}

	pids := map[string]int{}
	for _, tc := range []struct {
		path, comm string
		cmd        []string
	}{
		{"/etc/sed-me", "sed", []string{"sed", "-i", "s/a/b/", f.host("/etc/sed-me")}},
		{"/etc/moved", "mv", []string{"sh", "-c", `echo other > "$0.new" && exec mv "$0.new" "$0"`, f.host("/etc/moved")}},
		{"/etc/link", "ln", []string{"ln", "-sfn", "/etc/sed-me", f.host("/etc/link")}},
		{"/etc/mode", "chmod", []string{"chmod", "600", f.host("/etc/mode")}},
		{"/etc/removed", "rm", []string{"rm", f.host("/etc/removed")}},
	} {
		m := d.mark()
		c := exec.Command(tc.cmd[0], tc.cmd[1:]...)
		if out, err := c.CombinedOutput(); err != nil {
			t.Fatalf("%v: %v: %s", tc.cmd, err, out)
		}
		want := map[string]string{"DRIFT_WRITER_COMM": tc.comm, "DRIFT_WRITER_AUID": ourAUID(t)}
		if tc.comm != "mv" { // mv runs as a child of sh
			want["DRIFT_WRITER_PID"] = strconv.Itoa(c.Process.Pid)
		}
		drifted(t, d, m, tc.path, want)
		pids[tc.path] = c.Process.Pid
	}

	// status says the same as the journal; check is unaffected.
	var rep harness.StatusReport
	d.wait("status over the bus", 10*time.Second, func() bool {
		out, _, code := runCLI(t, bus, "status", "--format", "json")
		return code == 1 && json.Unmarshal([]byte(out), &rep) == nil
	})
	said := map[string]string{}
	for _, it := range rep.Drift {
		said[it.Path] = it.Message
	}
	if m := said["/etc/sed-me"]; !strings.Contains(m, " changed by uid ") || !strings.Contains(m, " running sed (pid ") {
		t.Errorf("status json message for /etc/sed-me = %q, want its writer", m)
	}
	statusWritersAreFields(t, rep, shared, pids["/etc/sed-me"])
	busWritersAreFields(t, bus, pids["/etc/sed-me"])
	out, _, _ := runCLI(t, "", "check", "--root", f.root, "--format", "json")
	if !strings.Contains(out, "/etc/sed-me") || strings.Contains(out, "changed by") {
		t.Errorf("check does not report /etc/sed-me, or names writers:\n%s", out)
	}

	// A write no audit record covers: drift, and an honest unknown.
	// (chattr +i, an ioctl, is the same now that drift-monitor checks
	// file attributes.)
	m = d.mark()
	if _, err := early.WriteString("more\n"); err != nil {
		t.Fatal(err)
	}
	early.Close()
	r = drifted(t, d, m, "/etc/locked", nil)
	if !strings.HasPrefix(r["DRIFT_WRITER"], "unknown (not covered by audit") {
		t.Errorf("unaudited write: DRIFT_WRITER = %q, want unknown (not covered by audit…)", r["DRIFT_WRITER"])
	}

	// chattr +i is an ioctl, which no -p wa rule audits: the fileattr
	// drift (seen at the next full check: a reload here) has no writer,
	// and says why.
	if out, err := exec.Command("chattr", "+i", f.host("/etc/immutable")).CombinedOutput(); err != nil {
		t.Fatalf("chattr +i: %v: %s", err, out)
	}
	t.Cleanup(func() { exec.Command("chattr", "-i", f.host("/etc/immutable")).Run() })
	m = d.mark()
	d.cmd.Process.Signal(syscall.SIGHUP)
	r = drifted(t, d, m, "/etc/immutable", map[string]string{"DRIFT_KIND": "fileattr"})
	if !strings.HasPrefix(r["DRIFT_WRITER"], "unknown (not covered by audit") {
		t.Errorf("chattr +i: DRIFT_WRITER = %q, want unknown (not covered by audit…)", r["DRIFT_WRITER"])
	}

	// At stop the rules go.
	d.cmd.Process.Signal(syscall.SIGTERM)
	<-d.done
	// Only the daemon's own rules count: the host may hold others.
	if out := harness.AuditCommand(t, "-l", "-k", "drift-monitor"); strings.Contains(out, "-k drift-monitor") || strings.Contains(out, "key=drift-monitor") {
		t.Errorf("rules left after the daemon stopped:\n%s", out)
	}
}

func TestAttributionRulesRestoredAndDenied(t *testing.T) {
	f, d, _ := attributionFixture(t, "")
	m := d.mark()
	harness.AuditCommand(t, "-D", "-k", "drift-monitor")
	d.waitRecord(m, harness.MsgAttribution, map[string]string{"ATTRIBUTION_STATE": "rules-missing"})
	harness.Poll(t, d.waiting(10*time.Second), "the rules added again", func() (bool, string) {
		out, _ := exec.Command("auditctl", "-l", "-k", "drift-monitor").CombinedOutput()
		return strings.Count(string(out), "-w ") >= 7, string(out)
	})
	// A denied attempt is a notice, not drift.
	m = d.mark()
	out, err := exec.Command("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "sh", "-c", `echo x >> "$0"`, f.host("/etc/mode")).CombinedOutput()
	if err == nil {
		t.Fatalf("nobody wrote a 0644 root file: %s", out)
	}
	r, at := d.waitRecord(m, harness.MsgChangeDenied, map[string]string{"DRIFT_PATH": "/etc/mode", "DRIFT_WRITER_UID": "65534"})
	if !strings.HasPrefix(r["MESSAGE"], "Attempted change denied: /etc/mode") {
		t.Errorf("message %q", r["MESSAGE"])
	}
	if got := d.records(m, at+1, harness.DriftDetected, nil); len(got) > 0 {
		t.Errorf("a denied write reported as drift: %s", got[0])
	}

	// What changes under the daemon changes what it claims, at once.
	m = d.mark()
	never := []string{"never,task", "-F", "uid=3999999"}
	harness.AuditCommand(t, append([]string{"-a"}, never...)...)
	t.Cleanup(func() { exec.Command("auditctl", append([]string{"-d"}, never...)...).Run() })
	d.waitRecord(m, harness.MsgAttribution, map[string]string{"ATTRIBUTION_STATE": "never-task"})
	d.waitStatus("No drift: watching 8 paths, 0 units; writers unknown: attribution never-task")
	m = d.mark()
	harness.AuditCommand(t, append([]string{"-d"}, never...)...)
	d.waitRecord(m, harness.MsgAttribution, map[string]string{"ATTRIBUTION_STATE": "ok"})
	m = d.mark()
	harness.AuditCommand(t, "-e", "0")
	d.waitRecord(m, harness.MsgAttribution, map[string]string{"ATTRIBUTION_STATE": "audit-disabled"})
	d.waitStatus("No drift: watching 8 paths, 0 units; writers unknown: attribution audit-disabled")
}

func TestAttributionAuditDisabled(t *testing.T) {
	harness.AuditHost(t, "drift-monitor")
	f := newFixture(t, attributed)
	f.write("/etc/mode", "c\n", 0o644)
	harness.AuditCommand(t, "-e", "0")
	d := startDaemonWith(t, f.root, daemonOpts{args: []string{"--attribution=audit"}, env: []string{"STATE_DIRECTORY=" + t.TempDir()}})
	d.waitRecord(0, harness.MsgAttribution, map[string]string{"ATTRIBUTION_STATE": "audit-disabled"})
	m := d.mark()
	os.Chmod(f.host("/etc/mode"), 0o600)
	r := drifted(t, d, m, "/etc/mode", map[string]string{"DRIFT_WRITER": "unknown (attribution audit-disabled)"})
	if !strings.Contains(r["MESSAGE"], "writer unknown: attribution audit-disabled") {
		t.Errorf("message %q", r["MESSAGE"])
	}
}

// ourAUID is the test's own login uid, which its children inherit.
func ourAUID(t *testing.T) string {
	b, err := os.ReadFile("/proc/self/loginuid")
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// TestAttributionPrivateNetwork: in a private network namespace (the
// unit's PrivateNetwork=yes) the kernel multicasts no record to the
// daemon; the canary says so rather than drift going unattributed
// silently. This is why the drop-in sets PrivateNetwork=no.
func TestAttributionPrivateNetwork(t *testing.T) {
	harness.AuditHost(t, "drift-monitor")
	harness.RequireTools(t, "unshare")
	f := newFixture(t, attributed)
	f.write("/etc/mode", "c\n", 0o644)
	d := startDaemonWith(t, f.root, daemonOpts{prefix: []string{"unshare", "-n"}, args: []string{"--attribution=audit"}, env: []string{"STATE_DIRECTORY=" + t.TempDir()}})
	r, _ := d.waitRecord(0, harness.MsgAttribution, map[string]string{"ATTRIBUTION_STATE": "canary-failed"})
	if !strings.Contains(r["MESSAGE"], "produced no audit record within 2s") {
		t.Errorf("message %q", r["MESSAGE"])
	}
	d.waitStatus("Drift: 7 paths differ (/etc/immutable: missing; /etc/link: missing; /etc/locked: missing; …); writers unknown: attribution canary-failed")
}

// statusWritersAreFields: status --format json gives each drift's writers
// as fields, the same as the journal record's DRIFT_WRITER_* (shared is
// /etc/shared's record: a login user's write as another uid).
func statusWritersAreFields(t *testing.T, rep harness.StatusReport, shared harness.Record, sedPID int) {
	t.Helper()
	items := map[string]harness.Item{}
	for _, it := range rep.Drift {
		items[it.Path] = it
	}
	it := items["/etc/shared"]
	if len(it.Writers) == 0 {
		t.Fatalf("status json: /etc/shared has no writers: %+v", it)
	}
	w := it.Writers[0]
	str := func(p *uint32) string {
		if p == nil {
			return "(none)"
		}
		return strconv.FormatUint(uint64(*p), 10)
	}
	pid := "(none)"
	if w.PID != nil {
		pid = strconv.Itoa(*w.PID)
	}
	got := map[string]string{"DRIFT_WRITER_AUID": str(w.AUID), "DRIFT_WRITER_SES": str(w.Session), "DRIFT_WRITER_UID": str(w.UID),
		"DRIFT_WRITER_PID": pid, "DRIFT_WRITER_COMM": w.Comm, "DRIFT_WRITER_EXE": w.Exe, "DRIFT_WRITER_SYSCALL": w.Syscall,
		"DRIFT_WRITER_USER": w.LoginUser}
	for k, v := range got {
		if shared[k] != v {
			t.Errorf("status json: /etc/shared's writer %s = %q, the journal's %q", k, v, shared[k])
		}
	}
	if w.LoginUser != "alice" || w.AUID == nil || *w.AUID != 1000 || w.UID == nil || *w.UID != 65534 {
		t.Errorf("status json: /etc/shared's writer %+v, want alice (auid 1000) as uid 65534", w)
	}
	if s := items["/etc/sed-me"].Writers; len(s) == 0 || s[0].Comm != "sed" || s[0].PID == nil || *s[0].PID != sedPID || s[0].Syscall == "" {
		t.Errorf("status json: /etc/sed-me's writers %+v, want sed (pid %d) with its system call", s, sedPID)
	}
	if it := items["/etc/sed-me"]; it.WriterUnknown != "" {
		t.Errorf("status json: /etc/sed-me writer_unknown %q beside its writers", it.WriterUnknown)
	}
}

// busWritersAreFields: GetDriftEx gives the writers as typed fields, over
// the daemon's real bus connection; GetDrift's (sssss) is what it was.
func busWritersAreFields(t *testing.T, bus string, sedPID int) {
	t.Helper()
	c := harness.DialBus(t, bus)
	obj := c.Object("org.driftmonitor.DriftMonitor1", "/org/driftmonitor/DriftMonitor1")
	var gen uint64
	var total uint32
	var page []struct {
		Kind, Entry, Path, Unit, Message string
		Details                          map[string]dbus.Variant
	}
	if err := obj.Call("org.driftmonitor.DriftMonitor1.GetDriftEx", 0, uint32(0), uint32(0)).Store(&gen, &total, &page); err != nil {
		t.Fatalf("GetDriftEx: %v", err)
	}
	var plain []struct{ Kind, Entry, Path, Unit, Message string }
	if err := obj.Call("org.driftmonitor.DriftMonitor1.GetDrift", 0, uint32(0), uint32(0)).Store(&gen, &total, &plain); err != nil {
		t.Fatalf("GetDrift: %v", err)
	}
	if len(plain) != len(page) {
		t.Fatalf("GetDrift: %d drifts, GetDriftEx %d", len(plain), len(page))
	}
	for i, it := range page {
		if p := plain[i]; p.Path != it.Path || p.Message != it.Message {
			t.Errorf("item %d: GetDrift %+v, GetDriftEx %s %q", i, p, it.Path, it.Message)
		}
		if it.Path != "/etc/sed-me" {
			continue
		}
		var ws []map[string]dbus.Variant
		if err := it.Details["writers"].Store(&ws); err != nil || len(ws) == 0 {
			t.Fatalf("GetDriftEx: /etc/sed-me's writers: %v (%v)", it.Details, err)
		}
		if ws[0]["comm"].Value() != "sed" || ws[0]["pid"].Value() != uint32(sedPID) {
			t.Errorf("GetDriftEx: /etc/sed-me's writer %v, want sed (pid %d)", ws[0], sedPID)
		}
	}
}

// TestAttributionOverrunSaid: records that come faster than the daemon
// reads them overflow its socket's buffer, and the kernel drops them for
// it alone, counting them on the socket (net/netlink/af_netlink.c,
// netlink_overrun): the daemon says so at once, in a record and on its
// status line, rather than leave writers missing without a word. Here the
// daemon is stopped while a script appends to a declared file until the
// kernel counts drops on the daemon's record socket.
func TestAttributionOverrunSaid(t *testing.T) {
	f, d, _ := attributionFixture(t, "")
	pid := d.cmd.Process.Pid
	if err := d.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	stopped := true
	t.Cleanup(func() {
		if stopped {
			d.cmd.Process.Signal(syscall.SIGCONT)
		}
	})
	for batch := 0; recordSocketDrops(t, pid) == 0; batch++ {
		if batch == 100 {
			t.Fatalf("50,000 audited appends and no record dropped on the stopped daemon's socket")
		}
		out, err := exec.Command("sh", "-c", `i=0; while [ "$i" -lt 500 ]; do echo y >>"$0"; i=$((i+1)); done`, f.host("/etc/shared")).CombinedOutput()
		if err != nil {
			t.Fatalf("appending: %v: %s", err, out)
		}
	}
	m := d.mark()
	if err := d.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	stopped = false
	r, _ := d.waitRecord(m, harness.MsgAttribution, map[string]string{"ATTRIBUTION_STATE": "records-lost"})
	if !strings.Contains(r["MESSAGE"], "audit socket overflowed") {
		t.Errorf("records-lost record %q does not say the socket overflowed", r["MESSAGE"])
	}
	d.wait("the status line saying so", 10*time.Second, func() bool {
		return strings.HasSuffix(d.status(), "; writers unknown: attribution records-lost")
	})
}

// recordSocketDrops is what the kernel dropped for pid's audit record
// sockets (NETLINK_AUDIT, joined to a multicast group): /proc/net/netlink's
// Drops, summed.
func recordSocketDrops(t *testing.T, pid int) int {
	t.Helper()
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatal(err)
	}
	inodes := map[string]bool{}
	for _, fd := range fds {
		if l, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name())); err == nil {
			if ino, ok := strings.CutPrefix(l, "socket:["); ok {
				inodes[strings.TrimSuffix(ino, "]")] = true
			}
		}
	}
	b, err := os.ReadFile("/proc/net/netlink")
	if err != nil {
		t.Fatal(err)
	}
	drops := 0
	// sk Eth Pid Groups Rmem Wmem Dump Locks Drops Inode
	for _, line := range strings.Split(string(b), "\n")[1:] {
		f := strings.Fields(line)
		if len(f) >= 10 && f[1] == "9" && f[3] != "00000000" && inodes[f[9]] {
			n, _ := strconv.Atoi(f[8])
			drops += n
		}
	}
	return drops
}
