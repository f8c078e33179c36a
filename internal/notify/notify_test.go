package notify

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"
)

// listen makes a notification socket the way systemd does, points
// NOTIFY_SOCKET at it and returns it.
func listen(t *testing.T, addr string) *net.UnixConn {
	t.Helper()
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: addr, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	t.Setenv("NOTIFY_SOCKET", addr)
	return conn
}

func socketPath(t *testing.T) string { return filepath.Join(t.TempDir(), "notify.sock") }

// next reads one datagram, failing after a deadline instead of hanging.
func next(t *testing.T, conn *net.UnixConn) string {
	t.Helper()
	if err := conn.SetReadDeadline(time.Now().Add(5 * time.Second)); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 8192)
	n, err := conn.Read(buf)
	if err != nil {
		t.Fatalf("reading a notification: %v", err)
	}
	return string(buf[:n])
}

func TestMessages(t *testing.T) {
	tests := []struct {
		name string
		call func(*Notifier) error
		want string
	}{
		{"ready", func(n *Notifier) error { return n.Ready("No drift: watching 42 paths, 6 units") },
			"READY=1\nSTATUS=No drift: watching 42 paths, 6 units"},
		{"status", func(n *Notifier) error { return n.Status("Drift: 2 paths differ (/etc/chrony.conf: content; …)") },
			"STATUS=Drift: 2 paths differ (/etc/chrony.conf: content; …)"},
		{"status with a newline cannot forge an assignment",
			func(n *Notifier) error { return n.Status("Drift: /etc/x\nREADY=1") },
			`STATUS=Drift: /etc/x\nREADY=1`},
		{"ready with control characters", func(n *Notifier) error { return n.Ready("a\x1b[2Jb\tc") },
			"READY=1\nSTATUS=a\\x1b[2Jb\\tc"},
		{"stopping", (*Notifier).Stopping, "STOPPING=1"},
		{"watchdog", (*Notifier).Watchdog, "WATCHDOG=1"},
		{"extend the timeout", func(n *Notifier) error { return n.ExtendTimeout(90 * time.Second) },
			"EXTEND_TIMEOUT_USEC=90000000"},
		{"extend the timeout by less than a microsecond", func(n *Notifier) error { return n.ExtendTimeout(time.Nanosecond) },
			"EXTEND_TIMEOUT_USEC=1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			conn := listen(t, socketPath(t))
			n := New()
			if !n.Enabled() {
				t.Fatal("Enabled() = false with NOTIFY_SOCKET set")
			}
			if err := tt.call(n); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, next(t, conn)); diff != "" {
				t.Errorf("datagram (-want +got):\n%s", diff)
			}
		})
	}
}

func TestReloadingIsOneDatagramWithMonotonicTime(t *testing.T) {
	conn := listen(t, socketPath(t))
	n := New()
	before := monotonicUsec(t)
	if err := n.Reloading(); err != nil {
		t.Fatal(err)
	}
	after := monotonicUsec(t)
	got := next(t, conn)
	m := regexp.MustCompile(`^RELOADING=1\nMONOTONIC_USEC=([0-9]+)\n$`).FindStringSubmatch(got)
	if m == nil {
		t.Fatalf("datagram %q is not RELOADING=1 + MONOTONIC_USEC", got)
	}
	usec, err := strconv.ParseInt(m[1], 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	if usec < before || usec > after {
		t.Errorf("MONOTONIC_USEC=%d, want within [%d, %d] (CLOCK_MONOTONIC around the call)", usec, before, after)
	}
}

func monotonicUsec(t *testing.T) int64 {
	t.Helper()
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		t.Fatal(err)
	}
	return ts.Nano() / 1000
}

func TestAbstractSocket(t *testing.T) {
	// systemd may hand out an abstract socket ("@…"), as it does for
	// services in some setups; Linux only.
	addr := fmt.Sprintf("@drift-monitor-notify-test-%d-%d", os.Getpid(), time.Now().UnixNano())
	conn := listen(t, addr)
	if err := New().Stopping(); err != nil {
		t.Fatal(err)
	}
	if got := next(t, conn); got != "STOPPING=1" {
		t.Errorf("got %q, want STOPPING=1", got)
	}
}

func TestWithoutNotifySocketEverythingIsANoOp(t *testing.T) {
	t.Setenv("NOTIFY_SOCKET", "")
	n := New()
	if n.Enabled() {
		t.Error("Enabled() = true without NOTIFY_SOCKET")
	}
	for name, call := range map[string]func() error{
		"Ready":     func() error { return n.Ready("x") },
		"Status":    func() error { return n.Status("x") },
		"Reloading": n.Reloading,
		"Stopping":  n.Stopping,
		"Watchdog":  n.Watchdog,
	} {
		if err := call(); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestSendErrorIsReturned(t *testing.T) {
	t.Setenv("NOTIFY_SOCKET", filepath.Join(t.TempDir(), "nobody-listens"))
	err := New().Status("x")
	if err == nil {
		t.Fatal("Status to a missing socket: no error")
	}
	if !errors.Is(err, syscall.ENOENT) {
		t.Errorf("error %v does not wrap ENOENT", err)
	}
	if !strings.Contains(err.Error(), `"STATUS=x"`) {
		t.Errorf("error %q does not say what was being sent", err)
	}
}

func TestConcurrentUse(t *testing.T) {
	conn := listen(t, socketPath(t))
	n := New()
	const count = 50
	// Read while sending: a unixgram socket queues only
	// net.unix.max_dgram_qlen (10) datagrams before senders block.
	got := make(chan map[string]bool)
	go func() {
		seen := map[string]bool{}
		buf := make([]byte, 8192)
		_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		for len(seen) < count {
			k, err := conn.Read(buf)
			if err != nil {
				break
			}
			seen[string(buf[:k])] = true
		}
		got <- seen
	}()
	var wg sync.WaitGroup
	for i := range count {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := n.Status(fmt.Sprintf("status %d", i)); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if seen := <-got; len(seen) != count {
		t.Errorf("got %d distinct datagrams, want %d", len(seen), count)
	}
}

func TestWatchdogInterval(t *testing.T) {
	pid := strconv.Itoa(os.Getpid())
	tests := []struct {
		name    string
		usec    string
		pid     string
		want    time.Duration
		ok      bool
		wantErr bool
	}{
		{"unset", "", "", 0, false, false},
		{"set, any pid", "20000000", "", 20 * time.Second, true, false},
		{"set, this pid", "3000000", pid, 3 * time.Second, true, false},
		{"set, another pid", "3000000", "1", 0, false, false},
		{"malformed", "soon", "", 0, false, true},
		{"zero", "0", "", 0, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("WATCHDOG_USEC", tt.usec)
			t.Setenv("WATCHDOG_PID", tt.pid)
			n := New()
			got, ok := n.WatchdogInterval()
			if got != tt.want || ok != tt.ok {
				t.Errorf("WatchdogInterval() = %v, %v; want %v, %v", got, ok, tt.want, tt.ok)
			}
			if (n.watchdogErr != nil) != tt.wantErr {
				t.Errorf("watchdogErr = %v, want error: %v", n.watchdogErr, tt.wantErr)
			}
		})
	}
}

func TestStatusText(t *testing.T) {
	long := strings.Repeat("é", MaxStatus) // 2 bytes each
	tests := []struct{ name, in, want string }{
		{"plain", "No drift: watching 42 paths, 6 units", "No drift: watching 42 paths, 6 units"},
		{"newline", "a\nb", `a\nb`},
		{"cr and tab", "a\rb\tc", `a\rb\tc`},
		{"escape", "\x1b]0;pwned\a", `\x1b]0;pwned\a`},
		{"nul", "a\x00b", `a\x00b`},
		{"backslash", `a\nb`, `a\\nb`},
		{"invalid utf-8", "a\xffb", `a\xffb`},
		{"bidi", "a\u202eb", `a\u202eb`},
		{"unicode kept", "Inhibited by my-updater (pid 4711): applying config v42 — ünï",
			"Inhibited by my-updater (pid 4711): applying config v42 — ünï"},
		{"exactly the limit", strings.Repeat("x", MaxStatus), strings.Repeat("x", MaxStatus)},
		{"one over the limit", strings.Repeat("x", MaxStatus+1), strings.Repeat("x", MaxStatus-len("…")) + "…"},
		{"cut at a character boundary", long, strings.Repeat("é", (MaxStatus-len("…"))/2) + "…"},
		{"cut before an escape", strings.Repeat("x", MaxStatus-4) + "\n" + "tail",
			strings.Repeat("x", MaxStatus-4) + "…"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := StatusText(tt.in)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("StatusText(%.40q…) (-want +got):\n%s", tt.in, diff)
			}
			if len(got) > MaxStatus || !utf8.ValidString(got) || strings.ContainsAny(got, "\n\r\x00") {
				t.Errorf("StatusText result is not a short valid line: %d bytes", len(got))
			}
		})
	}
}
