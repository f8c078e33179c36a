package packaging

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/drift-monitor/drift-monitor/internal/dbusapi"
	"github.com/drift-monitor/drift-monitor/test/harness"
	"github.com/godbus/dbus/v5"
	"github.com/godbus/dbus/v5/introspect"
	"github.com/godbus/dbus/v5/prop"
	"github.com/google/go-cmp/cmp"
)

// busClientEnv, set to a bus address, makes the test binary the
// unprivileged client of TestBusPolicy (see TestMain).
const busClientEnv = "DM_PACKAGING_BUS_CLIENT"

// The unprivileged client's identity: nobody/nogroup.
const nobody = 65534

// Outcomes the client reports for each attempt.
const (
	outcomeOK     = "ok"
	accessDenied  = "org.freedesktop.DBus.Error.AccessDenied"
	stubFailed    = "org.driftmonitor.DriftMonitor1.Error.Failed"
	readOnlyError = "org.freedesktop.DBus.Properties.Error.ReadOnly"
)

// systemBusConfig turns the host's system bus configuration into one for a
// private bus: the same policy, no other services' policies, no user switch,
// no activation, no syslog, listening on sock and including policy.
func systemBusConfig(t *testing.T, sock, policy string) string {
	t.Helper()
	const systemConf = "/usr/share/dbus-1/system.conf"
	b, err := os.ReadFile(systemConf)
	if err != nil {
		harness.Unavailable(t, "no system bus configuration: %v (Debian package dbus)", err)
	}
	conf := string(b)
	for _, re := range []string{
		`<user>[^<]*</user>`, `<fork/>`, `<standard_system_servicedirs/>`, `<servicehelper>[^<]*</servicehelper>`,
		`<pidfile>[^<]*</pidfile>`, `<syslog/>`, `<listen>[^<]*</listen>`,
		`<include[^>]*>[^<]*</include>`, `<includedir>[^<]*</includedir>`,
	} {
		conf = regexp.MustCompile(re).ReplaceAllString(conf, "")
	}
	// The defaults the shipped policy relies on: nobody owns a name or
	// calls a method unless a policy punches a hole.
	for _, want := range []string{`<policy context="default">`, `<deny own="*"/>`, `<deny send_type="method_call"/>`} {
		if !strings.Contains(conf, want) {
			t.Fatalf("%s has no %s", systemConf, want)
		}
	}
	i := strings.LastIndex(conf, "</busconfig>")
	if i < 0 {
		t.Fatalf("%s has no </busconfig>", systemConf)
	}
	return conf[:i] + "  <listen>unix:path=" + sock + "</listen>\n  <include>" + policy + "</include>\n" + conf[i:]
}

// startBus runs a private dbus-daemon configured as the system bus, with
// the shipped policy, and returns its address.
func startBus(t *testing.T) string {
	t.Helper()
	policy := harness.Repo(t, "packaging/org.driftmonitor.DriftMonitor1.conf")
	return harness.PrivateBus(t, func(sock string) string { return systemBusConfig(t, sock, policy) })
}

// stubDaemon exports what drift-monitor exports, on the interface and
// object of package dbusapi, and counts the method calls that reach it.
type stubDaemon struct {
	mu    sync.Mutex
	calls map[string]int
}

func (s *stubDaemon) count(m string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls[m]++
}

func (s *stubDaemon) callsOf(m string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[m]
}

// stubMethods are the methods; each answers, so a caller can tell that its
// call got through the bus.
type stubMethods struct{ s *stubDaemon }

func (m stubMethods) Check() (bool, uint32, *dbus.Error) { m.s.count("Check"); return true, 0, nil }
func (m stubMethods) Reload() *dbus.Error                { m.s.count("Reload"); return nil }
func (m stubMethods) Inhibit(who, why string) (dbus.UnixFD, *dbus.Error) {
	m.s.count("Inhibit")
	return -1, dbus.NewError(stubFailed, []any{"stub: no inhibitor"})
}
func (m stubMethods) GetDrift(offset, limit uint32) (uint64, uint32, []dbusapi.Drift, *dbus.Error) {
	m.s.count("GetDrift")
	return 1, 0, []dbusapi.Drift{}, nil
}
func (m stubMethods) GetDriftEx(offset, limit uint32) (uint64, uint32, []stubDriftEx, *dbus.Error) {
	m.s.count("GetDriftEx")
	return 1, 0, []stubDriftEx{}, nil
}
func (m stubMethods) GetMetrics() (string, *dbus.Error) { m.s.count("GetMetrics"); return "", nil }

// stubDriftEx is GetDriftEx's item: (sssssa{sv}).
type stubDriftEx struct {
	Kind, Entry, Path, Unit, Message string
	Details                          map[string]dbus.Variant
}

// exportStub connects as root, exports the stub and takes the bus name.
func exportStub(t *testing.T, addr string) (*dbus.Conn, *stubDaemon) {
	t.Helper()
	conn := harness.DialBus(t, addr)
	s := &stubDaemon{calls: map[string]int{}}
	if err := conn.Export(stubMethods{s}, dbusapi.Path, dbusapi.Interface); err != nil {
		t.Fatal(err)
	}
	props, err := prop.Export(conn, dbusapi.Path, prop.Map{dbusapi.Interface: {
		"State":   {Value: "clean", Emit: prop.EmitTrue},
		"Version": {Value: "stub", Emit: prop.EmitConst},
	}})
	if err != nil {
		t.Fatal(err)
	}
	node := &introspect.Node{Name: string(dbusapi.Path), Interfaces: []introspect.Interface{
		introspect.IntrospectData, prop.IntrospectData,
		{Name: dbusapi.Interface, Methods: introspect.Methods(stubMethods{s}), Properties: props.Introspection(dbusapi.Interface)},
	}}
	if err := conn.Export(introspect.NewIntrospectable(node), dbusapi.Path, "org.freedesktop.DBus.Introspectable"); err != nil {
		t.Fatal(err)
	}
	reply, err := conn.RequestName(dbusapi.BusName, dbus.NameFlagDoNotQueue)
	if err != nil || reply != dbus.RequestNameReplyPrimaryOwner {
		t.Fatalf("root cannot own %s: reply %v, %v", dbusapi.BusName, reply, err)
	}
	return conn, s
}

// attempts are what a client tries, by name; each gives an outcome: "ok", a
// D-Bus error name, or another error's text.
func attempts(conn *dbus.Conn) map[string]string {
	obj := conn.Object(dbusapi.BusName, dbusapi.Path)
	call := func(method string, args ...any) string {
		return outcome(obj.Call(method, 0, args...).Err)
	}
	res := map[string]string{}
	reply, err := conn.RequestName(dbusapi.BusName, dbus.NameFlagDoNotQueue)
	switch {
	case err != nil:
		res["own the name"] = outcome(err)
	case reply == dbus.RequestNameReplyPrimaryOwner:
		res["own the name"] = outcomeOK
	default:
		res["own the name"] = fmt.Sprintf("reply %d", reply)
	}
	res["Check"] = call(dbusapi.Interface + ".Check")
	res["Reload"] = call(dbusapi.Interface + ".Reload")
	res["Inhibit"] = call(dbusapi.Interface+".Inhibit", "who", "why")
	res["GetDrift"] = call(dbusapi.Interface+".GetDrift", uint32(0), uint32(0))
	res["GetDriftEx"] = call(dbusapi.Interface+".GetDriftEx", uint32(0), uint32(0))
	res["GetMetrics"] = call(dbusapi.Interface + ".GetMetrics")
	res["Properties.Get"] = call("org.freedesktop.DBus.Properties.Get", dbusapi.Interface, "State")
	res["Properties.GetAll"] = call("org.freedesktop.DBus.Properties.GetAll", dbusapi.Interface)
	res["Properties.Set"] = call("org.freedesktop.DBus.Properties.Set", dbusapi.Interface, "State", dbus.MakeVariant("x"))
	res["Introspect"] = call("org.freedesktop.DBus.Introspectable.Introspect")
	res["Peer.Ping"] = call("org.freedesktop.DBus.Peer.Ping")
	// A method call without an interface field: no allow rule names it.
	msg := &dbus.Message{Type: dbus.TypeMethodCall, Headers: map[dbus.HeaderField]dbus.Variant{
		dbus.FieldPath:        dbus.MakeVariant(dbusapi.Path),
		dbus.FieldMember:      dbus.MakeVariant("Check"),
		dbus.FieldDestination: dbus.MakeVariant(dbusapi.BusName),
	}}
	res["Check without interface"] = outcome((<-conn.Send(msg, make(chan *dbus.Call, 1)).Done).Err)
	return res
}

func outcome(err error) string {
	var de dbus.Error
	switch {
	case err == nil:
		return outcomeOK
	case errors.As(err, &de):
		return de.Name
	}
	return err.Error()
}

// clientResult is what the unprivileged client prints as its last line.
type clientResult struct {
	Attempts map[string]string
	Signal   string
}

// busClient is the unprivileged client, run as uid 65534 by TestBusPolicy:
// it tries everything, subscribes to the daemon's signals, prints "ready",
// waits for one signal, and prints its results as JSON.
func busClient(addr string) int {
	conn, err := dbus.Connect(addr)
	if err != nil {
		fmt.Fprintf(os.Stderr, "connecting as uid %d: %v\n", os.Getuid(), err)
		return 1
	}
	defer conn.Close()
	if err := conn.AddMatchSignal(dbus.WithMatchSender(dbusapi.BusName)); err != nil {
		fmt.Fprintf(os.Stderr, "AddMatch: %v\n", err)
		return 1
	}
	signals := make(chan *dbus.Signal, 8)
	conn.Signal(signals)
	res := clientResult{Attempts: attempts(conn)}
	fmt.Println("ready")
	select {
	case s := <-signals:
		res.Signal = s.Name
	case <-time.After(10 * time.Second):
		res.Signal = "none within 10s"
	}
	if err := json.NewEncoder(os.Stdout).Encode(res); err != nil {
		return 1
	}
	return 0
}

// TestBusPolicy checks packaging/org.driftmonitor.DriftMonitor1.conf on a
// private dbus-daemon configured like the system bus.
func TestBusPolicy(t *testing.T) {
	harness.RequireRoot(t, "running a client as another user")
	t.Parallel()
	// Readable by nobody: the socket and a copy of this test binary.
	dir, err := os.MkdirTemp("", "dm-buspolicy-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	addr := startBus(t)
	conn, stub := exportStub(t, addr)

	t.Run("root", func(t *testing.T) {
		got := attempts(harness.DialBus(t, addr))
		want := map[string]string{
			"own the name":            "reply 3", // already owned by the stub: allowed, but taken
			"Check":                   outcomeOK,
			"Reload":                  outcomeOK,
			"Inhibit":                 stubFailed, // the stub's own answer: the call got through
			"GetDrift":                outcomeOK,
			"GetDriftEx":              outcomeOK,
			"GetMetrics":              outcomeOK,
			"Properties.Get":          outcomeOK,
			"Properties.GetAll":       outcomeOK,
			"Properties.Set":          readOnlyError,
			"Introspect":              outcomeOK,
			"Peer.Ping":               outcomeOK,
			"Check without interface": outcomeOK,
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("root's attempts (-want +got):\n%s", diff)
		}
	})
	// What root got through: the counts the unprivileged client must not change.
	before := map[string]int{}
	for _, m := range []string{"Check", "Reload", "Inhibit"} {
		before[m] = stub.callsOf(m)
	}

	t.Run("unprivileged", func(t *testing.T) {
		self, err := os.Executable()
		if err != nil {
			t.Fatal(err)
		}
		exe := filepath.Join(dir, "client")
		copyFile(t, self, exe, 0o755)
		cmd := exec.Command(exe, "-test.run=^$")
		cmd.Env = []string{busClientEnv + "=" + addr, "HOME=/nonexistent", "PATH=/usr/bin:/bin"}
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody, Groups: []uint32{}}}
		var stderr strings.Builder
		cmd.Stderr = &stderr
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer cmd.Process.Kill()
		lines := make(chan string)
		go func() {
			defer close(lines)
			sc := bufio.NewScanner(stdout)
			for sc.Scan() {
				lines <- sc.Text()
			}
			io.Copy(io.Discard, stdout)
		}()
		next := func(what string) string {
			select {
			case l, ok := <-lines:
				if !ok {
					cmd.Wait()
					t.Fatalf("the client ended before %s; stderr:\n%s", what, stderr.String())
				}
				return l
			case <-time.After(30 * time.Second):
				t.Fatalf("no %s from the client within 30s; stderr:\n%s", what, stderr.String())
			}
			return ""
		}
		if l := next("ready"); l != "ready" {
			t.Fatalf("client said %q, want ready; stderr:\n%s", l, stderr.String())
		}
		if err := conn.Emit(dbusapi.Path, dbusapi.Interface+".DriftChanged", []dbusapi.Drift{}); err != nil {
			t.Fatal(err)
		}
		var res clientResult
		if err := json.Unmarshal([]byte(next("results")), &res); err != nil {
			t.Fatal(err)
		}
		if err := cmd.Wait(); err != nil {
			t.Errorf("client: %v; stderr:\n%s", err, stderr.String())
		}
		want := clientResult{
			Attempts: map[string]string{
				"own the name":            accessDenied,
				"Check":                   accessDenied,
				"Reload":                  accessDenied,
				"Inhibit":                 accessDenied,
				"GetDrift":                outcomeOK,
				"GetDriftEx":              outcomeOK,
				"GetMetrics":              outcomeOK, // drift-monitor-metrics.service is unprivileged
				"Properties.Get":          outcomeOK,
				"Properties.GetAll":       outcomeOK,
				"Properties.Set":          accessDenied,
				"Introspect":              outcomeOK,
				"Peer.Ping":               outcomeOK,
				"Check without interface": accessDenied,
			},
			Signal: dbusapi.Interface + ".DriftChanged",
		}
		if diff := cmp.Diff(want, res); diff != "" {
			t.Errorf("uid %d's attempts (-want +got):\n%s", nobody, diff)
		}
		for m, n := range before {
			if got := stub.callsOf(m); got != n {
				t.Errorf("%s reached the daemon from uid %d (%d calls, want %d): the bus should have refused it", m, nobody, got, n)
			}
		}
	})
}

func copyFile(t *testing.T, src, dst string, mode os.FileMode) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, mode); err != nil {
		t.Fatal(err)
	}
}
