package systemd_test

import (
	"errors"
	"fmt"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/drift-monitor/drift-monitor/test/harness"
	godbus "github.com/godbus/dbus/v5"
)

// The daemon's D-Bus API (internal/dbusapi), spelled out: a contract with
// its clients, like the MESSAGE_IDs.
const (
	busName  = "org.driftmonitor.DriftMonitor1"
	busPath  = godbus.ObjectPath("/org/driftmonitor/DriftMonitor1")
	busIface = "org.driftmonitor.DriftMonitor1"
)

// nobody runs a command as the unprivileged user nobody (65534), without
// root's supplementary groups.
var nobody = []string{"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--"}

// run runs a command inside and returns its outputs and exit status; it fails
// the test only if the command could not be run at all.
func (h *host) run(args ...string) (stdout, stderr string, code int) {
	h.t.Helper()
	out, errOut, err := h.Run(h.ctx, args...)
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		code = ee.ExitCode()
	default:
		h.t.Fatalf("%v\n--- stdout ---\n%s--- stderr ---\n%s", err, out, errOut)
	}
	return out, errOut, code
}

// hostBus connects to the container's system bus from the host, through the
// container's root, as root. Its peer credentials are the host process's:
// root, but with no pid the container can see (the daemon records 0).
func (h *host) hostBus() *godbus.Conn {
	h.t.Helper()
	addr := fmt.Sprintf("unix:path=/proc/%d/root/run/dbus/system_bus_socket", h.InitPID)
	c := harness.DialBus(h.t, addr)
	if !c.SupportsUnixFDs() {
		h.t.Fatalf("the connection to %s cannot pass file descriptors", addr)
	}
	return c
}

// busDrift is one item of the Drift property and of DriftChanged: (sssss).
type busDrift struct{ Kind, Entry, Path, Unit, Message string }

// busEvent is a signal of the daemon's object, stamped when it arrived.
type busEvent struct {
	at     time.Time
	member string                    // PropertiesChanged or DriftChanged
	props  map[string]godbus.Variant // PropertiesChanged: what changed
	drift  []busDrift                // DriftChanged: the new drift set
}

func (e busEvent) String() string {
	if e.member == "DriftChanged" {
		return fmt.Sprintf("DriftChanged%v", e.drift)
	}
	var ps []string
	for k, v := range e.props {
		ps = append(ps, k+"="+v.String())
	}
	return "PropertiesChanged{" + strings.Join(ps, " ") + "}"
}

// busEvents records every signal of the daemon's object from the moment it
// is made, with its time of arrival: a latency is measured from when the
// signal came, not from when the test got round to looking.
type busEvents struct {
	mu     sync.Mutex
	evs    []busEvent
	notify chan struct{} // a token whenever evs grew
}

// watchBus subscribes c to the daemon's PropertiesChanged and DriftChanged.
func (h *host) watchBus(c *godbus.Conn) *busEvents {
	h.t.Helper()
	for _, m := range [][]godbus.MatchOption{
		{godbus.WithMatchObjectPath(busPath), godbus.WithMatchInterface("org.freedesktop.DBus.Properties"), godbus.WithMatchMember("PropertiesChanged")},
		{godbus.WithMatchObjectPath(busPath), godbus.WithMatchInterface(busIface), godbus.WithMatchMember("DriftChanged")},
	} {
		if err := c.AddMatchSignal(m...); err != nil {
			h.t.Fatalf("AddMatch: %v", err)
		}
	}
	be := &busEvents{notify: make(chan struct{}, 1)}
	sigs := make(chan *godbus.Signal, 256)
	c.Signal(sigs)
	go func() {
		for s := range sigs {
			ev := busEvent{at: time.Now()}
			switch {
			case s.Path != busPath:
				continue
			case s.Name == "org.freedesktop.DBus.Properties.PropertiesChanged":
				var iface string
				var changed map[string]godbus.Variant
				var invalidated []string
				if godbus.Store(s.Body, &iface, &changed, &invalidated) != nil || iface != busIface {
					continue
				}
				ev.member, ev.props = "PropertiesChanged", changed
			case s.Name == busIface+".DriftChanged":
				ev.member = "DriftChanged"
				if err := godbus.Store(s.Body, &ev.drift); err != nil {
					ev.drift = []busDrift{{Message: "cannot decode: " + err.Error()}}
				}
			default:
				continue
			}
			be.mu.Lock()
			be.evs = append(be.evs, ev)
			be.mu.Unlock()
			select {
			case be.notify <- struct{}{}:
			default:
			}
		}
	}()
	return be
}

// mark returns how many signals arrived so far: a later wait looks only at
// what comes after.
func (be *busEvents) mark() int {
	be.mu.Lock()
	defer be.mu.Unlock()
	return len(be.evs)
}

// wait waits up to timeout for a signal after the first from that satisfies
// match, and returns it with its index.
func (be *busEvents) wait(t testing.TB, from int, timeout time.Duration, what string, match func(busEvent) bool) (busEvent, int) {
	t.Helper()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for {
		be.mu.Lock()
		evs := be.evs
		be.mu.Unlock()
		for i := from; i < len(evs); i++ {
			if match(evs[i]) {
				return evs[i], i
			}
		}
		select {
		case <-be.notify:
		case <-timer.C:
			var seen []string
			for _, e := range evs[min(from, len(evs)):] {
				seen = append(seen, e.String())
			}
			t.Fatalf("no signal %s within %v; %d signals after %d:\n%s", what, timeout, len(evs)-min(from, len(evs)), from, strings.Join(seen, "\n"))
		}
	}
}

// changed matches a PropertiesChanged that sets name to value.
func changed(name string, value any) func(busEvent) bool {
	return func(e busEvent) bool {
		v, ok := e.props[name]
		return ok && e.member == "PropertiesChanged" && v.Value() == value
	}
}

// busProp reads a property of the daemon over c.
func busProp[T any](t testing.TB, c *godbus.Conn, name string) T {
	t.Helper()
	var out T
	v, err := c.Object(busName, busPath).GetProperty(busIface + "." + name)
	if err != nil {
		t.Fatalf("reading %s over D-Bus: %v", name, err)
	}
	if err := v.Store(&out); err != nil {
		t.Fatalf("reading %s over D-Bus: %v", name, err)
	}
	return out
}

// busInhibitor is one item of the Inhibitors property: (ssu).
type busInhibitor struct {
	Who, Why string
	PID      uint32
}

// TestBusAPIOnTheSystemBus proves the D-Bus API on the container's real
// system bus, with the shipped policy file where the package installs it:
// busctl introspect shows the interface; anyone reads the properties, root
// and nobody alike; the bus policy itself (dbus-daemon's AccessDenied, not
// the daemon's own check) refuses Check, Reload and Inhibit to nobody while
// root may call them; PropertiesChanged and DriftChanged follow a drift and
// its resolution; Inhibit hands back a descriptor whose close releases the
// inhibitor within a second; and `drift-monitor status` exits 0 clean, 1
// drifted, 3 once the service is stopped.
func TestBusAPIOnTheSystemBus(t *testing.T) {
	t.Parallel()
	h := bootDaemon(t, setup{
		config:    etcFileAndSentinel,
		files:     []file{etcFileOK, sentinelFile},
		busPolicy: true,
	})
	const clean = "No drift: watching 2 paths, 0 units"
	const drifted = "Drift: 1 path differs (/etc/etc-file: content)"
	h.waitStatus(clean)
	c := h.hostBus()
	evs := h.watchBus(c)

	t.Run("busctl introspect shows the interface", func(t *testing.T) {
		h := h.in(t)
		out := h.MustRun(t, "busctl", "introspect", "--no-pager", busName, string(busPath))
		// NAME TYPE SIGNATURE RESULT/VALUE FLAGS; a value may hold spaces.
		rows := map[string][]string{}
		for _, line := range strings.Split(out, "\n") {
			if f := strings.Fields(line); len(f) >= 5 {
				rows[f[0]] = f
			}
		}
		want := []struct{ name, typ, sig, result string }{
			{busIface, "interface", "-", "-"},
			{".Check", "method", "-", "bu"},
			{".Reload", "method", "-", "-"},
			{".Inhibit", "method", "ss", "h"},
			{".GetDrift", "method", "uu", "tua(sssss)"},
			{".DriftChanged", "signal", "a(sssss)", "-"},
			{".State", "property", "s", `"clean"`},
			{".StatusText", "property", "s", `"No`},
			{".DriftCount", "property", "u", "0"},
			{".Drift", "property", "a(sssss)", "0"},
			{".Inhibitors", "property", "a(ssu)", "0"},
			{".LastCheck", "property", "t", ""},
			{".WatchedPaths", "property", "u", "2"},
			{".Units", "property", "u", "0"},
			{".Version", "property", "s", ""},
		}
		for _, w := range want {
			f, ok := rows[w.name]
			if !ok {
				t.Errorf("busctl introspect has no %s %s:\n%s", w.typ, w.name, out)
				continue
			}
			if f[1] != w.typ || f[2] != w.sig || (w.result != "" && f[3] != w.result) {
				t.Errorf("busctl introspect: %s is %v, want %s %s %s", w.name, f, w.typ, w.sig, w.result)
			}
			if w.typ == "property" {
				flag := "emits-change"
				if w.name == ".Version" {
					flag = "const"
				}
				if f[len(f)-1] != flag {
					t.Errorf("busctl introspect: property %s has flags %s, want %s", w.name, f[len(f)-1], flag)
				}
			}
		}
	})

	t.Run("properties are readable by root and by nobody", func(t *testing.T) {
		h := h.in(t)
		get := []string{"busctl", "get-property", busName, string(busPath), busIface, "State", "StatusText", "WatchedPaths", "Inhibitors"}
		want := "s \"clean\"\ns \"" + clean + "\"\nu 2\na(ssu) 0\n"
		for _, who := range []struct {
			name   string
			prefix []string
		}{{"root", nil}, {"nobody", nobody}} {
			out, errOut, code := h.run(append(append([]string{}, who.prefix...), get...)...)
			if code != 0 || out != want {
				t.Errorf("%s: busctl get-property: exit %d, stdout %q, stderr %q; want %q", who.name, code, out, errOut, want)
			}
		}
		// Introspection reads every property: also open to nobody.
		if out, errOut, code := h.run(append(append([]string{}, nobody...), "busctl", "introspect", "--no-pager", busName, string(busPath))...); code != 0 || !strings.Contains(out, ".Inhibit") {
			t.Errorf("nobody: busctl introspect: exit %d, stderr %q:\n%s", code, errOut, out)
		}
	})

	t.Run("the bus policy refuses the methods to nobody, not to root", func(t *testing.T) {
		h := h.in(t)
		m := h.mark()
		for _, c := range []struct {
			method string
			args   []string
		}{{"Check", nil}, {"Reload", nil}, {"Inhibit", []string{"string:mallory", "string:suspend it"}}} {
			send := append([]string{"dbus-send", "--system", "--print-reply", "--dest=" + busName, string(busPath), busIface + "." + c.method}, c.args...)
			_, errOut, code := h.run(append(append([]string{}, nobody...), send...)...)
			// dbus-daemon's refusal names the rule it applied; the daemon's own
			// would be org.driftmonitor.DriftMonitor1.Error.AccessDenied.
			if code == 0 || !strings.Contains(errOut, "Error org.freedesktop.DBus.Error.AccessDenied: Rejected send message") ||
				!strings.Contains(errOut, `member="`+c.method+`"`) || !strings.Contains(errOut, "uid=65534") {
				t.Errorf("nobody: %s: exit %d, stderr %q; want dbus-daemon's AccessDenied", c.method, code, errOut)
			}
		}
		if got := busProp[[]busInhibitor](t, c, "Inhibitors"); len(got) != 0 {
			t.Errorf("Inhibitors after nobody's attempts = %v, want none", got)
		}

		// Root may: Check answers clean, and Reload re-reads the state.
		out := h.MustRun(t, "busctl", "call", busName, string(busPath), busIface, "Check")
		if out != "bu true 0\n" {
			t.Errorf("root: busctl call Check = %q, want \"bu true 0\"", out)
		}
		h.MustRun(t, "busctl", "call", busName, string(busPath), busIface, "Reload")
		r, _ := h.waitRecord(m, harness.MsgReloaded, nil)
		if !strings.Contains(r["MESSAGE"], "reload requested over D-Bus") {
			t.Errorf("reloaded record after Reload: %s", r)
		}
		if got := h.between(m, h.mark(), harness.MsgInhibited, nil); len(got) != 0 {
			t.Errorf("an inhibitor was taken: %s", got[0])
		}
	})

	t.Run("PropertiesChanged and DriftChanged follow a drift", func(t *testing.T) {
		h := h.in(t)
		from := evs.mark()
		h.sh(`printf 'not-the-data' >/etc/etc-file`)
		e, _ := evs.wait(t, from, recordTimeout, "DriftChanged with the drift", func(e busEvent) bool {
			return e.member == "DriftChanged" && len(e.drift) > 0
		})
		if len(e.drift) != 1 || e.drift[0].Path != etcFile || e.drift[0].Kind != "content" || e.drift[0].Entry != "file" {
			t.Errorf("DriftChanged = %v, want one content drift of the file %s", e.drift, etcFile)
		}
		evs.wait(t, from, recordTimeout, "State drifted", changed("State", "drifted"))
		evs.wait(t, from, recordTimeout, "StatusText "+drifted, changed("StatusText", drifted))
		if got := busProp[[]busDrift](t, c, "Drift"); len(got) != 1 || got[0].Path != etcFile {
			t.Errorf("Drift = %v, want the drift of %s", got, etcFile)
		}

		from = evs.mark()
		h.sh(`printf 'hello world\n' >/etc/etc-file`)
		evs.wait(t, from, recordTimeout, "DriftChanged with no drift", func(e busEvent) bool {
			return e.member == "DriftChanged" && len(e.drift) == 0
		})
		evs.wait(t, from, recordTimeout, "State clean", changed("State", "clean"))
		evs.wait(t, from, recordTimeout, "StatusText "+clean, changed("StatusText", clean))
	})

	t.Run("Inhibit returns a descriptor; closing it releases", func(t *testing.T) {
		h := h.in(t)
		m, from := h.mark(), evs.mark()
		// One client, two inhibitors under the same name (two operations of
		// one update agent): each lasts as long as its own descriptor.
		inhibit := func(why string) godbus.UnixFD {
			t.Helper()
			var fd godbus.UnixFD
			if err := c.Object(busName, busPath).Call(busIface+".Inhibit", 0, "bus-client", why).Store(&fd); err != nil {
				t.Fatalf("Inhibit: %v", err)
			}
			t.Cleanup(func() { syscall.Close(int(fd)) }) // EBADF once closed by the test
			return fd
		}
		// This process is not in the container's pid namespace: no pid.
		const first, second = "bus-client: via D-Bus", "bus-client: second call"
		fd1 := inhibit("via D-Bus")
		h.waitStatus("Inhibited by " + first)
		evs.wait(t, from, recordTimeout, "State inhibited", changed("State", "inhibited"))
		r, _ := h.waitRecord(m, harness.MsgInhibited, map[string]string{"INHIBIT_WHO": "bus-client", "INHIBIT_WHY": "via D-Bus"})
		t.Logf("inhibited record: %s (INHIBIT_PID=%q)", r["MESSAGE"], r["INHIBIT_PID"])
		// The descriptor holds the lock, not the connection.
		var st syscall.Stat_t
		if err := syscall.Fstat(int(fd1), &st); err != nil || st.Mode&syscall.S_IFMT != syscall.S_IFREG {
			t.Errorf("the descriptor Inhibit returned is not a regular file (%v, mode %o)", err, st.Mode)
		}

		fd2 := inhibit("second call")
		h.waitRecord(m, harness.MsgInhibited, map[string]string{"INHIBIT_WHO": "bus-client", "INHIBIT_WHY": "second call"})
		h.WaitFor(t, recordTimeout, "a status line naming both inhibitors", func() (bool, string) {
			s, err := h.status()
			return err == nil && strings.HasPrefix(s, "Inhibited by ") && strings.Contains(s, first) && strings.Contains(s, second), fmt.Sprintf("StatusText %q (%v)", s, err)
		})
		if got := busProp[[]busInhibitor](t, c, "Inhibitors"); len(got) != 2 {
			t.Errorf("Inhibitors = %v, want both of bus-client's", got)
		}

		if err := syscall.Close(int(fd1)); err != nil {
			t.Fatal(err)
		}
		h.waitStatus("Inhibited by " + second)
		if got := h.between(m, h.mark(), harness.MsgResumed, nil); len(got) > 0 {
			t.Errorf("resumed while the second descriptor is open: %s", got[0])
		}

		from = evs.mark()
		start := time.Now()
		if err := syscall.Close(int(fd2)); err != nil {
			t.Fatal(err)
		}
		e, _ := evs.wait(t, from, recordTimeout, "State clean", changed("State", "clean"))
		took := e.at.Sub(start)
		t.Logf("closing the last descriptor: State clean on the bus after %v", took.Round(time.Microsecond))
		if took > time.Second {
			t.Errorf("the inhibitor was released %v after the close, want within a second", took)
		}
		h.waitRecord(m, harness.MsgResumed, nil)
		h.waitStatus(clean)
	})

	t.Run("drift-monitor status: 0 clean, 1 drifted, 3 stopped", func(t *testing.T) {
		h := h.in(t)
		out, errOut, code := h.run("drift-monitor", "status")
		if code != 0 || !strings.HasPrefix(out, "drift-monitor clean: "+clean+"\n") {
			t.Errorf("clean: drift-monitor status: exit %d, stderr %q:\n%s", code, errOut, out)
		}
		m := h.mark()
		h.sh(`chmod 0600 /etc/sentinel`)
		h.waitRecord(m, harness.DriftDetected, map[string]string{"DRIFT_PATH": sentinel})
		h.waitStatus("Drift: 1 path differs (/etc/sentinel: mode)")
		for _, who := range []struct {
			name   string
			prefix []string
		}{{"root", nil}, {"nobody", nobody}} {
			out, errOut, code = h.run(append(append([]string{}, who.prefix...), "drift-monitor", "status")...)
			if code != 1 || !regexp.MustCompile(`(?m)^drift-monitor drifted: .*\n(.*\n)*  mode +`).MatchString(out) {
				t.Errorf("drifted, as %s: drift-monitor status: exit %d, stderr %q; want 1:\n%s", who.name, code, errOut, out)
			}
		}
		h.MustRun(t, "systemctl", "stop", service)
		out, errOut, code = h.run("drift-monitor", "status")
		if code != 3 || !strings.Contains(errOut, "not running") {
			t.Errorf("stopped: drift-monitor status: exit %d, stdout %q, stderr %q; want 3 and 'not running'", code, out, errOut)
		}
	})
}
