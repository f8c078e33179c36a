package systemd_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/drift-monitor/drift-monitor/test/harness"
	"github.com/google/go-cmp/cmp"
)

// msgUnitStarted is systemd's own MESSAGE_ID for a unit's start job done
// ("Started NAME", "Finished NAME").
const msgUnitStarted = "39f53479d3a045ac8e11786248231fbf"

// inhibitDir is where inhibitors live (internal/inhibit.Dir).
const inhibitDir = "/run/drift-monitor/inhibit.d"

// holder is a process inside the container that holds an inhibitor. It runs
// as a transient service, so it outlives the command that started it and any
// restart of drift-monitor, and `systemctl stop UNIT` ends it.
type holder struct {
	unit string
	pid  int // its main process, as the container (and the daemon) sees it
}

// startHolder runs cmd as the transient service unit and returns once it has
// been executed (not once it holds its inhibitor: wait for the status).
func (h *host) startHolder(unit string, cmd ...string) holder {
	h.t.Helper()
	run := []string{"systemd-run", "--quiet", "--collect", "--service-type=exec", "--unit=" + unit}
	for _, a := range cmd {
		// systemd expands $VAR and $$ in ExecStart= (systemd 252's
		// systemd-run has no --expand-environment=no).
		run = append(run, strings.ReplaceAll(a, "$", "$$"))
	}
	h.MustRun(h.t, run...)
	out := h.MustRun(h.t, "systemctl", "show", "-p", "MainPID", "--value", unit)
	pid, err := strconv.Atoi(strings.TrimSpace(out))
	if err != nil || pid == 0 {
		h.t.Fatalf("%s: MainPID %q: the holder is not running", unit, out)
	}
	return holder{unit, pid}
}

// inhibitHolder holds an inhibitor the first way the README gives:
// `drift-monitor inhibit --who WHO --why WHY -- sleep infinity`.
func (h *host) inhibitHolder(unit, who, why string) holder {
	h.t.Helper()
	return h.startHolder(unit, "drift-monitor", "inhibit", "--who", who, "--why", why, "--", "sleep", "infinity")
}

// shellHolder holds an inhibitor the README's shell way: create, flock, then
// write who, why and the pid; `exec sleep` keeps descriptor 9 and the pid.
func (h *host) shellHolder(unit, file, who, why string) holder {
	h.t.Helper()
	return h.startHolder(unit, "sh", "-c", `exec 9>"$1"
flock 9
printf 'who=%s why=%s pid=%d\n' "$2" "$3" $$ >&9
exec sleep infinity`, "sh", filepath.Join(inhibitDir, file), who, why)
}

// hostPID maps a pid in the container to the same process's pid on the host,
// so that the test can signal it without starting a process in the
// container first: the time of the kill is then known to the microsecond.
func (h *host) hostPID(pid int) int {
	h.t.Helper()
	ns, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/pid", h.InitPID))
	if err != nil {
		h.t.Fatal(err)
	}
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		if l, err := os.Readlink(d + "/ns/pid"); err != nil || l != ns {
			continue
		}
		status, err := os.ReadFile(d + "/status")
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(status), "\n") {
			if rest, ok := strings.CutPrefix(line, "NSpid:"); ok {
				if f := strings.Fields(rest); len(f) > 1 && f[len(f)-1] == strconv.Itoa(pid) {
					n, _ := strconv.Atoi(filepath.Base(d))
					return n
				}
			}
		}
	}
	h.t.Fatalf("no host process is pid %d in %s", pid, h.Name)
	return 0
}

// waitInhibited waits for the record of an inhibitor taken after record from
// and checks its fields and message.
func (h *host) waitInhibited(from int, who, why string, pid int) harness.Record {
	h.t.Helper()
	fields := map[string]string{"INHIBIT_WHO": who, "INHIBIT_WHY": why, "INHIBIT_PID": strconv.Itoa(pid)}
	r, _ := h.waitRecord(from, harness.MsgInhibited, fields)
	want := fmt.Sprintf("Monitoring inhibited by %s (pid %d): %s", who, pid, why)
	if got := r["MESSAGE"]; got != want || r["PRIORITY"] != "6" {
		h.t.Errorf("inhibited record: MESSAGE %q PRIORITY %s, want %q at 6 (info)", got, r["PRIORITY"], want)
	}
	return r
}

// withInvocation returns h seen through another run of the service: its
// records are that run's.
func (h *host) withInvocation(inv string) *host {
	return &host{&machine{Machine: h.Machine, ctx: h.ctx, inv: inv}, h.t}
}

// inodes returns the inode numbers of paths inside.
func (h *host) inodes(paths ...string) string {
	h.t.Helper()
	return h.MustRun(h.t, append([]string{"stat", "-c", "%n %i"}, paths...)...)
}

// realtime is when journald received the entry, in µs since the epoch.
func realtime(e harness.Record) int64 {
	n, _ := strconv.ParseInt(e["__REALTIME_TIMESTAMP"], 10, 64)
	return n
}

// TestInhibitSuspendsAndResumes proves, under systemd with three holders
// taken the three ways the README gives (drift-monitor inhibit, the shell
// flock protocol, and — in TestBusAPIOnTheSystemBus — D-Bus):
//   - while any is held nothing is reported, although the transition leaves
//     the machine half-applied, and the status line names every holder with
//     its pid and why;
//   - the inhibit state shows in systemctl show and status, in drift-monitor
//     status (text and JSON), on the bus (State, Inhibitors) and in the
//     journal (an inhibited record per holder with INHIBIT_WHO, INHIBIT_WHY,
//     INHIBIT_PID);
//   - a holder killed with SIGKILL releases its inhibitor within a second
//     (measured from the kill to the status change, both as systemd shows it
//     and as the bus signals it);
//   - only the last release resumes: the daemon journals resumed, re-reads
//     the desired state and checks everything at once; the desired state the
//     transition changed is honoured (a file it rewrote to its new declared
//     content is clean, a file it newly declared but forgot is missing) and
//     a drift it left behind is reported — each exactly once, after resumed.
func TestInhibitSuspendsAndResumes(t *testing.T) {
	t.Parallel()
	h := bootDaemon(t, setup{
		config:    etcFileAndSentinel,
		files:     []file{etcFileOK, sentinelFile},
		busPolicy: true,
	})
	h.waitStatus("No drift: watching 2 paths, 0 units")
	c := h.hostBus()
	evs := h.watchBus(c)
	start := h.mark()

	// The update tool's transition: a new desired state (etc-file's content
	// becomes v2, a new file is declared), etc-file half-written, the
	// sentinel's mode broken; then it waits for the test before writing v2.
	// It forgets /etc/new.conf and leaves the sentinel broken.
	h.sh(`mkdir -p /run/dm-test && mkfifo /run/dm-test/go`)
	const transition = `set -e
cat >/etc/drift-monitor/desired.d/60-v2.ign <<'EOF'
{"ignition":{"version":"3.4.0"},"storage":{"files":[
 {"path":"/etc/etc-file","mode":420,"overwrite":true,"contents":{"source":"data:,v2%0A"}},
 {"path":"/etc/new.conf","mode":420,"contents":{"source":"data:,new%0A"}}]}}
EOF
printf 'half-' >/etc/etc-file
chmod 0600 /etc/sentinel
: >/run/dm-test/half-applied
read go </run/dm-test/go
printf 'v2\n' >/etc/etc-file`

	alpha := h.inhibitHolder("dm-hold-alpha", "alpha", "held by a test")
	h.waitStatus(fmt.Sprintf("Inhibited by alpha (pid %d): held by a test", alpha.pid))
	beta := h.shellHolder("dm-hold-beta", "beta.lock", "beta", "second holder")
	upd := h.startHolder("dm-hold-updater", "drift-monitor", "inhibit", "--who", "my-updater", "--why", "applying config v2", "--",
		"sh", "-c", transition)
	holders := []struct {
		who, why string
		pid      int
	}{{"alpha", "held by a test", alpha.pid}, {"beta", "second holder", beta.pid}, {"my-updater", "applying config v2", upd.pid}}
	var names []string
	for _, x := range holders {
		names = append(names, fmt.Sprintf("%s (pid %d): %s", x.who, x.pid, x.why))
	}
	// Sorted by lock file: alpha-PID.lock, beta.lock, my-updater-PID.lock.
	all := "Inhibited by " + strings.Join(names, "; ")
	h.waitStatus(all)
	h.WaitFor(t, recordTimeout, "the transition half-applied", func() (bool, string) {
		_, _, err := h.Run(h.ctx, "test", "-e", "/run/dm-test/half-applied")
		return err == nil, fmt.Sprint(err)
	})

	t.Run("every outlet shows who holds it and why", func(t *testing.T) {
		h := h.in(t)
		h.statusShows(all)
		for _, x := range holders {
			h.waitInhibited(start, x.who, x.why, x.pid)
		}

		out, errOut, code := h.run("drift-monitor", "status")
		wantText := "drift-monitor inhibited: " + all + "\n"
		wantInhibitors := "Inhibitors:\n  " + strings.Join(names, "\n  ") + "\n"
		if code != 0 || !strings.HasPrefix(out, wantText) || !strings.Contains(out, wantInhibitors) || !strings.Contains(out, "\nDrift:      none\n") {
			t.Errorf("drift-monitor status: exit %d, stderr %q; want 0, %q, the three inhibitors and no drift:\n%s", code, errOut, wantText, out)
		}

		out, errOut, code = h.run("drift-monitor", "status", "--format", "json")
		var rep harness.StatusReport
		if err := json.Unmarshal([]byte(out), &rep); err != nil || code != 0 {
			t.Fatalf("drift-monitor status --format json: exit %d, %v, stderr %q:\n%s", code, err, errOut, out)
		}
		var gotJSON []string
		for _, i := range rep.Inhibitors {
			gotJSON = append(gotJSON, fmt.Sprintf("%s (pid %d): %s", i.Who, i.PID, i.Why))
		}
		if rep.State != "inhibited" || rep.Status != all || rep.Drift == nil || len(rep.Drift) != 0 {
			t.Errorf("status --format json: state %q, status %q, drift %v; want inhibited, %q, []", rep.State, rep.Status, rep.Drift, all)
		}
		if diff := cmp.Diff(names, gotJSON); diff != "" {
			t.Errorf("status --format json: inhibitors (-want +got):\n%s", diff)
		}

		if got := busProp[string](t, c, "State"); got != "inhibited" {
			t.Errorf("State on the bus = %q, want inhibited", got)
		}
		var wantBus []busInhibitor
		for _, x := range holders {
			wantBus = append(wantBus, busInhibitor{x.who, x.why, uint32(x.pid)})
		}
		if diff := cmp.Diff(wantBus, busProp[[]busInhibitor](t, c, "Inhibitors")); diff != "" {
			t.Errorf("Inhibitors on the bus (-want +got):\n%s", diff)
		}
	})

	t.Run("a holder killed with SIGKILL releases within a second", func(t *testing.T) {
		h := h.in(t)
		rest := "Inhibited by " + strings.Join(names[1:], "; ")
		from := evs.mark()
		hp := h.hostPID(alpha.pid)
		killed := time.Now()
		if err := syscall.Kill(hp, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		h.waitStatus(rest)
		seen := time.Since(killed)
		e, _ := evs.wait(t, from, recordTimeout, "StatusText "+rest, changed("StatusText", rest))
		signalled := e.at.Sub(killed)
		t.Logf("SIGKILL of alpha (pid %d, host pid %d): released after %v on the bus (PropertiesChanged), "+
			"%v as systemctl show -p StatusText saw it (an upper bound: polls back off to 250ms)",
			alpha.pid, hp, signalled.Round(time.Microsecond), seen.Round(time.Millisecond))
		if signalled > time.Second || seen > time.Second {
			t.Errorf("released %v (bus) / %v (systemd) after SIGKILL, want within a second", signalled, seen)
		}
	})

	t.Run("nothing is reported while held", func(t *testing.T) {
		h := h.in(t)
		// The release of alpha went through the event loop after the
		// transition's writes: a drift they caused would be journaled by now.
		if got := h.between(start, h.mark(), harness.DriftDetected, nil); len(got) > 0 {
			t.Errorf("drift reported while inhibited: %s", got[0])
		}
		if got := busProp[[]busDrift](t, c, "Drift"); len(got) != 0 {
			t.Errorf("Drift on the bus while inhibited = %v, want none", got)
		}
		if got := h.between(start, h.mark(), harness.MsgResumed, nil); len(got) > 0 {
			t.Errorf("resumed while holders remain: %s", got[0])
		}
	})

	t.Run("the last release re-reads the desired state and checks at once", func(t *testing.T) {
		h := h.in(t)
		h.MustRun(t, "systemctl", "stop", beta.unit)
		h.waitStatus("Inhibited by " + names[2])
		if got := h.between(start, h.mark(), harness.MsgResumed, nil); len(got) > 0 {
			t.Errorf("resumed while my-updater holds: %s", got[0])
		}

		released := time.Now()
		h.sh(`echo go >/run/dm-test/go`)
		resumed, ir := h.waitRecord(start, harness.MsgResumed, nil)
		if got := resumed["MESSAGE"]; got != "Monitoring resumed: my-updater released; re-reading the desired state" {
			t.Errorf("resumed record MESSAGE = %q", got)
		}
		reloaded, irl := h.waitRecord(ir, harness.MsgReloaded, nil)
		if got := reloaded["MESSAGE"]; !strings.Contains(got, "(the last inhibitor was released)") || !strings.HasSuffix(got, "from 2 config files") {
			t.Errorf("reloaded record MESSAGE = %q, want the release as the reason and both config files", got)
		}
		const drifted = "Drift: 2 paths differ (/etc/new.conf: missing; /etc/sentinel: mode)"
		h.waitStatus(drifted)
		t.Logf("from the release to the status %q: %v (resumed → reloaded in the journal: %dµs)",
			drifted, time.Since(released).Round(time.Millisecond), realtime(reloaded)-realtime(resumed))

		// Everything this run ever reported: the transition's leftovers,
		// once each, found by the release's full check; etc-file never.
		end := h.mark()
		for _, c := range []struct {
			path, kind string
			want       int
		}{{"/etc/new.conf", "missing", 1}, {sentinel, "mode", 1}, {etcFile, "", 0}} {
			got := h.between(0, end, harness.DriftDetected, map[string]string{"DRIFT_PATH": c.path})
			if len(got) != c.want {
				t.Errorf("%d drift records for %s in this run, want %d: %v", len(got), c.path, c.want, got)
				continue
			}
			if c.want == 0 {
				continue
			}
			if got[0]["DRIFT_KIND"] != c.kind {
				t.Errorf("drift record for %s: %s, want kind %s", c.path, got[0], c.kind)
			}
			// Between resumed and reloaded: the reload's full check.
			if in := h.between(ir, irl, harness.DriftDetected, map[string]string{"DRIFT_PATH": c.path}); len(in) != 1 {
				t.Errorf("the drift of %s was not reported by the release's full check (between resumed and reloaded)", c.path)
			}
		}

		// The new desired state is the one checked: three paths, etc-file v2.
		m := h.mark()
		h.sh(`chmod 0644 /etc/sentinel && printf 'new\n' >/etc/new.conf`)
		h.waitRecord(m, harness.MsgDriftResolved, map[string]string{"DRIFT_PATH": sentinel})
		h.waitRecord(m, harness.MsgDriftResolved, map[string]string{"DRIFT_PATH": "/etc/new.conf"})
		h.waitStatus("No drift: watching 3 paths, 0 units")
		if got := busProp[string](t, c, "State"); got != "clean" {
			t.Errorf("State on the bus = %q, want clean", got)
		}
		h.noDriftSince(m, etcFile)
	})
}

// TestInhibitorsSurviveRestart proves that an inhibitor outlives the daemon:
// after `kill -9` of the main process (Restart=on-failure brings it back) and
// after `systemctl restart`, the new process finds the holder, journals it,
// says inhibited in its status line and reports nothing — although the
// machine is half-applied — until the holder releases; and the runtime
// directory with the lock file survives both (RuntimeDirectoryPreserve=yes).
func TestInhibitorsSurviveRestart(t *testing.T) {
	t.Parallel()
	h := bootDaemon(t, setup{
		config: etcFileAndSentinel,
		files:  []file{etcFileOK, sentinelFile},
	})
	h.waitStatus("No drift: watching 2 paths, 0 units")
	const who, why = "rpm-upgrade", "upgrading drift-monitor"
	hd := h.inhibitHolder("dm-hold-upgrade", who, why)
	inhibited := fmt.Sprintf("Inhibited by %s (pid %d): %s", who, hd.pid, why)
	h.waitStatus(inhibited)
	h.waitInhibited(0, who, why, hd.pid)
	lock := fmt.Sprintf("%s/%s-%d.lock", inhibitDir, who, hd.pid)
	inodes := h.inodes("/run/drift-monitor", inhibitDir, lock)
	invs := []string{h.inv}
	h.sh(`printf 'half-applied\n' >/etc/etc-file`)

	// silentAfterRestart checks the run that just started.
	silentAfterRestart := func(h *host) {
		h.t.Helper()
		invs = append(invs, h.inv)
		if got := h.inodes("/run/drift-monitor", inhibitDir, lock); got != inodes {
			h.t.Errorf("the runtime directory did not survive the restart: inodes\n%s, were\n%s", got, inodes)
		}
		h.waitInhibited(0, who, why, hd.pid)
		ready, _ := h.waitRecord(0, harness.MsgReady, nil)
		if got := ready["MESSAGE"]; got != "Started: "+inhibited {
			h.t.Errorf("ready record of the new run = %q, want %q", got, "Started: "+inhibited)
		}
		if got := h.prop("StatusText"); got != inhibited {
			h.t.Errorf("StatusText after the restart = %q, want %q", got, inhibited)
		}
		h.statusShows(inhibited)
		if got := h.between(0, h.mark(), harness.DriftDetected, nil); len(got) > 0 {
			h.t.Errorf("the new run reported drift while inhibited: %s", got[0])
		}
	}

	ok := t.Run("kill -9 of the main process", func(t *testing.T) {
		h := h.in(t)
		pid, inv := h.prop("MainPID"), h.inv
		h.MustRun(t, "kill", "-9", pid)
		h.WaitFor(t, 30*time.Second, "a new main process, active and running", func() (bool, string) {
			out, errOut, err := h.Run(h.ctx, "systemctl", "show", "-p", "MainPID", "-p", "ActiveState", "-p", "SubState", "-p", "InvocationID", service)
			if err != nil {
				return false, fmt.Sprintf("%v: %s", err, errOut)
			}
			p := parseProps(out)
			return p["MainPID"] != pid && p["MainPID"] != "0" && p["ActiveState"] == "active" && p["SubState"] == "running" && p["InvocationID"] != inv,
				strings.ReplaceAll(out, "\n", " ")
		})
		if got := h.prop("NRestarts"); got != "1" {
			t.Errorf("NRestarts=%s, want 1", got)
		}
		h.inv = h.prop("InvocationID")
		silentAfterRestart(h)
		// The transition goes on after the restart: still nothing.
		h.sh(`chmod 0600 /etc/sentinel`)
	})
	ok = ok && t.Run("systemctl restart", func(t *testing.T) {
		h := h.in(t)
		inv := h.inv
		h.MustRun(t, "systemctl", "restart", service)
		if h.inv = h.prop("InvocationID"); h.inv == inv {
			t.Fatalf("InvocationID is still %s after systemctl restart", inv)
		}
		silentAfterRestart(h)
	})
	if !ok {
		return
	}

	t.Run("the release resumes", func(t *testing.T) {
		h := h.in(t)
		m := h.mark()
		h.MustRun(t, "systemctl", "stop", hd.unit)
		_, ir := h.waitRecord(m, harness.MsgResumed, nil)
		h.waitRecord(ir, harness.DriftDetected, map[string]string{"DRIFT_PATH": etcFile, "DRIFT_KIND": "content"})
		h.waitRecord(ir, harness.DriftDetected, map[string]string{"DRIFT_PATH": sentinel, "DRIFT_KIND": "mode"})
		h.waitStatus("Drift: 2 paths differ (/etc/etc-file: content; /etc/sentinel: mode)")
		// Over the three runs, each drift was reported once: by the last,
		// after the release.
		for i, inv := range invs {
			want := 0
			if i == len(invs)-1 {
				want = 2
			}
			hi := h.withInvocation(inv)
			if got := hi.between(0, hi.mark(), harness.DriftDetected, nil); len(got) != want {
				t.Errorf("run %d of 3 (%s): %d drift records, want %d: %v", i+1, inv, len(got), want, got)
			}
		}
	})
}

// TestInhibitRefusedToUnprivileged proves that nobody (uid 65534, no
// groups) can neither take an inhibitor — not with drift-monitor inhibit,
// not with the shell protocol in /run/drift-monitor/inhibit.d, not with
// D-Bus Inhibit (refused by the bus policy) — nor release root's: it cannot
// open, truncate or remove the lock file, signal the holder or the daemon,
// stop the holder's unit or ask the daemon to reload. Root's inhibitor and
// the daemon's view of it are unchanged afterwards.
func TestInhibitRefusedToUnprivileged(t *testing.T) {
	t.Parallel()
	h := bootDaemon(t, setup{
		config:    `{"ignition":{"version":"3.4.0"},"storage":{"files":[{"path":"/etc/etc-file","mode":420,"contents":{"source":"data:,hello%20world%0A"}}]}}`,
		files:     []file{etcFileOK},
		busPolicy: true,
	})
	h.waitStatus("No drift: watching 1 path, 0 units")
	if got := h.MustRun(t, "stat", "-c", "%n %U %a", "/run/drift-monitor", inhibitDir); got != "/run/drift-monitor root 755\n"+inhibitDir+" root 700\n" {
		t.Errorf("runtime directories:\n%s", got)
	}
	start := h.mark()
	hd := h.inhibitHolder("dm-hold-root", "root-updater", "applying config v7")
	inhibited := fmt.Sprintf("Inhibited by root-updater (pid %d): applying config v7", hd.pid)
	h.waitStatus(inhibited)
	lock := fmt.Sprintf("%s/root-updater-%d.lock", inhibitDir, hd.pid)
	before := h.MustRun(t, "stat", "-c", "%i %s %U %a", lock)
	daemon := h.prop("MainPID")
	denied := "Error org.freedesktop.DBus.Error.AccessDenied: Rejected send message"
	sendAsNobody := func(method string, args ...string) []string {
		return append([]string{"dbus-send", "--system", "--print-reply", "--dest=" + busName, string(busPath), busIface + "." + method}, args...)
	}

	for _, c := range []struct {
		name string
		cmd  []string
		want string // in stderr
	}{
		{"drift-monitor inhibit", []string{"drift-monitor", "inhibit", "--who", "mallory", "--why", "x", "--", "true"}, "only root can take an inhibitor"},
		{"the shell protocol", []string{"sh", "-c", `exec 9>"$1" && flock 9 && printf 'who=mallory pid=%d\n' $$ >&9`, "sh", inhibitDir + "/mallory.lock"}, "Permission denied"},
		{"D-Bus Inhibit", sendAsNobody("Inhibit", "string:mallory", "string:x"), denied},
		{"list the inhibitors' files", []string{"ls", inhibitDir}, "Permission denied"},
		{"open root's lock", []string{"flock", "-n", lock, "true"}, "Permission denied"},
		{"truncate root's lock", []string{"sh", "-c", `: >"$1"`, "sh", lock}, "Permission denied"},
		{"remove root's lock", []string{"rm", "-f", lock}, "Permission denied"},
		{"SIGKILL the holder", []string{"kill", "-9", strconv.Itoa(hd.pid)}, "Operation not permitted"},
		{"SIGHUP the daemon", []string{"kill", "-HUP", daemon}, "Operation not permitted"},
		{"D-Bus Reload", sendAsNobody("Reload"), denied},
		{"systemctl stop the holder", []string{"systemctl", "stop", hd.unit}, "Failed to stop " + hd.unit},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := h.in(t)
			out, errOut, code := h.run(append(append([]string{}, nobody...), c.cmd...)...)
			if code == 0 || !strings.Contains(errOut, c.want) {
				t.Errorf("as nobody: %s: exit %d, stdout %q, stderr %q; want refused (%q)", strings.Join(c.cmd, " "), code, out, errOut, c.want)
			}
			t.Logf("refused: exit %d: %s", code, strings.TrimSpace(errOut))
		})
	}

	t.Run("root's inhibitor is untouched", func(t *testing.T) {
		h := h.in(t)
		if got := h.MustRun(t, "stat", "-c", "%i %s %U %a", lock); got != before {
			t.Errorf("root's lock file changed: %q, was %q", got, before)
		}
		if got := strings.TrimSpace(h.MustRun(t, "systemctl", "show", "-p", "MainPID", "--value", hd.unit)); got != strconv.Itoa(hd.pid) {
			t.Errorf("the holder's MainPID is %s, want %d", got, hd.pid)
		}
		if got := h.prop("MainPID"); got != daemon {
			t.Errorf("the daemon's MainPID is %s, want %s", got, daemon)
		}
		if got, _ := h.status(); got != inhibited {
			t.Errorf("StatusText = %q, want %q", got, inhibited)
		}
		c := h.hostBus()
		if diff := cmp.Diff([]busInhibitor{{"root-updater", "applying config v7", uint32(hd.pid)}}, busProp[[]busInhibitor](t, c, "Inhibitors")); diff != "" {
			t.Errorf("Inhibitors on the bus (-want +got):\n%s", diff)
		}
		// Only root's inhibitor was ever journaled, and nothing resumed or
		// reloaded.
		end := h.mark()
		if got := h.between(start, end, harness.MsgInhibited, nil); len(got) != 1 || got[0]["INHIBIT_WHO"] != "root-updater" {
			t.Errorf("inhibited records: %v, want root-updater's only", got)
		}
		for _, id := range []string{harness.MsgResumed, harness.MsgReloaded} {
			if got := h.between(start, end, id, nil); len(got) > 0 {
				t.Errorf("unexpected record: %s", got[0])
			}
		}
	})
}

// readmeExample returns the shell block of README.md between the
// update-tool-example markers, without its code fence.
func readmeExample(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok1 := strings.Cut(string(b), "<!-- update-tool-example -->\n")
	block, _, ok2 := strings.Cut(rest, "<!-- /update-tool-example -->")
	body, ok3 := strings.CutPrefix(block, "```sh\n")
	body, ok4 := strings.CutSuffix(body, "```\n")
	if !ok1 || !ok2 || !ok3 || !ok4 {
		t.Fatalf("README.md has no ```sh block between <!-- update-tool-example --> and <!-- /update-tool-example -->")
	}
	return body
}

// TestReadmeUpdateToolExample runs README's worked example of an update tool,
// verbatim, as root, against the daemon on a clean machine: it exits 0, the
// journal shows monitoring inhibited by my-updater and then resumed, nothing
// is reported as drift (not the file the transition adds, not anything), and
// the status ends clean with the new file watched.
func TestReadmeUpdateToolExample(t *testing.T) {
	t.Parallel()
	script := readmeExample(t)
	h := bootDaemon(t, setup{
		config: etcFileAndSentinel,
		files:  []file{etcFileOK, sentinelFile},
	})
	h.waitStatus("No drift: watching 2 paths, 0 units")
	const path = "/root/update-tool-example.sh"
	h.WriteFile(t, path, []byte(script), 0o700)
	m := h.mark()
	out, errOut, code := h.run("sh", path)
	t.Logf("sh %s: exit %d\n--- stdout ---\n%s--- stderr ---\n%s", path, code, out, errOut)
	if code != 0 {
		t.Fatalf("README's update-tool example exited %d, want 0", code)
	}
	inh, ii := h.waitRecord(m, harness.MsgInhibited, map[string]string{"INHIBIT_WHO": "my-updater", "INHIBIT_WHY": "applying config v42"})
	if inh["INHIBIT_PID"] == "" {
		t.Errorf("inhibited record without INHIBIT_PID: %s", inh["MESSAGE"])
	}
	_, ir := h.waitRecord(ii, harness.MsgResumed, nil)
	h.waitRecord(ir, harness.MsgReloaded, nil)
	h.waitStatus("No drift: watching 3 paths, 0 units")
	h.noDriftSince(m, "/etc/motd.d/50-config")
	if got := h.between(m, h.mark(), harness.DriftDetected, nil); len(got) != 1 || got[0]["DRIFT_PATH"] != sentinel {
		t.Errorf("drift records during the example (besides the sentinel's own check): %v", got)
	}
}

// TestOnDriftHook proves the admin's hook: with `--on-drift
// drift-alert.service`, a drift starts that unit (its journal shows it ran,
// its marker file exists); a drift made while an inhibitor is held starts
// nothing until the release, whose full check reports it and starts the unit
// once.
func TestOnDriftHook(t *testing.T) {
	t.Parallel()
	const (
		alert  = "drift-alert.service"
		marker = "/var/lib/drift-alert.marker"
	)
	h := bootDaemon(t, setup{
		config: etcFileAndSentinel,
		files: []file{etcFileOK, sentinelFile, {"/etc/systemd/system/" + alert,
			"[Unit]\nDescription=drift-monitor test: alert on drift\n\n[Service]\nType=oneshot\nExecStart=/bin/sh -c 'echo ran >>" + marker + "'\n", 0o644}},
		flags: []string{"--on-drift", alert},
	})
	if got := h.prop("ExecStart"); !strings.Contains(got, "argv[]=/usr/bin/drift-monitor daemon --on-drift "+alert+" ") {
		t.Fatalf("the drop-in is not in force: ExecStart=%s", got)
	}
	h.waitStatus("No drift: watching 2 paths, 0 units")
	// runs returns the alert unit's completed starts, and the marker's lines.
	runs := func(h *host) ([]harness.Record, int) {
		h.t.Helper()
		var es []harness.Record
		for _, e := range h.Journal(h.t, alert, "MESSAGE_ID="+msgUnitStarted) {
			es = append(es, harness.JournalRecord(e))
		}
		out, _, _ := h.Run(h.ctx, "cat", marker)
		return es, strings.Count(out, "ran\n")
	}
	waitRuns := func(h *host, n int) []harness.Record {
		h.t.Helper()
		var es []harness.Record
		h.WaitFor(h.t, recordTimeout, fmt.Sprintf("%s to have run %d times", alert, n), func() (bool, string) {
			var lines int
			es, lines = runs(h)
			return len(es) == n && lines == n, fmt.Sprintf("%d start records, %d marker lines", len(es), lines)
		})
		return es
	}
	if es, lines := runs(h); len(es) != 0 || lines != 0 {
		t.Fatalf("%s ran before any drift: %d start records, %d marker lines", alert, len(es), lines)
	}

	ok := t.Run("a drift starts the unit", func(t *testing.T) {
		h := h.in(t)
		m := h.mark()
		h.sh(`printf 'not-the-data' >/etc/etc-file`)
		h.waitRecord(m, harness.DriftDetected, map[string]string{"DRIFT_PATH": etcFile})
		es := waitRuns(h, 1)
		t.Logf("%s: %s", alert, es[0]["MESSAGE"])
		m = h.mark()
		h.sh(`printf 'hello world\n' >/etc/etc-file`)
		h.waitRecord(m, harness.MsgDriftResolved, map[string]string{"DRIFT_PATH": etcFile})
	})
	if !ok {
		return
	}

	t.Run("nothing starts it while inhibited", func(t *testing.T) {
		h := h.in(t)
		m := h.mark()
		hd := h.inhibitHolder("dm-hold-updater", "my-updater", "applying config v3")
		h.waitInhibited(m, "my-updater", "applying config v3", hd.pid)
		h.sh(`printf 'half-applied\n' >/etc/etc-file && chmod 0600 /etc/sentinel`)
		// A second holder goes through the event loop after those writes:
		// had they been reported, the hook would have been started by now.
		hd2 := h.inhibitHolder("dm-hold-second", "second", "barrier")
		h.waitInhibited(m, "second", "barrier", hd2.pid)
		if es, lines := runs(h); len(es) != 1 || lines != 1 {
			t.Errorf("%s ran while inhibited: %d start records, %d marker lines, want 1 (the earlier drift's)", alert, len(es), lines)
		}
		h.MustRun(t, "systemctl", "stop", hd2.unit, hd.unit)
		resumed, ir := h.waitRecord(m, harness.MsgResumed, nil)
		h.waitRecord(ir, harness.DriftDetected, map[string]string{"DRIFT_PATH": etcFile})
		h.waitRecord(ir, harness.DriftDetected, map[string]string{"DRIFT_PATH": sentinel})
		es := waitRuns(h, 2)
		if realtime(es[1]) < realtime(resumed) {
			t.Errorf("%s started at %d, before monitoring resumed at %d", alert, realtime(es[1]), realtime(resumed))
		}
		if got := h.between(0, h.mark(), harness.MsgHookFailed, nil); len(got) > 0 {
			t.Errorf("hook failure: %s", got[0])
		}
	})
}
