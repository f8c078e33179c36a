package systemd

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/drift-monitor/drift-monitor/internal/enablement"
	godbus "github.com/godbus/dbus/v5"
	"github.com/google/go-cmp/cmp"
)

// These tests talk to the systemd of the machine they run on. The read-only
// ones run wherever systemd is PID 1; the ones that create, enable and mask
// units also need DRIFT_MONITOR_SYSTEMD_MUTATE=1, which only a throwaway
// machine (the systemd tier's container) should set.

func liveConn(t *testing.T) *Conn {
	t.Helper()
	if !Booted() {
		t.Skip("systemd is not running here (no /run/systemd/system); the systemd tier covers this")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := Connect(ctx)
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	t.Cleanup(c.Close)
	return c
}

func mutating(t *testing.T) *Conn {
	t.Helper()
	c := liveConn(t)
	if os.Getenv("DRIFT_MONITOR_SYSTEMD_MUTATE") != "1" || os.Geteuid() != 0 {
		t.Skip("changes units in /etc/systemd/system: needs root and DRIFT_MONITOR_SYSTEMD_MUTATE=1 (a throwaway machine)")
	}
	return c
}

// systemctl runs systemctl and returns its output; with must, a failure
// fails the test.
func systemctl(t *testing.T, must bool, args ...string) string {
	t.Helper()
	out, err := exec.Command("systemctl", args...).CombinedOutput()
	var ee *exec.ExitError
	if err != nil && (must || !errors.As(err, &ee)) {
		t.Fatalf("systemctl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// TestLiveStatesMatchSystemctl asks for every unit file systemd knows, plus
// an unknown one, and compares each answer with `systemctl is-enabled`.
func TestLiveStatesMatchSystemctl(t *testing.T) {
	c := liveConn(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	files, err := c.sd.ListUnitFilesContext(ctx)
	if err != nil {
		t.Fatal(err)
	}
	units := []string{"drift-monitor-no-such-unit.service"}
	for _, f := range files {
		units = append(units, filepath.Base(f.Path))
	}
	got, err := c.UnitFileStates(ctx, units)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	for _, u := range units {
		w := systemctl(t, false, "is-enabled", u)
		// systemd < 254 fails instead of printing "not-found".
		if strings.HasSuffix(w, ": No such file or directory") {
			w = enablement.StateNotFound
		}
		want[u] = w
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("UnitFileStates vs systemctl is-enabled (-want +got):\n%s", diff)
	}
	one, err := c.UnitFileState("drift-monitor-no-such-unit.service")
	if err != nil || one != enablement.StateNotFound {
		t.Errorf("UnitFileState(unknown) = %q, %v; want %q", one, err, enablement.StateNotFound)
	}
}

func TestLiveInvalidName(t *testing.T) {
	c := liveConn(t)
	if st, err := c.UnitFileState("not a unit"); err == nil {
		t.Errorf("UnitFileState(%q) = %q, want an error", "not a unit", st)
	}
}

func writeUnit(t *testing.T, name, text string) {
	t.Helper()
	p := filepath.Join("/etc/systemd/system", name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		systemctl(t, false, "disable", name)
		os.Remove(p)
		systemctl(t, false, "daemon-reload")
	})
}

// wait receives from ch or fails after a deadline.
func wait(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case _, ok := <-ch:
		if !ok {
			t.Fatalf("%s: watch channel closed", what)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: no notification within 10s", what)
	}
}

// drain empties a coalescing channel so that the next wait sees a new signal.
func drain(ch <-chan struct{}) {
	for {
		select {
		case <-ch:
		default:
			return
		}
	}
}

func TestLiveEnableDisableMaskAreSeen(t *testing.T) {
	c := mutating(t)
	const (
		unit   = "dm-systemd-test.service"
		masked = "dm-systemd-test-masked.service" // no unit file: mask makes one, a link to /dev/null
		alias  = "dm-systemd-test-alias.service"
		tmpl   = "dm-systemd-test@.service"
		inst   = "dm-systemd-test@one.service"
	)
	body := "[Service]\nType=oneshot\nExecStart=/bin/true\n[Install]\nWantedBy=multi-user.target\n"
	writeUnit(t, unit, body)
	writeUnit(t, tmpl, body)
	systemctl(t, true, "daemon-reload")

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	ch, err := c.WatchUnitFiles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	check := func(want map[string]string) {
		t.Helper()
		var names []string
		for n := range want {
			names = append(names, n)
		}
		got, err := c.UnitFileStates(ctx, names)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("UnitFileStates (-want +got):\n%s", diff)
		}
	}
	t.Cleanup(func() { systemctl(t, false, "unmask", masked) })
	check(map[string]string{unit: "disabled", masked: enablement.StateNotFound, tmpl: "disabled", inst: "disabled", "dm-nope.service": enablement.StateNotFound})

	drain(ch)
	systemctl(t, true, "enable", unit)
	wait(t, ch, "systemctl enable")
	check(map[string]string{unit: "enabled"})

	drain(ch)
	systemctl(t, true, "mask", masked)
	wait(t, ch, "systemctl mask")
	check(map[string]string{masked: "masked"})

	drain(ch)
	systemctl(t, true, "enable", inst)
	wait(t, ch, "systemctl enable (instance)")
	check(map[string]string{tmpl: "indirect", inst: "enabled"})

	// An alias made by hand is seen after daemon-reload, not before.
	if err := os.Symlink(filepath.Join("/etc/systemd/system", unit), filepath.Join("/etc/systemd/system", alias)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(filepath.Join("/etc/systemd/system", alias)) })
	drain(ch)
	systemctl(t, true, "daemon-reload")
	wait(t, ch, "daemon-reload")
	check(map[string]string{alias: "alias"})

	drain(ch)
	systemctl(t, true, "disable", unit)
	wait(t, ch, "systemctl disable")
	check(map[string]string{unit: "disabled"})

	cancel()
	select {
	case _, ok := <-ch:
		for ok {
			_, ok = <-ch
		}
	case <-time.After(5 * time.Second):
		t.Fatal("watch channel not closed after ctx was cancelled")
	}
}

func TestLiveStartUnit(t *testing.T) {
	c := mutating(t)
	writeUnit(t, "dm-start-ok.service", "[Service]\nType=oneshot\nExecStart=/bin/true\n")
	writeUnit(t, "dm-start-fail.service", "[Service]\nType=oneshot\nExecStart=/bin/false\n")
	systemctl(t, true, "daemon-reload")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.StartUnit(ctx, "dm-start-ok.service"); err != nil {
		t.Errorf("StartUnit(ok): %v", err)
	}
	err := c.StartUnit(ctx, "dm-start-fail.service")
	var je *JobError
	if !errors.As(err, &je) || je.Result != "failed" {
		t.Errorf("StartUnit(fail) = %v, want a JobError with result failed", err)
	}
	if err := c.StartUnit(ctx, "dm-start-nope.service"); err == nil || errors.As(err, &je) {
		t.Errorf("StartUnit(unknown) = %v, want the D-Bus error (no such unit)", err)
	}
}

func TestDBusErrorName(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"nil", nil, ""},
		{"plain", errors.New("x"), ""},
		{"value", godbus.Error{Name: "org.freedesktop.DBus.Error.FileNotFound"}, "org.freedesktop.DBus.Error.FileNotFound"},
		{"pointer", godbus.NewError("a.b.C", nil), "a.b.C"},
		{"wrapped", errors.Join(errors.New("ctx"), godbus.Error{Name: "a.b.D"}), "a.b.D"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := dbusErrorName(tt.err); got != tt.want {
				t.Errorf("dbusErrorName(%v) = %q, want %q", tt.err, got, tt.want)
			}
		})
	}
}

func TestDialContextGivesUp(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	release := make(chan struct{})
	defer close(release)
	_, err := ConnectWith(ctx, func() (*godbus.Conn, error) {
		<-release
		return nil, errors.New("too late")
	})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("ConnectWith with a hanging dial = %v, want DeadlineExceeded", err)
	}
}
