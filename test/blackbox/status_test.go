package blackbox

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/drift-monitor/drift-monitor/internal/dbusapi"
	"github.com/drift-monitor/drift-monitor/test/harness"
)

// startingDaemon answers nothing: its first check never ends.
type startingDaemon struct{}

func (startingDaemon) CheckNow(context.Context) (bool, int, error) { return false, 0, context.Canceled }
func (startingDaemon) ReloadNow(context.Context) error             { return context.Canceled }
func (startingDaemon) DriftPage(context.Context, int, int) (uint64, int, []dbusapi.Drift, error) {
	return 0, 0, nil, context.Canceled
}

// TestStatusWhileStarting: until the daemon's first check is done,
// `drift-monitor status` says so in one line and exits 4 (node-problem-
// detector's "unknown"), never 0; json says state starting with exit 4.
func TestStatusWhileStarting(t *testing.T) {
	bus := privateBus(t)
	t.Setenv("DBUS_SYSTEM_BUS_ADDRESS", bus) // for Serve, in this process
	srv := dbusapi.Serve(context.Background(), startingDaemon{}, dbusapi.Options{Version: "test"})
	defer srv.Close()
	const line = "Starting: first check of 3 paths, 1 unit"
	srv.Update(dbusapi.Snapshot{State: "starting", StatusText: line, WatchedPaths: 3, Units: 1})

	out, errOut, code := runCLI(t, bus, "status")
	if code != 4 || out != "drift-monitor starting: "+line+"\n" {
		t.Errorf("status while starting: exit %d, stdout %q, stderr %q; want 4 and one line", code, out, errOut)
	}
	out, errOut, code = runCLI(t, bus, "status", "--format", "json")
	var rep harness.StatusReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != 4 || rep.State != "starting" || rep.DriftCount == nil || *rep.DriftCount != 0 {
		t.Errorf("status --format json while starting: exit %d, %+v (%v), stderr %q; want 4, starting, drift_count 0:\n%s", code, rep, err, errOut, out)
	}
	out, errOut, code = runCLI(t, bus, "status", "--format", "summary")
	if code != 4 || out != line+"\n" {
		t.Errorf("status --format summary while starting: exit %d, stdout %q, stderr %q; want 4 and %q", code, out, errOut, line)
	}
}

// TestStatusUnreachable: without a daemon, one line on stdout too (the
// summary a probe shows), and exit 3.
func TestStatusUnreachable(t *testing.T) {
	bus := privateBus(t)
	out, errOut, code := runCLI(t, bus, "status")
	if code != 3 || !strings.HasPrefix(out, "drift-monitor unknown: drift-monitor is not running") || strings.Count(out, "\n") != 1 || !strings.Contains(errOut, "not running") {
		t.Errorf("status without a daemon: exit %d, stdout %q, stderr %q; want 3 and one line on each", code, out, errOut)
	}
	out, _, code = runCLI(t, bus, "status", "--format", "json")
	var rep harness.StatusReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != 3 || rep.State != "unknown" {
		t.Errorf("status --format json without a daemon: exit %d, %+v (%v):\n%s", code, rep, err, out)
	}
	out, _, code = runCLI(t, bus, "status", "--format", "summary")
	if code != 3 || !strings.HasPrefix(out, "Unknown: drift-monitor is not running") || strings.Count(out, "\n") != 1 {
		t.Errorf("status --format summary without a daemon: exit %d, stdout %q; want 3 and one line", code, out)
	}
}
