package harness

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"
)

// NoBus is the environment setting for a binary that must run without a
// system bus: an address that cannot be connected to, so that a run that
// tried the bus after all fails instead of reaching the machine's.
const NoBus = "DBUS_SYSTEM_BUS_ADDRESS=unix:path=/nonexistent/refuse-the-real-system-bus"

// realSystemBuses are where a machine's system bus listens.
var realSystemBuses = []string{"/run/dbus/system_bus_socket", "/var/run/dbus/system_bus_socket"}

// busStartTimeout bounds dbus-daemon's start (it prints its address within
// milliseconds; the margin is for a loaded machine).
const busStartTimeout = 30 * time.Second

// PermissiveBus is a bus configuration for PrivateBus: a system-type bus on
// which anyone may own any name and call anything. What a test on it checks
// is the daemon's own check of its caller, not a bus policy.
func PermissiveBus(socket string) string {
	return `<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>system</type>
  <listen>unix:path=` + socket + `</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow user="*"/>
    <allow own="*"/>
    <allow send_destination="*"/>
    <allow receive_sender="*"/>
  </policy>
</busconfig>
`
}

// PrivateBus runs dbus-daemon with the configuration config(socket) returns,
// a whole <busconfig> that listens on socket, a path in a fresh temporary
// directory (mode 0755: users other than root connect too), and returns the
// bus's address once dbus-daemon prints it. Without dbus-daemon the test is
// Unavailable. The bus is killed when the test ends; its standard error is
// shown if the test failed. The address is checked by GuardBus.
func PrivateBus(t testing.TB, config func(socket string) string) string {
	t.Helper()
	RequireTools(t, "dbus-daemon")
	dir, err := os.MkdirTemp("", "dm-bus-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "system_bus_socket")
	conf := filepath.Join(dir, "bus.conf")
	if err := os.WriteFile(conf, []byte(config(sock)), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("dbus-daemon", "--config-file="+conf, "--nofork", "--print-address")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	// Killed with the test binary, should it die before its cleanups.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting dbus-daemon: %v", err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() && stderr.Len() > 0 {
			t.Logf("dbus-daemon's stderr:\n%s", stderr.String())
		}
	})
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		if sc.Scan() {
			addr <- strings.TrimSpace(sc.Text())
		}
		close(addr)
	}()
	select {
	case a, ok := <-addr:
		if !ok || !strings.Contains(a, "unix:path="+sock) {
			t.Fatalf("dbus-daemon --config-file=%s did not start on %s (address %q)", conf, sock, a)
		}
		GuardBus(t, a)
		return a
	case <-time.After(busStartTimeout):
		t.Fatalf("dbus-daemon did not print its address within %v", busStartTimeout)
		return ""
	}
}

// GuardBus fails the test unless addr is one unix socket path
// ("unix:path=P", with dbus-daemon's ",guid=..." allowed) whose socket
// exists and is not the machine's real system bus, compared by inode, so
// that neither another spelling of the path nor a link to it gets through.
// A container's bus seen through /proc/PID/root is another socket, and
// passes.
func GuardBus(t testing.TB, addr string) {
	t.Helper()
	if err := checkBus(addr); err != nil {
		t.Fatalf("refusing the bus %q: %v", addr, err)
	}
}

func checkBus(addr string) error {
	if strings.Contains(addr, ";") {
		return fmt.Errorf("several addresses: a test names exactly one bus")
	}
	rest, ok := strings.CutPrefix(addr, "unix:path=")
	if !ok {
		return fmt.Errorf("not a unix:path= address")
	}
	path, extra, _ := strings.Cut(rest, ",")
	if extra != "" && !strings.HasPrefix(extra, "guid=") {
		return fmt.Errorf("unexpected address options %q", extra)
	}
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	if fi.Mode().Type() != os.ModeSocket {
		return fmt.Errorf("%s is not a socket", path)
	}
	for _, real := range realSystemBuses {
		if rfi, err := os.Stat(real); err == nil && os.SameFile(fi, rfi) {
			return fmt.Errorf("%s is the machine's system bus (%s)", path, real)
		}
	}
	return nil
}

// DialBus connects to the bus at addr (checked by GuardBus first) as this
// process, authenticated with EXTERNAL and registered (Hello), and closes
// the connection when the test ends.
func DialBus(t testing.TB, addr string) *dbus.Conn {
	t.Helper()
	c, err := BusDialer(t, addr)()
	if err != nil {
		t.Fatalf("connecting to %s: %v", addr, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// BusDialer returns a function that connects to addr as DialBus does, for
// code that dials by itself (and again after a bus restart); the caller
// closes what it returns. addr is checked by GuardBus now.
func BusDialer(t testing.TB, addr string) func() (*dbus.Conn, error) {
	t.Helper()
	GuardBus(t, addr)
	return func() (*dbus.Conn, error) {
		c, err := dbus.Dial(addr)
		if err != nil {
			return nil, err
		}
		if err := c.Auth([]dbus.Auth{dbus.AuthExternal(strconv.Itoa(os.Getuid()))}); err != nil {
			c.Close()
			return nil, fmt.Errorf("authenticating on %s: %w", addr, err)
		}
		if err := c.Hello(); err != nil {
			c.Close()
			return nil, fmt.Errorf("registering (Hello) on %s: %w", addr, err)
		}
		return c, nil
	}
}
