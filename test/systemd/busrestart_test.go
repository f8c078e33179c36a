package systemd_test

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/drift-monitor/drift-monitor/test/harness"
)

const (
	// reconnectTimeout bounds how long the daemon may take to be back on a
	// bus that is up again: its backoff between attempts is at most 5 s
	// (internal/buslink); the margin is for a loaded machine.
	reconnectTimeout = 60 * time.Second
	// idleWindow is how long the daemon's CPU time is watched while it
	// waits for a bus: long enough that a spinning loop, even one that gets
	// a small share of a loaded machine's cores, burns far more than
	// idleCPUBound.
	idleWindow   = 10 * time.Second
	idleCPUBound = time.Second
)

// cpuTime is the user plus system CPU time of pid inside the container, from
// /proc/PID/stat (fields 14 and 15, in clock ticks: proc(5)).
func (h *host) cpuTime(pid string) time.Duration {
	h.t.Helper()
	stat := h.MustRun(h.t, "cat", "/proc/"+pid+"/stat")
	// The command name (field 2) is in parentheses and may hold spaces.
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		h.t.Fatalf("/proc/%s/stat: %q", pid, stat)
	}
	f := strings.Fields(stat[i+1:]) // from field 3 on
	if len(f) < 13 {
		h.t.Fatalf("/proc/%s/stat: %q", pid, stat)
	}
	ticks := 0
	for _, s := range f[11:13] {
		n, err := strconv.Atoi(s)
		if err != nil {
			h.t.Fatalf("/proc/%s/stat: %q: %v", pid, stat, err)
		}
		ticks += n
	}
	hz, err := strconv.Atoi(strings.TrimSpace(h.MustRun(h.t, "getconf", "CLK_TCK")))
	if err != nil || hz <= 0 {
		h.t.Fatalf("getconf CLK_TCK: %v", err)
	}
	return time.Duration(ticks) * time.Second / time.Duration(hz)
}

// cpuOver returns the CPU time pid used over window, the window being the
// behaviour under test (how much the daemon burns while it waits), not a
// guess at how long something takes.
func (h *host) cpuOver(pid string, window time.Duration) time.Duration {
	h.t.Helper()
	before, start := h.cpuTime(pid), time.Now()
	h.WaitFor(h.t, window+time.Minute, fmt.Sprintf("a window of %v", window), func() (bool, string) {
		return time.Since(start) >= window, ""
	})
	return h.cpuTime(pid) - before
}

// sameProcess asserts that the service still runs as pid and was never
// restarted by systemd.
func (h *host) sameProcess(pid string) {
	h.t.Helper()
	if got := h.prop("MainPID"); got != pid {
		h.t.Errorf("MainPID = %s, want %s: the daemon did not survive", got, pid)
	}
	if got := h.prop("NRestarts"); got != "0" {
		h.t.Errorf("NRestarts = %s, want 0", got)
	}
	if got := h.prop("ActiveState"); got != "active" {
		h.t.Errorf("ActiveState = %s, want active", got)
	}
}

// statusExits waits until `drift-monitor status` exits code with a first
// line starting with prefix.
func (h *host) statusExits(timeout time.Duration, code int, prefix string) string {
	h.t.Helper()
	var out string
	h.WaitFor(h.t, timeout, fmt.Sprintf("drift-monitor status exiting %d with %q", code, prefix), func() (bool, string) {
		o, errOut, c := h.run("drift-monitor", "status")
		out = o
		return c == code && strings.HasPrefix(o, prefix), fmt.Sprintf("exit %d, stdout %q, stderr %q", c, o, errOut)
	})
	return out
}

// TestBusRestart proves that the system bus going away and coming back is
// not fatal: after `systemctl restart dbus` the daemon is the same process
// (never restarted by systemd), did not spin, answers `drift-monitor status`
// again, reported no false drift of the unit whose enablement it asks
// systemd about, and sees enablement changes again (it re-subscribed). With
// the bus stopped, the status line says so, `drift-monitor status` exits 3
// with one line on stdout, the daemon waits without spinning, and a unit
// disabled meanwhile — a change whose signal nobody could receive — is
// reported once the bus is back.
func TestBusRestart(t *testing.T) {
	t.Parallel()
	s := demoHost
	s.busPolicy = true
	h := bootDaemon(t, s)
	const clean = "No drift: watching 3 paths, 1 unit"
	const disabled = "Drift: 1 path differs (" + demoUnit + ": enablement)"
	unitDrift := map[string]string{"DRIFT_UNIT": demoUnit, "DRIFT_KIND": "enablement"}
	h.waitStatus(clean)
	pid := h.prop("MainPID")

	t.Run("systemctl restart dbus", func(t *testing.T) {
		h := h.in(t)
		m := h.mark()
		h.MustRun(t, "systemctl", "restart", "dbus.service")
		// Clean again means both connections are back: while either is
		// missing, the status line says so.
		h.WaitFor(t, reconnectTimeout, "StatusText "+clean, func() (bool, string) {
			s, err := h.status()
			return err == nil && s == clean, fmt.Sprintf("StatusText %q (%v)", s, err)
		})
		h.statusExits(reconnectTimeout, 0, "drift-monitor clean: "+clean+"\n")
		h.sameProcess(pid)
		// The loss itself may come and go before the loop looks (the
		// events merge); the return is recorded either way.
		for _, link := range []string{"systemd", "api"} {
			r, _ := h.waitRecord(m, harness.MsgBusRestored, map[string]string{"BUS_LINK": link})
			t.Logf("restored: %s", r["MESSAGE"])
		}
		// Everything the loss caused came before the sentinel's record.
		h.noDriftSince(m, "/etc/systemd/system/"+demoUnit)
		if got := h.between(m, h.mark(), harness.DriftDetected, map[string]string{"DRIFT_UNIT": demoUnit}); len(got) > 0 {
			t.Errorf("false drift of %s after the bus restart: %s", demoUnit, got[0])
		}
		// Back and idle: nothing left spinning on the old connection.
		cpu := h.cpuOver(pid, idleWindow)
		t.Logf("CPU time over %v after the bus restart: %v", idleWindow, cpu)
		if cpu > idleCPUBound {
			t.Errorf("the daemon used %v of CPU in %v after the bus restart, want at most %v", cpu, idleWindow, idleCPUBound)
		}
		h.sameProcess(pid)

		// Subscribed again: a disable through systemd is seen at once.
		m = h.mark()
		h.MustRun(t, "systemctl", "disable", "--quiet", demoUnit)
		h.waitRecord(m, harness.DriftDetected, unitDrift)
		h.waitStatus(disabled)
		m = h.mark()
		h.MustRun(t, "systemctl", "enable", "--quiet", demoUnit)
		h.waitRecord(m, harness.MsgDriftResolved, unitDrift)
		h.waitStatus(clean)
	})

	t.Run("the bus stopped, then started", func(t *testing.T) {
		h := h.in(t)
		m := h.mark()
		// systemctl reaches systemd through its private socket meanwhile.
		h.MustRun(t, "systemctl", "stop", "dbus.socket", "dbus.service")
		for _, link := range []string{"systemd", "api"} {
			h.waitRecord(m, harness.MsgBusLost, map[string]string{"BUS_LINK": link})
		}
		var down string
		h.WaitFor(t, recordTimeout, "a status line saying the bus is unavailable", func() (bool, string) {
			s, err := h.status()
			down = s
			return err == nil && strings.HasPrefix(s, clean+"; ") && strings.Contains(s, "bus unavailable"), fmt.Sprintf("StatusText %q (%v)", s, err)
		})
		t.Logf("status line without a bus: %s", down)
		out, errOut, code := h.run("drift-monitor", "status")
		if code != 3 || strings.Count(out, "\n") != 1 || !strings.HasPrefix(out, "drift-monitor unknown: ") {
			t.Errorf("drift-monitor status without a bus: exit %d, stdout %q, stderr %q; want 3 and one line on stdout", code, out, errOut)
		}
		// No signal can tell the daemon about this one.
		h.MustRun(t, "systemctl", "disable", "--quiet", demoUnit)
		cpu := h.cpuOver(pid, idleWindow)
		t.Logf("CPU time over %v without a bus: %v", idleWindow, cpu)
		if cpu > idleCPUBound {
			t.Errorf("the daemon used %v of CPU in %v without a bus, want at most %v: it must wait, not spin", cpu, idleWindow, idleCPUBound)
		}
		if got := h.between(m, h.mark(), harness.DriftDetected, map[string]string{"DRIFT_UNIT": demoUnit}); len(got) > 0 {
			t.Errorf("drift of %s reported while systemd could not be asked: %s", demoUnit, got[0])
		}

		h.MustRun(t, "systemctl", "start", "dbus.socket", "dbus.service")
		h.waitRecordWithin(reconnectTimeout, m, harness.MsgBusRestored, nil)
		// The missed change: enablement is asked again once systemd is back.
		h.waitRecordWithin(reconnectTimeout, m, harness.DriftDetected, unitDrift)
		h.WaitFor(t, reconnectTimeout, "StatusText "+disabled, func() (bool, string) {
			s, err := h.status()
			return err == nil && s == disabled, fmt.Sprintf("StatusText %q (%v)", s, err)
		})
		h.statusExits(reconnectTimeout, 1, "drift-monitor drifted: "+disabled+"\n")
		h.sameProcess(pid)
	})
}

// bigDrift is how many declared files TestLargeDriftSet has, each with a
// path of about 3,800 bytes: their drift, as one D-Bus message, would be
// about 38 MB, past dbus-daemon's 32 MiB max_message_size
// (/usr/share/dbus-1/system.conf).
const bigDrift = 5000

// bigDir is a missing directory of 15 components of 250 bytes.
var bigDir = "/etc/dm-big/" + strings.TrimSuffix(strings.Repeat(strings.Repeat("d", 250)+"/", 15), "/")

func bigPath(i int) string { return fmt.Sprintf("%s/f-%05d", bigDir, i) }

// TestLargeDriftSet proves that a drift set far larger than a D-Bus message
// may be neither crashes nor silences the daemon: with thousands of
// declared files, all missing, behind long paths, the service stays up
// (NRestarts 0), the bus answers, the status line and `drift-monitor status`
// give the count, and `drift-monitor status --format json` lists every
// drift, paging through GetDrift — for root and for nobody alike.
func TestLargeDriftSet(t *testing.T) {
	t.Parallel()
	var cfg strings.Builder
	cfg.WriteString(`{"ignition":{"version":"3.4.0"},"storage":{"files":[`)
	for i := range bigDrift {
		if i > 0 {
			cfg.WriteString(",")
		}
		fmt.Fprintf(&cfg, `{"path":%q,"mode":420}`, bigPath(i))
	}
	cfg.WriteString(`]}}`)
	h := bootDaemon(t, setup{config: cfg.String(), busPolicy: true})
	pid := h.prop("MainPID")
	// Three long paths, shortened in the middle, and the count: systemd is
	// sent at most 1024 bytes.
	prefix := fmt.Sprintf("Drift: %d paths differ (/etc/dm-big/", bigDrift)
	h.WaitFor(t, recordTimeout, "a status line with the count", func() (bool, string) {
		s, err := h.status()
		return err == nil && strings.HasPrefix(s, prefix) && strings.HasSuffix(s, "/f-00002: missing; …)") && len(s) < 1024,
			fmt.Sprintf("StatusText %q (%v)", s, err)
	})

	c := h.hostBus()
	if got := busProp[uint32](t, c, "DriftCount"); got != bigDrift {
		t.Errorf("DriftCount = %d, want %d", got, bigDrift)
	}
	first := busProp[[]busDrift](t, c, "Drift")
	if len(first) != 100 || first[0].Path != bigPath(0) || first[99].Path != bigPath(99) {
		t.Errorf("Drift holds %d items, want the first 100", len(first))
	}

	out := h.statusExits(recordTimeout, 1, "drift-monitor drifted: "+prefix)
	if want := fmt.Sprintf("%d more", bigDrift-100); !strings.Contains(out, want) {
		t.Errorf("drift-monitor status does not say %q about the drift it does not list:\n%.2000s", want, out)
	}

	for _, who := range []struct {
		name   string
		prefix []string
	}{{"root", nil}, {"nobody", nobody}} {
		t.Run("status --format json as "+who.name, func(t *testing.T) {
			h := h.in(t)
			out, errOut, code := h.run(append(append([]string{}, who.prefix...), "drift-monitor", "status", "--format", "json")...)
			if code != 1 {
				t.Fatalf("exit %d, want 1; stderr %q", code, errOut)
			}
			var rep harness.StatusReport
			if err := json.Unmarshal([]byte(out), &rep); err != nil {
				t.Fatalf("status --format json: %v", err)
			}
			count := -1 // drift_count missing
			if rep.DriftCount != nil {
				count = *rep.DriftCount
			}
			if rep.State != "drifted" || count != bigDrift || rep.DriftTruncated || len(rep.Drift) != bigDrift {
				t.Fatalf("state %q, drift_count %d, drift_truncated %v, %d drift items; want drifted and all %d", rep.State, count, rep.DriftTruncated, len(rep.Drift), bigDrift)
			}
			for i, d := range rep.Drift {
				if d.Path != bigPath(i) || d.Kind != "missing" {
					t.Fatalf("drift[%d] = %s %.80s…, want missing %.80s…", i, d.Kind, d.Path, bigPath(i))
				}
			}
		})
	}
	h.sameProcess(pid)
}
