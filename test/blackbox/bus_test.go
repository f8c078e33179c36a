package blackbox

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"
)

// privateBus runs a dbus-daemon of the system type on a socket in a
// temporary directory and returns its address. Its policy is permissive on
// purpose: what is tested here is the daemon's own check of the caller (the
// shipped bus policy is tested by the packaging tier).
func privateBus(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("dbus-daemon"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("dbus-daemon is required (apt-get install dbus)")
		}
		t.Skip("dbus-daemon not installed")
	}
	dir, err := os.MkdirTemp("", "dm-bus-")
	if err != nil {
		t.Fatal(err)
	}
	os.Chmod(dir, 0o755) // unprivileged clients connect too
	sock := filepath.Join(dir, "system_bus_socket")
	conf := filepath.Join(dir, "bus.conf")
	os.WriteFile(conf, []byte(`<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>system</type>
  <listen>unix:path=`+sock+`</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow user="*"/>
    <allow own="*"/>
    <allow send_destination="*"/>
    <allow receive_sender="*"/>
  </policy>
</busconfig>
`), 0o644)
	cmd := exec.Command("dbus-daemon", "--config-file="+conf, "--nofork", "--print-address")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		os.RemoveAll(dir)
	})
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		if sc.Scan() {
			addr <- strings.TrimSpace(sc.Text())
		}
	}()
	select {
	case a := <-addr:
		requirePrivateBus(t, a)
		return a
	case <-time.After(10 * time.Second):
		t.Fatal("dbus-daemon did not print its address within 10s")
		return ""
	}
}

// requirePrivateBus is the guard: this tier must never talk to the
// machine's real system bus.
func requirePrivateBus(t *testing.T, addr string) {
	t.Helper()
	for _, real := range []string{"/run/dbus/system_bus_socket", "/var/run/dbus/system_bus_socket"} {
		if strings.Contains(addr, real) {
			t.Fatalf("refusing the real system bus (%s)", addr)
		}
	}
	if !strings.Contains(addr, os.TempDir()) {
		t.Fatalf("refusing a bus outside the temporary directory: %s", addr)
	}
}

// busConn connects to a private bus as this (root) process.
func busConn(t *testing.T, addr string) *dbus.Conn {
	t.Helper()
	c, err := dbus.Connect(addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

const (
	busName   = "org.driftmonitor.DriftMonitor1"
	busPath   = dbus.ObjectPath("/org/driftmonitor/DriftMonitor1")
	busIface  = "org.driftmonitor.DriftMonitor1"
	msgInhib  = "6715476f77304f95829d61c3e13b9ce7"
	msgResume = "c2585180d8b94e96a8ddc5ba2a2cfd1c"
)

// runCLI runs the binary with the private bus as its system bus.
func runCLI(t *testing.T, bus string, args ...string) (string, string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, args...)
	cmd.Env = append(os.Environ(), "DBUS_SYSTEM_BUS_ADDRESS="+bus)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	return out.String(), errb.String(), code
}

func prop[T any](t *testing.T, c *dbus.Conn, name string) T {
	t.Helper()
	v, err := c.Object(busName, busPath).GetProperty(busIface + "." + name)
	if err != nil {
		t.Fatalf("reading %s: %v", name, err)
	}
	var out T
	if err := v.Store(&out); err != nil {
		t.Fatalf("storing %s: %v", name, err)
	}
	return out
}

func fmtDur(d time.Duration) string { return fmt.Sprintf("%.1fms", float64(d.Microseconds())/1000) }
