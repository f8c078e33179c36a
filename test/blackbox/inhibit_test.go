package blackbox

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/drift-monitor/drift-monitor/test/harness"
	"github.com/godbus/dbus/v5"
)

// holder runs `drift-monitor inhibit ... -- ARGS` in its own process group
// (killed at cleanup with everything it started).
func holder(t *testing.T, bus, dir, who, why string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(harness.Binary(t), append([]string{"inhibit", "--who", who, "--why", why, "--inhibit-dir", dir, "--"}, args...)...)
	cmd.Env = append(os.Environ(), "DBUS_SYSTEM_BUS_ADDRESS="+bus)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		cmd.Wait()
	})
	return cmd
}

// asNobody runs a command as uid/gid 65534.
func asNobody(t *testing.T, env []string, name string, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("%s %v: %v", name, args, err)
	}
	return string(out), code
}

func TestStatusCommand(t *testing.T) {
	bus := privateBus(t)
	f := cleanTwoFiles(t)
	d := startDaemonWith(t, f.root, daemonOpts{bus: bus})

	d.wait("status clean over the bus", 10*time.Second, func() bool {
		out, _, code := runCLI(t, bus, "status")
		return code == 0 && strings.HasPrefix(out, "drift-monitor clean: No drift: watching 3 paths, 0 units\n")
	})

	m := d.mark()
	f.write("/etc/etc-file", "not-the-data", 0o644)
	d.waitRecord(m, harness.DriftDetected, map[string]string{"DRIFT_PATH": "/etc/etc-file"})
	var rep harness.StatusReport
	d.wait("status drifted over the bus", 10*time.Second, func() bool {
		out, _, code := runCLI(t, bus, "status", "--format", "json")
		if code != 1 {
			return false
		}
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatalf("status --format json: %v\n%s", err, out)
		}
		return true
	})
	if rep.State != "drifted" || len(rep.Drift) != 1 || rep.Drift[0].Path != "/etc/etc-file" || rep.Drift[0].Kind != "content" {
		t.Errorf("status json = %+v, want state drifted and one content drift on /etc/etc-file", rep)
	}

	d.cmd.Process.Signal(syscall.SIGTERM)
	<-d.done
	_, stderr, code := runCLI(t, bus, "status")
	if code != 3 || !strings.Contains(stderr, "not running") {
		t.Errorf("status with no daemon: exit %d, stderr %q; want 3 and a plain 'not running'", code, stderr)
	}
}

func TestBusAPI(t *testing.T) {
	harness.RequireRoot(t, "the inhibitor tests")
	bus := privateBus(t)
	f := cleanTwoFiles(t)
	d := startDaemonWith(t, f.root, daemonOpts{bus: bus})
	c := harness.DialBus(t, bus)
	if err := c.AddMatchSignal(dbus.WithMatchObjectPath(busPath), dbus.WithMatchInterface(busIface), dbus.WithMatchMember("DriftChanged")); err != nil {
		t.Fatal(err)
	}
	sigs := make(chan *dbus.Signal, 16)
	c.Signal(sigs)

	var xml string
	if err := c.Object(busName, busPath).Call("org.freedesktop.DBus.Introspectable.Introspect", 0).Store(&xml); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`<method name="Inhibit">`, `<arg name="fd" type="h" direction="out">`, `<signal name="DriftChanged">`, `<property name="State" type="s" access="read">`} {
		if !strings.Contains(xml, want) {
			t.Errorf("introspection lacks %s:\n%s", want, xml)
		}
	}
	d.wait("State clean", 10*time.Second, func() bool { return prop[string](t, c, "State") == "clean" })

	f.write("/etc/etc-file", "not-the-data", 0o644)
	select {
	case s := <-sigs:
		var ds [][]any
		if len(s.Body) != 1 {
			t.Fatalf("DriftChanged body = %v", s.Body)
		}
		if err := dbus.Store(s.Body, &ds); err != nil || len(ds) != 1 || ds[0][2] != "/etc/etc-file" {
			t.Errorf("DriftChanged = %v (%v), want one drift on /etc/etc-file", s.Body, err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no DriftChanged signal within 10s")
	}
	var clean bool
	var n uint32
	if err := c.Object(busName, busPath).Call(busIface+".Check", 0).Store(&clean, &n); err != nil {
		t.Fatal(err)
	}
	if clean || n != 1 {
		t.Errorf("Check() = %v, %d; want false, 1", clean, n)
	}
	if got := prop[string](t, c, "State"); got != "drifted" {
		t.Errorf("State = %q, want drifted", got)
	}

	// Anyone may read; nobody but root may act, even where the bus lets
	// the call through.
	env := []string{"DBUS_SYSTEM_BUS_ADDRESS=" + bus}
	out, code := asNobody(t, env, "busctl", "--system", "get-property", busName, string(busPath), busIface, "State")
	if code != 0 || !strings.Contains(out, `"drifted"`) {
		t.Errorf("unprivileged read of State: exit %d: %s", code, out)
	}
	for _, method := range [][]string{{"Check"}, {"Reload"}, {"Inhibit", "ss", "mallory", "suspend it"}} {
		out, code := asNobody(t, env, "busctl", append([]string{"--system", "call", busName, string(busPath), busIface}, method...)...)
		if code == 0 || !strings.Contains(out, "root") {
			t.Errorf("unprivileged %s: exit %d: %s; want refused", method[0], code, out)
		}
	}
	if got := prop[[]any](t, c, "Inhibitors"); len(got) != 0 {
		t.Errorf("Inhibitors after refused attempts = %v", got)
	}
}

// While an inhibitor is held nothing is reported; its release re-reads the
// desired state (the transition changed it) and checks everything at once.
func TestInhibitSuspendsAndResumes(t *testing.T) {
	harness.RequireRoot(t, "the inhibitor tests")
	f := cleanTwoFiles(t)
	dir := filepath.Join(t.TempDir(), "inhibit.d")
	d := startDaemonWith(t, f.root, daemonOpts{inhibitDir: dir})
	release := filepath.Join(t.TempDir(), "release")
	script := `set -e
printf '%s' '{"ignition":{"version":"3.2.0"},"storage":{"files":[{"path":"/etc/etc-file","mode":420,"contents":{"source":"data:,v2%0A"}}]}}' > "$1/etc/drift-monitor/desired.d/60-v2.ign"
printf 'half-' > "$1/etc/etc-file"
while [ ! -e "$2" ]; do sleep 0.02; done
printf 'v2\n' > "$1/etc/etc-file"
exit 7`
	m := d.mark()
	h := holder(t, "", dir, "my-updater", "applying config v2", "sh", "-c", script, "sh", f.root, release)
	r, _ := d.waitRecord(m, harness.MsgInhibited, map[string]string{"INHIBIT_WHO": "my-updater"})
	if r["INHIBIT_WHY"] != "applying config v2" || r["INHIBIT_PID"] != strconv.Itoa(h.Process.Pid) {
		t.Errorf("inhibited record = %s, want who, why and the holder's pid %d", r, h.Process.Pid)
	}
	d.waitStatus("Inhibited by my-updater (pid " + strconv.Itoa(h.Process.Pid) + "): applying config v2")
	os.WriteFile(release, nil, 0o644)
	err := h.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 7 {
		t.Errorf("drift-monitor inhibit exit = %v, want COMMAND's status 7", err)
	}
	_, at := d.waitRecord(m, harness.MsgResumed, nil)
	reloaded, _ := d.waitRecord(at, harness.MsgReloaded, nil)
	if got := d.records(m, d.mark(), harness.DriftDetected, map[string]string{"DRIFT_PATH": "/etc/etc-file"}); len(got) > 0 {
		t.Errorf("the transition was reported as drift: %s", got[0])
	}
	if !strings.Contains(reloaded["MESSAGE"], "inhibitor was released") {
		t.Errorf("reload record = %q", reloaded["MESSAGE"])
	}
	d.waitStatus("No drift: watching 3 paths, 0 units")
}

func TestSeveralHoldersAndSIGKILL(t *testing.T) {
	harness.RequireRoot(t, "the inhibitor tests")
	f := cleanTwoFiles(t)
	dir := filepath.Join(t.TempDir(), "inhibit.d")
	d := startDaemonWith(t, f.root, daemonOpts{inhibitDir: dir})
	a := holder(t, "", dir, "alpha", "first", "sleep", "600")
	b := holder(t, "", dir, "beta", "second", "sleep", "600")
	both := "Inhibited by alpha (pid " + strconv.Itoa(a.Process.Pid) + "): first; beta (pid " + strconv.Itoa(b.Process.Pid) + "): second"
	d.waitStatus(both)

	m := d.mark()
	f.write("/etc/etc-file", "drift while inhibited\n", 0o644)
	killed := time.Now()
	a.Process.Signal(syscall.SIGKILL)
	d.wait("alpha released within a second", time.Second, func() bool {
		return d.status() == "Inhibited by beta (pid "+strconv.Itoa(b.Process.Pid)+"): second"
	})
	t.Logf("released %s after SIGKILL", fmtDur(time.Since(killed)))
	syscall.Kill(-b.Process.Pid, syscall.SIGKILL)
	// Released: the drift made while inhibited is found by the full check.
	_, at := d.waitRecord(m, harness.MsgResumed, nil)
	d.waitRecord(at, harness.DriftDetected, map[string]string{"DRIFT_PATH": "/etc/etc-file"})
}

// Inhibitors are the holders' locks, not the daemon's: a daemon killed and
// started again stays silent until they are released.
func TestInhibitorsSurviveRestart(t *testing.T) {
	harness.RequireRoot(t, "the inhibitor tests")
	f := cleanTwoFiles(t)
	dir := filepath.Join(t.TempDir(), "inhibit.d")
	d1 := startDaemonWith(t, f.root, daemonOpts{inhibitDir: dir})
	h := holder(t, "", dir, "rpm-upgrade", "upgrading", "sleep", "600")
	d1.waitStatus("Inhibited by rpm-upgrade (pid " + strconv.Itoa(h.Process.Pid) + "): upgrading")
	d1.cmd.Process.Signal(syscall.SIGKILL)
	<-d1.done

	f.write("/etc/etc-file", "half-applied\n", 0o644)
	d2 := startDaemonWith(t, f.root, daemonOpts{inhibitDir: dir})
	if got := d2.status(); !strings.HasPrefix(got, "Inhibited by rpm-upgrade") {
		t.Errorf("status after restart = %q, want inhibited", got)
	}
	m := d2.mark()
	h.Process.Signal(syscall.SIGTERM) // forwarded to sleep; then released
	h.Wait()
	if got := d2.records(0, m, harness.DriftDetected, nil); len(got) > 0 {
		t.Errorf("drift reported while inhibited after the restart: %s", got[0])
	}
	d2.waitRecord(m, harness.MsgResumed, nil)
	d2.waitRecord(m, harness.DriftDetected, map[string]string{"DRIFT_PATH": "/etc/etc-file"})
}

func TestInhibitOverDBus(t *testing.T) {
	harness.RequireRoot(t, "the inhibitor tests")
	bus := privateBus(t)
	f := cleanTwoFiles(t)
	dir := filepath.Join(t.TempDir(), "inhibit.d")
	d := startDaemonWith(t, f.root, daemonOpts{bus: bus, inhibitDir: dir})
	c := harness.DialBus(t, bus)
	var fd dbus.UnixFD
	if err := c.Object(busName, busPath).Call(busIface+".Inhibit", 0, "bus-client", "via D-Bus").Store(&fd); err != nil {
		t.Fatal(err)
	}
	d.waitStatus("Inhibited by bus-client (pid " + strconv.Itoa(os.Getpid()) + "): via D-Bus")
	m := d.mark()
	start := time.Now()
	syscall.Close(int(fd))
	d.waitRecord(m, harness.MsgResumed, nil)
	if el := time.Since(start); el > time.Second {
		t.Errorf("closing the descriptor released the inhibitor after %s, want within a second", el)
	}

	// Unprivileged: no inhibitor through the command either.
	out, code := asNobody(t, nil, harness.Binary(t), "inhibit", "--who", "mallory", "--why", "x", "--inhibit-dir", dir, "--", "true")
	if code != 2 || !strings.Contains(out, "only root") {
		t.Errorf("unprivileged drift-monitor inhibit: exit %d: %s", code, out)
	}
}
