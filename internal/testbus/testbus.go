// Package testbus runs a private dbus-daemon for unit tests, on a socket of
// its own that a test can stop and start again, as `systemctl restart dbus`
// does to the system bus. It is for tests only: it needs dbus-daemon on
// PATH, skips the test without it and fails it instead when CI=true
// (test/harness.RequireTools). Its address passes test/harness.GuardBus,
// and its connections are test/harness's: one dial, one guard against the
// machine's real bus. (test/harness.PrivateBus runs a bus that cannot be
// restarted at the same address, which the tests here need.)
package testbus

import (
	"bufio"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/drift-monitor/drift-monitor/test/harness"
	"github.com/godbus/dbus/v5"
)

// Bus is a private session-type dbus-daemon: its default policy lets its
// user own any name and call anything.
type Bus struct {
	t    testing.TB
	sock string
	cmd  *exec.Cmd
}

// New starts a bus; it is stopped when the test ends.
func New(t testing.TB) *Bus {
	t.Helper()
	harness.RequireTools(t, "dbus-daemon")
	b := &Bus{t: t, sock: filepath.Join(t.TempDir(), "bus")}
	t.Cleanup(b.Stop)
	b.Start()
	return b
}

// Addr is the bus's address; it stays the same across Stop and Start.
func (b *Bus) Addr() string { return "unix:path=" + b.sock }

// Start starts the bus (again).
func (b *Bus) Start() {
	b.t.Helper()
	if b.cmd != nil {
		return
	}
	cmd := exec.Command("dbus-daemon", "--session", "--print-address", "--nofork", "--address="+b.Addr())
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.t.Fatal(err)
	}
	b.cmd = cmd
	line := make(chan string, 1)
	go func() {
		l, _ := bufio.NewReader(stdout).ReadString('\n')
		line <- l
	}()
	select {
	case l := <-line:
		if strings.TrimSpace(l) == "" {
			b.t.Fatal("dbus-daemon printed no address")
		}
		harness.GuardBus(b.t, b.Addr())
	case <-time.After(10 * time.Second):
		b.t.Fatal("dbus-daemon did not start within 10s")
	}
}

// Stop kills the bus: its clients lose their connections.
func (b *Bus) Stop() {
	if b.cmd == nil {
		return
	}
	_ = b.cmd.Process.Kill()
	_ = b.cmd.Wait()
	b.cmd = nil
}

// Pause stops the bus process (SIGSTOP): it neither reads nor writes until
// Resume, as a hung dbus-daemon would. Resume is also done when the test
// ends.
func (b *Bus) Pause() {
	b.t.Helper()
	if err := b.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		b.t.Fatal(err)
	}
	b.t.Cleanup(b.Resume)
}

// Resume lets a paused bus go on.
func (b *Bus) Resume() {
	if b.cmd != nil {
		_ = b.cmd.Process.Signal(syscall.SIGCONT)
	}
}

// Dialer returns a function that connects to the bus, authenticated and
// registered (Hello), for code that dials by itself (harness.BusDialer).
func (b *Bus) Dialer() func() (*dbus.Conn, error) {
	b.t.Helper()
	return harness.BusDialer(b.t, b.Addr())
}

// Conn connects to the bus; the connection is closed when the test ends.
func (b *Bus) Conn() *dbus.Conn {
	b.t.Helper()
	return harness.DialBus(b.t, b.Addr())
}
