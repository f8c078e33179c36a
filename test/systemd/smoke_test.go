// Package systemd_test is the systemd tier: tests that run against a real
// systemd booted with systemd-nspawn (see package test/nspawn). They skip
// where the tier cannot run, and fail instead when CI=true.
package systemd_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/drift-monitor/drift-monitor/test/nspawn"
)

// systemIsUp fails the test unless the container's systemd reports running
// or degraded.
func systemIsUp(t *testing.T, m *nspawn.Machine) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// Exit status 1 for degraded: the answer is the output.
	out, errOut, err := m.Run(ctx, "systemctl", "is-system-running")
	if state := strings.TrimSpace(out); state != "running" && state != "degraded" {
		t.Errorf("%s: systemctl is-system-running = %q (%v, stderr %q), want running or degraded", m.Name, state, err, errOut)
	}
}

// TestSmoke proves that a booted container offers what the tier relies on:
// a running systemd, journald, the system bus, and host files bound in.
func TestSmoke(t *testing.T) {
	t.Parallel()
	token := fmt.Sprintf("drift-monitor smoke %d", time.Now().UnixNano())
	src := filepath.Join(t.TempDir(), "hello.txt")
	if err := os.WriteFile(src, []byte(token+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	const dst = "/etc/drift-monitor-smoke/hello.txt"
	m := nspawn.Boot(t, nspawn.Options{BindRO: []nspawn.Mount{{Src: src, Dst: dst}}})
	t.Logf("boot took %v", m.BootTime)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	t.Run("systemd is running", func(t *testing.T) {
		systemIsUp(t, m)
		if got := strings.TrimSpace(m.MustRun(t, "systemctl", "is-active", "systemd-journald", "dbus", "systemd-logind")); got != "active\nactive\nactive" {
			t.Errorf("journald, dbus, logind: is-active = %q, want all active", got)
		}
	})

	t.Run("journald answers and records", func(t *testing.T) {
		if out := m.MustRun(t, "journalctl", "-n1", "--no-pager", "-q"); strings.TrimSpace(out) == "" {
			t.Errorf("journalctl -n1 printed nothing")
		}
		m.MustRun(t, "systemd-cat", "-t", "dm-smoke", "echo", token)
		m.WaitFor(t, 30*time.Second, "the token in the journal under the tag dm-smoke", func() (bool, string) {
			out, errOut, err := m.Run(ctx, "journalctl", "-t", "dm-smoke", "-o", "json", "--all", "-q", "--no-pager")
			if err != nil {
				return false, fmt.Sprintf("%v: %s", err, errOut)
			}
			entries, err := nspawn.JournalEntries(out)
			if err != nil {
				return false, err.Error()
			}
			for _, e := range entries {
				if e["MESSAGE"] == token {
					return true, ""
				}
			}
			return false, fmt.Sprintf("%d entries, none with MESSAGE %q", len(entries), token)
		})
	})

	t.Run("the system bus answers", func(t *testing.T) {
		m.MustRun(t, "busctl", "status", "--no-pager")
		names := m.MustRun(t, "busctl", "list", "--no-pager", "--acquired")
		for _, want := range []string{"org.freedesktop.systemd1", "org.freedesktop.login1"} {
			if !strings.Contains(names, want) {
				t.Errorf("busctl list has no %s:\n%s", want, names)
			}
		}
		version := m.MustRun(t, "busctl", "get-property", "org.freedesktop.systemd1", "/org/freedesktop/systemd1",
			"org.freedesktop.systemd1.Manager", "Version")
		if !strings.HasPrefix(version, `s "`) {
			t.Errorf("systemd's Version over D-Bus = %q, want a string", version)
		}
		t.Logf("systemd in the container: %s", strings.TrimSpace(version))
	})

	t.Run("a file bound read-only from the host is visible and read-only", func(t *testing.T) {
		if got := m.MustRun(t, "cat", dst); got != token+"\n" {
			t.Errorf("%s inside = %q, want %q", dst, got, token+"\n")
		}
		_, errOut, err := m.Run(ctx, "sh", "-c", `echo changed >"$1"`, "sh", dst)
		if err == nil || !strings.Contains(errOut, "Read-only file system") {
			t.Errorf("writing %s inside: %v (stderr %q), want a read-only file system error", dst, err, errOut)
		}
		if b, _ := os.ReadFile(src); string(b) != token+"\n" {
			t.Errorf("host file %s changed to %q", src, b)
		}
	})
}

// TestTwoContainersAtOnce boots two containers that run side by side and
// checks that neither sees the other's files, units or processes.
func TestTwoContainersAtOnce(t *testing.T) {
	t.Parallel()
	a := nspawn.Boot(t, nspawn.Options{})
	b := nspawn.Boot(t, nspawn.Options{})
	t.Logf("boot took %v and %v", a.BootTime, b.BootTime)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	systemIsUp(t, a)
	systemIsUp(t, b)
	if a.Name == b.Name {
		t.Fatalf("both containers are called %s", a.Name)
	}
	if ida, idb := a.MustRun(t, "cat", "/etc/machine-id"), b.MustRun(t, "cat", "/etc/machine-id"); ida == idb {
		t.Errorf("both containers have machine-id %s", ida)
	}

	a.WriteFile(t, "/etc/dm-only-in-a", []byte("a\n"), 0o644)
	if _, _, err := b.Run(ctx, "test", "-e", "/etc/dm-only-in-a"); err == nil {
		t.Errorf("a file written in %s is visible in %s", a.Name, b.Name)
	}

	// The same unit name in both: with a shared cgroup each systemd would
	// see the other's process in the unit's cgroup.
	for _, m := range []*nspawn.Machine{a, b} {
		m.MustRun(t, "systemd-run", "--quiet", "--unit=dm-sleep", "sleep", "infinity")
	}
	for _, m := range []*nspawn.Machine{a, b} {
		// systemd-run returns once the unit's process is forked, not once
		// it has exec'ed sleep: until then `systemctl status` shows it as
		// "(sleep)". Wait for the exec, so that the status below shows the
		// process as the test asserts it.
		execed(t, m, "dm-sleep", "sleep", "infinity")
		out, errOut, err := m.Run(ctx, "systemctl", "status", "--no-pager", "--lines=0", "dm-sleep")
		if err != nil || errOut != "" {
			t.Errorf("%s: systemctl status dm-sleep: %v, stderr %q\n%s", m.Name, err, errOut, out)
		}
		if n := strings.Count(out, "sleep infinity"); n != 2 { // the description line and one process
			t.Errorf("%s: systemctl status dm-sleep mentions \"sleep infinity\" %d times, want 2 (one process):\n%s", m.Name, n, out)
		}
	}
	start := time.Now()
	a.MustRun(t, "systemctl", "stop", "dm-sleep")
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("%s: stopping dm-sleep took %v", a.Name, d)
	}
	if got := strings.TrimSpace(b.MustRun(t, "systemctl", "is-active", "dm-sleep")); got != "active" {
		t.Errorf("%s: dm-sleep is %s after stopping it in %s, want active", b.Name, got, a.Name)
	}
}

// execed waits until the main process of unit has exec'ed the command
// name with args (by /proc/PID/cmdline; name is argv[0]'s base name, as
// systemd puts the whole path there).
func execed(t *testing.T, m *nspawn.Machine, unit, name string, args ...string) {
	t.Helper()
	want := append([]string{name}, args...)
	// A bound for a loaded machine; it takes milliseconds.
	m.WaitFor(t, 30*time.Second, fmt.Sprintf("%s's main process to exec %q", unit, want), func() (bool, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		out, errOut, err := m.Run(ctx, "sh", "-c", `pid=$(systemctl show -p MainPID --value "$1") && cat /proc/"$pid"/cmdline`, "sh", unit)
		argv := strings.Split(strings.TrimSuffix(out, "\x00"), "\x00")
		argv[0] = filepath.Base(argv[0])
		return err == nil && slices.Equal(argv, want), fmt.Sprintf("cmdline %q (%v %s)", out, err, errOut)
	})
}
