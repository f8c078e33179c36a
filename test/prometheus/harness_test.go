// Package prometheus is the Prometheus tier: the shipped alert rules under
// promtool's unit tests, and the whole chain with the real components on
// loopback — the built drift-monitor daemon (the blackbox way: a temporary
// root, no bus) writing its --metrics-textfile, prometheus-node-exporter's
// textfile collector reading it, Prometheus scraping node_exporter with the
// shipped rules, and Alertmanager notifying a webhook served by the test.
//
// Tests skip with the reason where a component is missing (Debian:
// prometheus, prometheus-node-exporter, prometheus-alertmanager), and fail
// instead when CI=true.
package prometheus

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/drift-monitor/drift-monitor/test/harness"
)

func rulesFile(t testing.TB) string {
	return harness.Repo(t, "packaging/prometheus/drift-monitor.rules.yml")
}

func TestMain(m *testing.M) { os.Exit(harness.Run(m)) }

// freePort returns a port on 127.0.0.1 nobody listens on now. Another
// process may take it before the component binds it; the component then
// fails to start, which the test reports (with its log) rather than hangs.
func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// proc is a component the test started; it is killed (its process group)
// at cleanup, and its output is shown when the test failed.
type proc struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan struct{}
}

func start(t *testing.T, dir, name string, argv ...string) *proc {
	t.Helper()
	p := &proc{name: name, log: filepath.Join(dir, name+".log"), done: make(chan struct{})}
	f, err := os.Create(p.log)
	if err != nil {
		t.Fatal(err)
	}
	p.cmd = exec.Command(argv[0], argv[1:]...)
	p.cmd.Stdout, p.cmd.Stderr = f, f
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		f.Close()
		t.Fatalf("starting %s: %v", name, err)
	}
	go func() { p.cmd.Wait(); f.Close(); close(p.done) }()
	t.Cleanup(func() {
		syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		select {
		case <-p.done:
		case <-time.After(30 * time.Second):
			t.Errorf("%s (pid %d) did not exit after SIGKILL", name, p.cmd.Process.Pid)
		}
		if t.Failed() {
			b, _ := os.ReadFile(p.log)
			t.Logf("-- %s's output:\n%s", name, tail(b, 4000))
		}
	})
	return p
}

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}

// waitFor polls cond until it holds or the deadline (a bound, generous for
// a loaded machine) passes; a component that exited meanwhile ends the wait.
func waitFor(t *testing.T, within time.Duration, what string, cond func() bool, procs ...*proc) {
	t.Helper()
	harness.Poll(t, harness.Waiting{Timeout: within}, what, func() (bool, string) {
		for _, p := range procs {
			if p.exited() {
				t.Fatalf("waiting for %s: %s exited", what, p.name)
			}
		}
		return cond(), "not yet"
	})
}

func addr(port int) string { return "127.0.0.1:" + strconv.Itoa(port) }
