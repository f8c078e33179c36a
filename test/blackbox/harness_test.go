// Package blackbox runs the built drift-monitor binary against temporary
// roots: the daemon with its sd_notify socket and its records on stderr, the
// way a test runner sees it outside systemd.
package blackbox

import (
	"bufio"
	"context"
	"fmt"
	"github.com/drift-monitor/drift-monitor/internal/journal"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "dm-blackbox-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	os.Chmod(dir, 0o755) // unprivileged runs of the binary, too
	binary = filepath.Join(dir, "drift-monitor")
	// The digest key the runs make and share (internal/digestkey): a run as
	// root must not make the host's in /var/lib/drift-monitor.
	state := filepath.Join(dir, "state")
	os.Setenv("STATE_DIRECTORY", state)
	build := exec.Command("go", "build", "-o", binary, "github.com/drift-monitor/drift-monitor/cmd/drift-monitor")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building drift-monitor:", err)
		os.Exit(2)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// record is one plain line of the daemon's stderr: LEVEL message KEY=value...
type record struct {
	Level   string
	Message string
	Fields  map[string]string
	Line    string
}

// parseRecord reads one plain line of the daemon's stderr.
func parseRecord(line string) record {
	p := journal.ParsePlain(line)
	return record{Level: p.Level, Message: p.Message, Fields: p.Fields, Line: line}
}

// The MESSAGE_IDs of the records the tests wait for (internal/journal).
const (
	msgReady         = "e8dfcfc985ce42489b66712d946e4a75"
	msgDriftDetected = "d9919dc81c6b4fe685c3babdbad8d8d9"
	msgDriftResolved = "b18cc3fb8eed46159699a7acbb8c0764"
	msgReloaded      = "cf5e743c6b274f0b899d2ddd43d6a0ab"
	msgLoadFailed    = "caa901836f56409eaf593ca3c63f64e7"
	msgExhausted     = "e351ea282f9b47caac4ae2f832c85719"
)

type daemonProc struct {
	t      *testing.T
	cmd    *exec.Cmd
	mu     sync.Mutex
	recs   []record
	notes  []string
	update chan struct{} // pulsed on every new record or datagram
	exited chan error
}

// startDaemon runs `drift-monitor daemon --root ROOT ARGS...` with an
// sd_notify socket of its own, and waits for READY=1.
func startDaemon(t *testing.T, root string, args ...string) *daemonProc {
	t.Helper()
	return startDaemonWith(t, root, daemonOpts{args: args})
}

// daemonOpts: bus is a private bus's address ("" runs without the D-Bus
// API); inhibitDir defaults to a fresh temporary directory — the tier never
// touches the host's /run/drift-monitor nor its system bus.
type daemonOpts struct {
	bus        string
	inhibitDir string
	args       []string
	// prefix runs the binary through another command (prefix..., binary,
	// "daemon", ...), with attr for that command's process.
	prefix []string
	attr   *syscall.SysProcAttr
	// env is added to the daemon's environment.
	env []string
}

func startDaemonWith(t *testing.T, root string, o daemonOpts) *daemonProc {
	t.Helper()
	if o.inhibitDir == "" {
		o.inhibitDir = filepath.Join(t.TempDir(), "inhibit.d")
	}
	args := append([]string{"--inhibit-dir", o.inhibitDir}, o.args...)
	env := []string{"DBUS_SYSTEM_BUS_ADDRESS=" + o.bus}
	if o.bus == "" {
		args = append(args, "--bus=false")
		env = []string{"DBUS_SYSTEM_BUS_ADDRESS=unix:path=/nonexistent/refuse-the-real-system-bus"}
	} else {
		requirePrivateBus(t, o.bus)
	}
	sockDir, err := os.MkdirTemp("", "dm-notify-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(sockDir) })
	sock := filepath.Join(sockDir, "notify")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sock, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	d := &daemonProc{t: t, update: make(chan struct{}, 1), exited: make(chan error, 1)}
	argv := append([]string{binary, "daemon", "--root", root}, args...)
	if len(o.prefix) > 0 {
		argv = append(append([]string(nil), o.prefix...), argv...)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(append(append(os.Environ(), "NOTIFY_SOCKET="+sock), env...), o.env...)
	cmd.SysProcAttr = o.attr
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	d.cmd = cmd
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			d.mu.Lock()
			d.recs = append(d.recs, parseRecord(sc.Text()))
			d.mu.Unlock()
			d.pulse()
		}
		d.exited <- cmd.Wait()
		conn.Close()
	}()
	go func() {
		buf := make([]byte, 64<<10)
		for {
			n, err := conn.Read(buf)
			if err != nil {
				return
			}
			d.mu.Lock()
			d.notes = append(d.notes, string(buf[:n]))
			d.mu.Unlock()
			d.pulse()
		}
	}()
	t.Cleanup(func() {
		if d.cmd.ProcessState == nil {
			d.cmd.Process.Signal(os.Interrupt)
			select {
			case <-d.exited:
			case <-time.After(10 * time.Second):
				d.cmd.Process.Kill()
			}
		}
		if t.Failed() {
			t.Logf("daemon stderr:\n%s", d.log())
		}
	})
	d.waitNotify("READY=1", 30*time.Second)
	return d
}

func (d *daemonProc) pulse() {
	select {
	case d.update <- struct{}{}:
	default:
	}
}

func (d *daemonProc) log() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	var b strings.Builder
	for _, r := range d.recs {
		b.WriteString(r.Line + "\n")
	}
	b.WriteString("-- sd_notify:\n")
	for _, n := range d.notes {
		b.WriteString(strings.ReplaceAll(n, "\n", " | ") + "\n")
	}
	return b.String()
}

// wait polls cond on every update until it holds or the deadline passes.
func (d *daemonProc) wait(what string, timeout time.Duration, cond func() bool) {
	d.t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for !cond() {
		select {
		case <-d.update:
		case err := <-d.exited:
			d.exited <- err
			if !cond() {
				d.t.Fatalf("daemon exited (%v) while waiting for %s\n%s", err, what, d.log())
			}
		case <-deadline.C:
			d.t.Fatalf("timed out after %s waiting for %s\n%s", timeout, what, d.log())
		}
	}
}

// waitRecord waits for a record with the MESSAGE_ID and fields, after the
// first `from` records, and returns it with its index.
func (d *daemonProc) waitRecord(from int, id string, fields map[string]string) (record, int) {
	d.t.Helper()
	var got record
	at := -1
	d.wait(fmt.Sprintf("record %s %v", id, fields), 20*time.Second, func() bool {
		d.mu.Lock()
		defer d.mu.Unlock()
		for i := from; i < len(d.recs); i++ {
			if matches(d.recs[i], id, fields) {
				got, at = d.recs[i], i
				return true
			}
		}
		return false
	})
	return got, at
}

func matches(r record, id string, fields map[string]string) bool {
	if r.Fields["MESSAGE_ID"] != id {
		return false
	}
	for k, v := range fields {
		if r.Fields[k] != v {
			return false
		}
	}
	return true
}

// records returns the records between from and to matching id and fields.
func (d *daemonProc) records(from, to int, id string, fields map[string]string) []record {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []record
	for i := from; i < to && i < len(d.recs); i++ {
		if matches(d.recs[i], id, fields) {
			out = append(out, d.recs[i])
		}
	}
	return out
}

func (d *daemonProc) mark() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.recs)
}

// waitNotify waits for a datagram containing the line.
func (d *daemonProc) waitNotify(line string, timeout time.Duration) {
	d.t.Helper()
	d.wait("sd_notify "+line, timeout, func() bool {
		d.mu.Lock()
		defer d.mu.Unlock()
		for _, n := range d.notes {
			for _, l := range strings.Split(n, "\n") {
				if l == line {
					return true
				}
			}
		}
		return false
	})
}

// status is the last STATUS= sent.
func (d *daemonProc) status() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	for i := len(d.notes) - 1; i >= 0; i-- {
		for _, l := range strings.Split(d.notes[i], "\n") {
			if s, ok := strings.CutPrefix(l, "STATUS="); ok {
				return s
			}
		}
	}
	return ""
}

func (d *daemonProc) waitStatus(want string) {
	d.t.Helper()
	d.wait("STATUS="+want, 20*time.Second, func() bool { return d.status() == want })
}

// fixture is a temporary root with a desired config.
type fixture struct {
	t    *testing.T
	root string
	cfg  string
}

func newFixture(t *testing.T, ignition string) *fixture {
	t.Helper()
	f := &fixture{t: t, root: t.TempDir()}
	os.Chmod(f.root, 0o755)
	f.cfg = filepath.Join(f.root, "etc/drift-monitor/desired.d/50-test.ign")
	f.write("/etc/drift-monitor/desired.d/50-test.ign", ignition, 0o644)
	return f
}

func (f *fixture) host(p string) string { return filepath.Join(f.root, p) }

func (f *fixture) write(p, content string, mode os.FileMode) {
	f.t.Helper()
	if err := os.MkdirAll(filepath.Dir(f.host(p)), 0o755); err != nil {
		f.t.Fatal(err)
	}
	if err := os.WriteFile(f.host(p), []byte(content), mode); err != nil {
		f.t.Fatal(err)
	}
	if err := os.Chmod(f.host(p), mode); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) run(name string, args ...string) {
	f.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
	if err != nil {
		f.t.Fatalf("%s %v: %v\n%s", name, args, err, out)
	}
}
