package nspawn_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/drift-monitor/drift-monitor/test/nspawn"
)

// TestMachine exercises the harness's API against one booted container.
func TestMachine(t *testing.T) {
	t.Parallel()
	m := nspawn.Boot(t, nspawn.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	t.Run("the hostname is the machine name", func(t *testing.T) {
		if got := strings.TrimSpace(m.MustRun(t, "hostname")); got != m.Name {
			t.Errorf("hostname = %q, want %q", got, m.Name)
		}
	})

	t.Run("Run wraps the exit status", func(t *testing.T) {
		out, errOut, err := m.Run(ctx, "sh", "-c", "echo out; echo err >&2; exit 3")
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 3 {
			t.Fatalf("Run error = %v, want an *exec.ExitError with code 3", err)
		}
		if out != "out\n" || errOut != "err\n" {
			t.Errorf("Run printed %q and %q, want \"out\\n\" and \"err\\n\"", out, errOut)
		}
		if !strings.Contains(err.Error(), m.Name) {
			t.Errorf("Run error %q does not name the machine", err)
		}
	})

	t.Run("Run stops at the context's deadline", func(t *testing.T) {
		short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		defer cancel()
		_, _, err := m.Run(short, "sleep", "30")
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Run error = %v, want context.DeadlineExceeded", err)
		}
	})

	t.Run("RunInput feeds standard input", func(t *testing.T) {
		out, _, err := m.RunInput(ctx, strings.NewReader("line one\nline two\n"), "wc", "-l")
		if err != nil || strings.TrimSpace(out) != "2" {
			t.Errorf("RunInput(wc -l) = %q, %v; want \"2\"", out, err)
		}
	})

	t.Run("the environment is the container's, not the test's", func(t *testing.T) {
		var names []string
		for _, kv := range strings.Split(strings.TrimSpace(m.MustRun(t, "env")), "\n") {
			name, _, _ := strings.Cut(kv, "=")
			names = append(names, name)
		}
		slices.Sort(names)
		want := []string{"HOME", "LANG", "PATH", "SYSTEMD_COLORS", "SYSTEMD_PAGER", "TERM"}
		if !slices.Equal(names, want) {
			t.Errorf("environment inside has %q, want exactly %q", names, want)
		}
	})

	t.Run("WriteFile creates parents and sets the mode", func(t *testing.T) {
		m.WriteFile(t, "/etc/dm-e2e/sub/dir/file.conf", []byte("key=value\n"), 0o750|os.ModeSetuid)
		if got := m.MustRun(t, "stat", "-c", "%a %U:%G %s", "/etc/dm-e2e/sub/dir/file.conf"); got != "4750 root:root 10\n" {
			t.Errorf("stat = %q, want \"4750 root:root 10\"", got)
		}
		if got := m.MustRun(t, "stat", "-c", "%a", "/etc/dm-e2e/sub"); got != "755\n" {
			t.Errorf("parent directory mode = %q, want 755", got)
		}
		m.WriteFile(t, "/etc/dm-e2e/sub/dir/file.conf", []byte("short\n"), 0o600)
		if got := m.MustRun(t, "sh", "-c", `stat -c %a "$1" && cat "$1"`, "sh", "/etc/dm-e2e/sub/dir/file.conf"); got != "600\nshort\n" {
			t.Errorf("rewritten file = %q, want mode 600 and only the new content", got)
		}
	})

	t.Run("WriteFile follows absolute symlinks inside the container", func(t *testing.T) {
		// /tmp exists on both sides; through /proc/INIT/root this write
		// would land in the host's /tmp.
		target := fmt.Sprintf("/tmp/dm-e2e-escape-%d-%d", os.Getpid(), time.Now().UnixNano())
		t.Cleanup(func() { os.Remove(target) })
		m.MustRun(t, "ln", "-s", target, "/etc/dm-e2e-link")
		m.WriteFile(t, "/etc/dm-e2e-link", []byte("inside\n"), 0o644)
		if _, err := os.Lstat(target); err == nil {
			t.Errorf("WriteFile through a symlink in the container wrote %s on the host", target)
		}
		if got := m.MustRun(t, "cat", target); got != "inside\n" {
			t.Errorf("container's %s = %q, want \"inside\\n\"", target, got)
		}
	})

	t.Run("nothing written under /usr reaches the host", func(t *testing.T) {
		p := fmt.Sprintf("/usr/local/dm-e2e-overlay-%d", os.Getpid())
		m.WriteFile(t, p, []byte("x"), 0o644)
		if _, err := os.Lstat(p); err == nil {
			os.Remove(p)
			t.Errorf("a file written at %s inside the container appeared on the host", p)
		}
	})

	t.Run("Journal decodes binary values", func(t *testing.T) {
		m.MustRun(t, "systemd-run", "--wait", "--quiet", "--unit=dm-e2e-journal", "-p", "Type=oneshot",
			"sh", "-c", `echo plain; printf 'bin\001ary\n'`)
		// journald reads a service's output asynchronously: poll.
		var messages []string
		m.WaitFor(t, 30*time.Second, "both lines in dm-e2e-journal's journal", func() (bool, string) {
			out, errOut, err := m.Run(ctx, "journalctl", "-u", "dm-e2e-journal", "-o", "json", "--all", "-q", "--no-pager")
			if err != nil {
				return false, fmt.Sprintf("%v: %s", err, errOut)
			}
			entries, err := nspawn.JournalEntries(out)
			if err != nil {
				return false, err.Error()
			}
			messages = messages[:0]
			for _, e := range entries {
				if s, ok := e["MESSAGE"].(string); ok && e["_SYSTEMD_UNIT"] == "dm-e2e-journal.service" {
					messages = append(messages, s)
				}
			}
			return strings.Contains(strings.Join(messages, "\n"), "plain\nbin\x01ary"), fmt.Sprintf("%q", messages)
		})
		entries := m.Journal(t, "dm-e2e-journal.service")
		found := false
		for _, e := range entries {
			found = found || e["MESSAGE"] == "bin\x01ary"
		}
		if !found {
			t.Errorf("Journal has no MESSAGE \"bin\\x01ary\" among %d entries: %v", len(entries), entries)
		}
	})
}

// TestPoweroffInside checks that a container that a test powers off itself is
// reported by Run as not running, and cleaned up without complaint.
func TestPoweroffInside(t *testing.T) {
	t.Parallel()
	m := nspawn.Boot(t, nspawn.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// The command may lose its container before it answers: only the
	// outcome below matters.
	_, _, _ = m.Run(ctx, "systemctl", "poweroff")
	var last error
	m.WaitFor(t, 30*time.Second, "Run to report the container as not running", func() (bool, string) {
		_, _, last = m.Run(ctx, "true")
		return errors.Is(last, nspawn.ErrNotRunning), fmt.Sprint(last)
	})
	if _, err := os.Stat(fmt.Sprintf("/proc/%d", m.InitPID)); err == nil {
		if b, _ := os.ReadFile(filepath.Join("/proc", fmt.Sprint(m.InitPID), "comm")); strings.TrimSpace(string(b)) == "systemd" {
			t.Errorf("init (host pid %d) still runs after systemd-nspawn exited", m.InitPID)
		}
	}
}
