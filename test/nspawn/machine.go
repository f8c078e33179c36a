package nspawn

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/drift-monitor/drift-monitor/test/harness"
)

// Bounds on every wait the harness does on its own behalf.
const (
	defaultBootTimeout = 60 * time.Second
	shutdownTimeout    = 30 * time.Second // systemctl poweroff until systemd-nspawn exits
	killTimeout        = 10 * time.Second // SIGKILL until systemd-nspawn exits
	cgroupTimeout      = 5 * time.Second  // until the emptied cgroups can be removed
	stateQueryTimeout  = 10 * time.Second // one `systemctl is-system-running`
)

// Mount is a bind mount of a host path into the container.
type Mount struct {
	Src string // absolute path on the host; must exist
	Dst string // absolute path inside the container; created if missing
}

// Options configures Boot. The zero value boots a bare container.
type Options struct {
	// BindRO and Bind are passed as --bind-ro=SRC:DST and --bind=SRC:DST.
	// Bind is read-write: what the container writes there reaches the host.
	BindRO []Mount
	Bind   []Mount

	// InitArgs are appended to systemd's command line after
	// "systemd.firstboot=off systemd.log_color=0", for example
	// "systemd.log_level=debug" or "systemd.unit=multi-user.target".
	InitArgs []string

	// NspawnArgs are extra systemd-nspawn options, placed before "--", for
	// what Options does not cover (for example "--setenv=NAME=VALUE").
	NspawnArgs []string

	// Directory, when set, is the container's root instead of the host's:
	// a tree with a /usr and an /etc of its own (an ostree deployment),
	// booted as it is (-D DIRECTORY, not volatile). What the container
	// writes there stays, as on a host's disk.
	Directory string

	// BootTimeout bounds the whole boot, from starting systemd-nspawn until
	// `systemctl is-system-running` answers running or degraded. Zero
	// means 60s.
	BootTimeout time.Duration
}

// Machine is a booted container. Its fields are set by Boot and must not be
// changed.
type Machine struct {
	Name     string        // machine name and hostname, unique per Boot
	InitPID  int           // the container's PID 1, as a host pid
	LogPath  string        // systemd-nspawn's output and the console, in the test's temp dir
	BootTime time.Duration // from starting systemd-nspawn until the system was up

	cmd     *exec.Cmd
	cg      *cgroups
	exited  chan struct{} // closed when systemd-nspawn has exited
	waitErr error         // systemd-nspawn's exit; read only after exited is closed
}

var machineSeq atomic.Int64

// Boot boots a container, waits until its systemd reports running or degraded,
// and registers a cleanup that shuts it down. It calls Require first, so a
// test on a machine that cannot run the tier is skipped (or, with CI=true,
// failed) here. Boot fails the test with the console log if the container
// does not come up within Options.BootTimeout.
func Boot(t testing.TB, opts Options) *Machine {
	t.Helper()
	Require(t)

	name := fmt.Sprintf("dm-e2e-%d-%d", os.Getpid(), machineSeq.Add(1))
	args, err := nspawnArgs(name, opts)
	if err != nil {
		t.Fatalf("nspawn.Boot: %v", err)
	}
	timeout := cmp.Or(opts.BootTimeout, defaultBootTimeout)

	// The temp dir is created before the cleanup below is registered, so it
	// is removed after it: the log is still there when shutdown reads it.
	m := &Machine{
		Name:    name,
		LogPath: filepath.Join(t.TempDir(), "nspawn.log"),
		exited:  make(chan struct{}),
	}
	logf, err := os.Create(m.LogPath)
	if err != nil {
		t.Fatalf("nspawn.Boot: %v", err)
	}
	defer logf.Close() // systemd-nspawn has its own descriptor once started

	if m.cg, err = newCgroups(name); err != nil {
		t.Fatalf("nspawn.Boot %s: %v", name, err)
	}
	t.Cleanup(func() { m.shutdown(t) })

	m.cmd = nspawnCommand(context.Background(), m.cg, args)
	m.cmd.Stdout, m.cmd.Stderr = logf, logf
	start := time.Now()
	if err := m.cmd.Start(); err != nil {
		m.cmd = nil
		t.Fatalf("nspawn.Boot %s: starting systemd-nspawn: %v", name, err)
	}
	go func() {
		m.waitErr = m.cmd.Wait()
		close(m.exited)
	}()

	deadline := start.Add(timeout)
	res, obs := harness.Await(harness.Waiting{Timeout: time.Until(deadline), Stop: m.exited}, func() (bool, string) {
		pid, obs := findInit(m.cmd.Process.Pid)
		m.InitPID = pid
		return pid != 0, obs
	})
	if res != harness.Held {
		m.bootFailed(t, res, timeout, "the container's init process", obs)
	}

	var state string
	res, obs = harness.Await(harness.Waiting{Timeout: time.Until(deadline), Stop: m.exited}, func() (bool, string) {
		ctx, cancel := context.WithTimeout(context.Background(), stateQueryTimeout)
		defer cancel()
		// is-system-running exits non-zero for every state but "running",
		// degraded included: the answer is what it prints.
		out, errOut, err := m.Run(ctx, "systemctl", "is-system-running")
		state = strings.TrimSpace(out)
		switch state {
		case "running", "degraded", "maintenance": // maintenance: the emergency shell, it will not get better
			return true, state
		}
		return false, fmt.Sprintf("systemctl is-system-running: %q (%v, stderr %q)", state, err, strings.TrimSpace(errOut))
	})
	if res != harness.Held || state == "maintenance" {
		m.bootFailed(t, res, timeout, "systemctl is-system-running to answer running or degraded", obs)
	}
	m.BootTime = time.Since(start)
	t.Logf("%s: booted in %v (init is host pid %d, system %s)", m.Name, m.BootTime.Round(time.Millisecond), m.InitPID, state)
	if state == "degraded" {
		out, _, _ := m.runBounded("systemctl", "--failed", "--no-legend", "--plain")
		t.Logf("%s: failed units:\n%s", m.Name, out)
	}
	return m
}

// nspawnArgs builds systemd-nspawn's command line as in the e2e recipe.
func nspawnArgs(name string, opts Options) ([]string, error) {
	args := []string{"-D", "/", "--volatile=yes", "--overlay=/usr::/usr"}
	if opts.Directory != "" {
		if !filepath.IsAbs(opts.Directory) || strings.Contains(opts.Directory, ":") {
			return nil, fmt.Errorf("the root directory %q is not an absolute path without a colon", opts.Directory)
		}
		args = []string{"-D", opts.Directory}
	}
	args = append(args, "-b", "--register=no", "--keep-unit", "-M", name)
	binds := []struct {
		flag   string
		mounts []Mount
	}{{"--bind-ro", opts.BindRO}, {"--bind", opts.Bind}}
	for _, b := range binds {
		for _, mnt := range b.mounts {
			if err := mnt.check(); err != nil {
				return nil, fmt.Errorf("%s %s:%s: %w", b.flag, mnt.Src, mnt.Dst, err)
			}
			args = append(args, fmt.Sprintf("%s=%s:%s", b.flag, mnt.Src, mnt.Dst))
		}
	}
	args = append(args, opts.NspawnArgs...)
	// systemd.firstboot=off: otherwise systemd-firstboot waits for a keyboard.
	// systemd.log_color=0: the console log is read in test output, not a tty.
	args = append(args, "--", "systemd.firstboot=off", "systemd.log_color=0")
	return append(args, opts.InitArgs...), nil
}

func (mnt Mount) check() error {
	for _, p := range []string{mnt.Src, mnt.Dst} {
		if !filepath.IsAbs(p) {
			return fmt.Errorf("path %q is not absolute", p)
		}
		// systemd-nspawn splits SRC:DST[:OPTIONS] on colons.
		if strings.Contains(p, ":") {
			return fmt.Errorf("path %q contains a colon", p)
		}
	}
	if _, err := os.Stat(mnt.Src); err != nil {
		return fmt.Errorf("bind source: %w", err)
	}
	return nil
}

// moveAndExec is run by /bin/sh with: COUNT PROCS-FILE... COMMAND ARG...
// The shell writes its own pid into each cgroup.procs file and then becomes
// COMMAND with the same pid, so systemd-nspawn starts inside the container's
// cgroups before it creates any of its own.
const moveAndExec = `n=$1; shift
while [ "$n" -gt 0 ]; do echo $$ >"$1" || exit 125; shift; n=$((n-1)); done
exec "$@"`

// nspawnCommand returns the command that starts systemd-nspawn with args in
// the cgroups cg.
func nspawnCommand(ctx context.Context, cg *cgroups, args []string) *exec.Cmd {
	procs := cg.procsFiles()
	a := append([]string{"-c", moveAndExec, "sh", strconv.Itoa(len(procs))}, procs...)
	a = append(a, "systemd-nspawn")
	a = append(a, args...)
	cmd := exec.CommandContext(ctx, "/bin/sh", a...)
	cmd.SysProcAttr = &syscall.SysProcAttr{
		// Its own process group: a ^C meant for `go test` does not reach
		// systemd-nspawn directly, and a SIGKILL can reach all of it.
		Setpgid: true,
		// If the test binary dies without running its cleanups (a -timeout
		// panic, a kill), systemd-nspawn gets SIGTERM and halts the
		// container (seen: "Trying to halt container", then gone within
		// seconds); the next Require removes the cgroups left (removeStale).
		// Best effort: the signal is tied to the OS thread that started
		// systemd-nspawn, and Go ends a thread only when a goroutine locked
		// to it exits, which nothing here does.
		Pdeathsig: syscall.SIGTERM,
	}
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = killTimeout
	return cmd
}

// bootFailed fails the test after a boot that did not reach its goal.
func (m *Machine) bootFailed(t testing.TB, res harness.Outcome, timeout time.Duration, what, last string) {
	t.Helper()
	why := fmt.Sprintf("did not boot within %v: no %s", timeout, what)
	switch res {
	case harness.Stopped:
		why = fmt.Sprintf("systemd-nspawn exited (%v) while waiting for %s", m.exitErr(), what)
	case harness.Held:
		why = fmt.Sprintf("boot ended in %s", last)
	}
	t.Fatalf("nspawn.Boot %s: %s; last observation: %s\n%s", m.Name, why, last, m.logTail(150))
}

// exitErr is how systemd-nspawn exited, or nil while it runs.
func (m *Machine) exitErr() error {
	select {
	case <-m.exited:
		if m.waitErr == nil {
			return errors.New("exit status 0")
		}
		return m.waitErr
	default:
		return nil
	}
}

// logTail returns the last n lines of systemd-nspawn's log with a header.
func (m *Machine) logTail(n int) string {
	b, err := os.ReadFile(m.LogPath)
	if err != nil {
		return fmt.Sprintf("(cannot read the log: %v)", err)
	}
	// The console is a pty: its lines end in "\r\r\n".
	text := strings.ReplaceAll(string(b), "\r", "")
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	header := fmt.Sprintf("--- systemd-nspawn's log %s ---", m.LogPath)
	if len(lines) > n {
		header = fmt.Sprintf("--- last %d of %d lines of systemd-nspawn's log %s ---", n, len(lines), m.LogPath)
		lines = lines[len(lines)-n:]
	}
	return header + "\n" + strings.Join(lines, "\n")
}

// waitExited waits up to d for systemd-nspawn to exit.
func (m *Machine) waitExited(d time.Duration) bool {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-m.exited:
		return true
	case <-timer.C:
		return false
	}
}

// shutdown is the cleanup Boot registers: stop the container, then check that
// it left nothing on the host.
func (m *Machine) shutdown(t testing.TB) {
	if m.cmd != nil {
		m.stop(t)
	}
	if err := m.cg.remove(time.Now().Add(cgroupTimeout)); err != nil {
		t.Errorf("%s: cgroups left on the host: %v", m.Name, err)
	}
	// systemd-nspawn's per-machine mount propagation directory: it removes
	// it when it exits normally, not when it is killed. Only an empty one is
	// removed; anything in it is reported.
	p := filepath.Join("/run/systemd/nspawn/propagate", m.Name)
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("%s: %s left on the host: %v", m.Name, p, err)
	}
}

func (m *Machine) stop(t testing.TB) {
	select {
	case <-m.exited:
		t.Logf("%s: systemd-nspawn had already exited (%v)", m.Name, m.exitErr())
		return
	default:
	}
	if t.Failed() && m.InitPID != 0 {
		m.logDiagnostics(t)
	}
	asked := false
	if m.InitPID != 0 {
		ctx, cancel := context.WithTimeout(context.Background(), stateQueryTimeout)
		_, errOut, err := m.Run(ctx, "systemctl", "poweroff")
		cancel()
		// nsenter can lose its target while the poweroff proceeds: only a
		// refusal while the container still runs means it was not asked.
		asked = err == nil || errors.Is(err, ErrNotRunning)
		if !asked {
			t.Logf("%v (stderr %q); sending SIGTERM to systemd-nspawn instead", err, strings.TrimSpace(errOut))
		}
	}
	if !asked {
		// Not booted far enough to take a poweroff over its bus (or not
		// found at all): systemd-nspawn turns SIGTERM into SIGRTMIN+3 for
		// the container's systemd, which powers off without a bus.
		_ = m.cmd.Process.Signal(syscall.SIGTERM)
	}
	if m.waitExited(shutdownTimeout) {
		return
	}
	t.Logf("%s: still running %v after being asked to power off; killing it\n%s", m.Name, shutdownTimeout, m.logTail(40))
	m.kill()
	if !m.waitExited(killTimeout) {
		t.Errorf("%s: systemd-nspawn (pid %d) still runs %v after SIGKILL; it is left on the host",
			m.Name, m.cmd.Process.Pid, killTimeout)
	}
}

// kill SIGKILLs the container and systemd-nspawn. Killing only
// systemd-nspawn would leave the container running, reparented to the host's
// PID 1; killing the container's PID 1 kills every process in its PID
// namespace.
func (m *Machine) kill() {
	pid := m.cmd.Process.Pid
	for _, p := range namespaceInits(pid) {
		_ = syscall.Kill(p, syscall.SIGKILL)
	}
	_ = syscall.Kill(-pid, syscall.SIGKILL) // the process group made by Setpgid
}

// logDiagnostics logs what helps to understand a failed test: the failed
// units and the end of the container's journal.
func (m *Machine) logDiagnostics(t testing.TB) {
	failed, _, err := m.runBounded("systemctl", "--failed", "--no-legend", "--plain")
	switch {
	case err != nil:
		failed = fmt.Sprintf("(%v)", err)
	case strings.TrimSpace(failed) == "":
		failed = "(none)"
	}
	journal, errOut, err := m.runBounded("journalctl", "-b", "--no-pager", "-n", "100", "-o", "short-monotonic")
	if err != nil {
		journal += fmt.Sprintf("\n(%v: %s)", err, errOut)
	}
	t.Logf("%s: the test failed; failed units:\n%s\n--- last 100 lines of the container's journal ---\n%s",
		m.Name, failed, journal)
}

func exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}
