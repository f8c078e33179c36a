package blackbox

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/drift-monitor/drift-monitor/test/harness"
	"github.com/godbus/dbus/v5"
)

// privateBus runs a private system-type bus with a permissive policy and
// returns its address: what is tested here is the daemon's own check of the
// caller (the shipped bus policy is tested by the packaging tier).
func privateBus(t *testing.T) string {
	t.Helper()
	return harness.PrivateBus(t, harness.PermissiveBus)
}

const (
	busName  = "org.driftmonitor.DriftMonitor1"
	busPath  = dbus.ObjectPath("/org/driftmonitor/DriftMonitor1")
	busIface = "org.driftmonitor.DriftMonitor1"
)

// runCLI runs the binary with the private bus as its system bus.
func runCLI(t *testing.T, bus string, args ...string) (string, string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, harness.Binary(t), args...)
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
