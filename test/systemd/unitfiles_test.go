package systemd_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/drift-monitor/drift-monitor/internal/enablement"
	"github.com/drift-monitor/drift-monitor/internal/systemd"
	"github.com/drift-monitor/drift-monitor/test/harness"
	"github.com/drift-monitor/drift-monitor/test/nspawn"
	"github.com/google/go-cmp/cmp"
)

// TestUnitFileStatesFromSystemd runs internal/systemd against a real systemd:
// UnitFileStates answers what `systemctl is-enabled` answers (disabled,
// enabled, masked, not-found), and WatchUnitFiles fires after systemctl enable
// and mask, so that the daemon sees `systemctl disable kubelet` without a rescan.
// The test talks to the container's system bus from the host, through the
// container's root (/proc/INIT/root/run/dbus/system_bus_socket).
func TestUnitFileStatesFromSystemd(t *testing.T) {
	t.Parallel()
	m := nspawn.Boot(t, nspawn.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	addr := fmt.Sprintf("unix:path=/proc/%d/root/run/dbus/system_bus_socket", m.InitPID)
	conn, err := systemd.ConnectWith(ctx, harness.BusDialer(t, addr))
	if err != nil {
		t.Fatalf("connecting to %s's systemd: %v", m.Name, err)
	}
	defer conn.Close()

	const (
		enabled  = "dm-enable.service" // has [Install]; the test enables it
		masked   = "dm-mask.service"   // no unit file; the test masks it
		notFound = "dm-nope.service"
	)
	m.WriteFile(t, "/etc/systemd/system/"+enabled, []byte(
		"[Service]\nType=oneshot\nExecStart=/bin/true\n[Install]\nWantedBy=multi-user.target\n"), 0o644)
	m.MustRun(t, "systemctl", "daemon-reload")

	changed, err := conn.WatchUnitFiles(ctx)
	if err != nil {
		t.Fatalf("WatchUnitFiles: %v", err)
	}
	drain := func() {
		for {
			select {
			case <-changed:
			default:
				return
			}
		}
	}
	waitChanged := func(what string) {
		t.Helper()
		select {
		case _, ok := <-changed:
			if !ok {
				t.Fatalf("after %s: the watch channel was closed", what)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("after %s: WatchUnitFiles did not fire within 30s", what)
		}
	}
	check := func(when string, want map[string]string) {
		t.Helper()
		var units []string
		for u := range want {
			units = append(units, u)
		}
		got, err := conn.UnitFileStates(ctx, units)
		if err != nil {
			t.Fatalf("%s: UnitFileStates: %v", when, err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s: UnitFileStates (-want +got):\n%s", when, diff)
		}
		for u, st := range want {
			if st == enablement.StateNotFound {
				continue // systemd 252's systemctl fails here instead of printing not-found
			}
			out, _, _ := m.Run(ctx, "systemctl", "is-enabled", u) // exit 1 for disabled/masked
			if got := strings.TrimSpace(out); got != st {
				t.Errorf("%s: systemctl is-enabled %s = %q, UnitFileStates said %q", when, u, got, st)
			}
		}
	}

	check("before", map[string]string{enabled: "disabled", masked: enablement.StateNotFound, notFound: enablement.StateNotFound})

	drain()
	m.MustRun(t, "systemctl", "enable", enabled)
	waitChanged("systemctl enable")
	check("after enable", map[string]string{enabled: "enabled"})

	drain()
	m.MustRun(t, "systemctl", "mask", masked)
	waitChanged("systemctl mask")
	check("after mask", map[string]string{masked: "masked", enabled: "enabled", notFound: enablement.StateNotFound})

	drain()
	m.MustRun(t, "systemctl", "disable", enabled)
	waitChanged("systemctl disable")
	check("after disable", map[string]string{enabled: "disabled"})

	if st, err := conn.UnitFileState(notFound); err != nil || st != enablement.StateNotFound {
		t.Errorf("UnitFileState(%s) = %q, %v; want %q", notFound, st, err, enablement.StateNotFound)
	}
}
