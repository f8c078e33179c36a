// Package blackbox runs the built drift-monitor binary against temporary
// roots: the daemon with its sd_notify socket and its records on stderr, the
// way a test runner sees it outside systemd.
package blackbox

import (
	"bufio"
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/drift-monitor/drift-monitor/test/harness"
)

func TestMain(m *testing.M) { os.Exit(harness.Run(m)) }

type daemonProc struct {
	t      *testing.T
	cmd    *exec.Cmd
	mu     sync.Mutex
	recs   []harness.Record
	lines  []string // recs as written, for failure messages
	notes  []string
	update chan struct{} // pulsed on every new record or datagram
	exited chan error    // receives how it exited, once (see stop)
	done   chan struct{} // closed once it exited
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
		env = []string{harness.NoBus}
	} else {
		harness.GuardBus(t, o.bus)
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
	d := &daemonProc{t: t, update: make(chan struct{}, 1), exited: make(chan error, 1), done: make(chan struct{})}
	argv := append([]string{harness.Binary(t), "daemon", "--root", root}, args...)
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
			d.recs = append(d.recs, harness.PlainRecord(sc.Text()))
			d.lines = append(d.lines, sc.Text())
			d.mu.Unlock()
			d.pulse()
		}
		d.exited <- cmd.Wait()
		close(d.done)
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
	for _, l := range d.lines {
		b.WriteString(l + "\n")
	}
	b.WriteString("-- sd_notify:\n")
	for _, n := range d.notes {
		b.WriteString(strings.ReplaceAll(n, "\n", " | ") + "\n")
	}
	return b.String()
}

// waiting is how the tier waits for the daemon: looking again at every
// record and datagram, and no longer once it has exited.
func (d *daemonProc) waiting(timeout time.Duration) harness.Waiting {
	return harness.Waiting{Timeout: timeout, Wake: d.update, Stop: d.done, Describe: d.log}
}

// wait waits until cond holds, for at most timeout.
func (d *daemonProc) wait(what string, timeout time.Duration, cond func() bool) {
	d.t.Helper()
	harness.Poll(d.t, d.waiting(timeout), what, func() (bool, string) { return cond(), "not yet" })
}

// Records is every record so far, oldest first (harness.Records).
func (d *daemonProc) Records() ([]harness.Record, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.recs), nil
}

// waitRecord waits for a record with the MESSAGE_ID and fields, after the
// first `from` records, and returns it with its index.
func (d *daemonProc) waitRecord(from int, id string, fields map[string]string) (harness.Record, int) {
	d.t.Helper()
	return harness.WaitRecord(d.t, d.waiting(20*time.Second), d, from, id, fields)
}

// records returns the records between from and to matching id and fields.
func (d *daemonProc) records(from, to int, id string, fields map[string]string) []harness.Record {
	rs, _ := d.Records()
	return harness.Select(rs, from, to, id, fields)
}

// line is record i as the daemon wrote it.
func (d *daemonProc) line(i int) string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.lines[i]
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
