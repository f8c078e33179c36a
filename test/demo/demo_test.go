// Package demo is `make demo`: drift-monitor in a throwaway systemd, on the
// example in example.ign. TestDemo boots a real systemd (test/nspawn: the
// host's /usr, a volatile /), provisions the example's files as Ignition
// would have, restarts the daemon as a unit, drifts files and a unit's
// enablement and restores them, asserting every status line it waits for.
//
// Under `make test` it is a test like the systemd tier's (and fails, with
// CI=true, where it cannot run). With DM_DEMO=1, which `make demo` sets,
// it also prints each step and what the commands show, for a reader.
package demo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/drift-monitor/drift-monitor/test/harness"
	"github.com/drift-monitor/drift-monitor/test/nspawn"
)

func TestMain(m *testing.M) { os.Exit(harness.Run(m)) }

const service = "drift-monitor"

// waitTimeout bounds each wait for the daemon: it answers within a second;
// the margin is for a loaded machine.
const waitTimeout = time.Minute

// demo is the booted example host.
type demo struct {
	*nspawn.Machine
	t    *testing.T
	show bool // DM_DEMO=1: print the story
}

// say prints a step's heading.
func (d *demo) say(format string, args ...any) {
	if d.show {
		fmt.Printf("\n\033[1m### %s\033[0m\n", fmt.Sprintf(format, args...))
	}
}

// print prints what a command showed.
func (d *demo) print(out string) {
	if d.show && out != "" {
		fmt.Print(strings.TrimSuffix(out, "\n") + "\n")
	}
}

// run runs a command inside and returns its output and exit status; it
// fails the test only if the command could not be run.
func (d *demo) run(args ...string) (string, int) {
	d.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, errOut, err := d.Run(ctx, args...)
	var ee *exec.ExitError
	switch {
	case err == nil:
		return out + errOut, 0
	case errors.As(err, &ee):
		return out + errOut, ee.ExitCode()
	}
	d.t.Fatalf("%v\n%s%s", err, out, errOut)
	return "", 0
}

// waitStatus waits until the service's status line starts with prefix.
func (d *demo) waitStatus(prefix string) {
	d.t.Helper()
	var st string
	d.WaitFor(d.t, waitTimeout, fmt.Sprintf("a status line starting %q", prefix), func() (bool, string) {
		out, _ := d.run("systemctl", "show", "-p", "StatusText", "--value", service)
		st = strings.TrimSpace(out)
		return strings.HasPrefix(st, prefix), "StatusText " + st
	})
	d.print("STATUS: " + st)
}

// lines returns the lines of s from the first-th (1-based) to the last-th.
func lines(s string, first, last int) string {
	ls := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	return strings.Join(ls[min(first-1, len(ls)):min(last, len(ls))], "\n")
}

func TestDemo(t *testing.T) {
	bind := func(src, dst string) nspawn.Mount { return nspawn.Mount{Src: src, Dst: dst} }
	const policy = "org.driftmonitor.DriftMonitor1.conf"
	m := nspawn.Boot(t, nspawn.Options{BindRO: []nspawn.Mount{
		bind(harness.Binary(t), "/usr/bin/drift-monitor"),
		bind(harness.Repo(t, "units/drift-monitor.service"), "/usr/lib/systemd/system/drift-monitor.service"),
		bind(harness.Repo(t, "test/demo/example.ign"), "/usr/lib/drift-monitor/desired.d/50-example.ign"),
		bind(harness.Repo(t, "packaging/"+policy), "/usr/share/dbus-1/system.d/"+policy),
		bind(harness.Repo(t, "packaging/drift-monitor.catalog"), "/usr/lib/systemd/catalog/drift-monitor.catalog"),
	}})
	d := &demo{Machine: m, t: t, show: os.Getenv("DM_DEMO") == "1"}
	d.say("booted a throwaway systemd (%s) in %v", m.Name, m.BootTime.Round(time.Millisecond))

	d.say("provisioning the example host (what Ignition would have written)")
	d.MustRun(t, "sh", "-ec", `
  mkdir -p /etc/demo && chmod 755 /etc/demo
  printf "hello world\n" >/etc/etc-file
  printf "server time.example.com iburst\ndriftfile /var/lib/chrony/drift\n" >/etc/chrony.conf
  printf "s3cr3t-token\n" >/etc/demo/secret.token && chmod 600 /etc/demo/secret.token
  ln -sf /etc/chrony.conf /etc/demo/current
  printf "[Unit]\nDescription=Demo\n\n[Service]\nExecStart=/bin/true\nRemainAfterExit=yes\n\n[Install]\nWantedBy=multi-user.target\n" >/etc/systemd/system/demo.service
  systemctl daemon-reload && systemctl enable demo.service 2>/dev/null`)
	if out, code := d.run("drift-monitor", "check"); code != 0 {
		t.Fatalf("drift-monitor check on the provisioned host: exit %d, want 0\n%s", code, out)
	} else {
		d.print(out + "(drift-monitor check: exit 0, no drift)")
	}
	d.MustRun(t, "journalctl", "--update-catalog")

	d.say("systemctl restart drift-monitor")
	// First boot applied the presets, so the service already started before
	// the files were provisioned (and reported them missing): start it
	// afresh. A Type=notify restart returns after the first check.
	d.MustRun(t, "systemctl", "restart", service)
	d.waitStatus("No drift")
	out, _ := d.run("systemctl", "status", service, "--no-pager")
	d.print(lines(out, 1, 12))

	d.say("drift: printf 'not-the-data' > /etc/etc-file; chmod 644 -> 640 on the secret")
	d.MustRun(t, "sh", "-c", "printf 'not-the-data' > /etc/etc-file; chmod 640 /etc/demo/secret.token")
	d.waitStatus("Drift: 2 paths differ")
	out, _ = d.run("systemctl", "status", service, "--no-pager")
	d.print(lines(out, 1, 6))

	d.say("drift-monitor status (asks the daemon over D-Bus; exit 1: drifted)")
	out, code := d.run("drift-monitor", "status")
	if code != 1 {
		t.Errorf("drift-monitor status on a drifted host: exit %d, want 1\n%s", code, out)
	}
	d.print(out)

	d.say("journalctl -x explains a record (the message catalog)")
	out, _ = d.run("journalctl", "-u", service, "-x", "--no-pager", "-n", "4", "DRIFT_MONITOR_RECORD="+harness.DriftDetected)
	if !strings.Contains(out, "Subject: Configuration drift: ") {
		t.Errorf("journalctl -x does not explain the drift records from the catalog:\n%s", out)
	}
	ls := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	d.print(strings.Join(ls[max(len(ls)-14, 0):], "\n"))

	d.say("drift: systemctl disable demo.service (seen through systemd's D-Bus signal)")
	d.MustRun(t, "sh", "-c", "systemctl disable demo.service 2>/dev/null")
	d.waitStatus("Drift: 3 paths differ")

	d.say("restoring everything")
	d.MustRun(t, "sh", "-c", "printf 'hello world\\n' > /etc/etc-file; chmod 600 /etc/demo/secret.token; systemctl enable demo.service 2>/dev/null")
	d.waitStatus("No drift")

	d.say("journalctl -u drift-monitor (this run of the service)")
	inv := strings.TrimSpace(d.MustRun(t, "systemctl", "show", "-p", "InvocationID", "--value", service))
	d.print(d.MustRun(t, "journalctl", "_SYSTEMD_INVOCATION_ID="+inv, "--no-pager", "-o", "short"))

	d.say("one record in full: journalctl -u drift-monitor DRIFT_PATH=/etc/etc-file DRIFT_MONITOR_RECORD=drift-detected -o verbose")
	out = d.MustRun(t, "journalctl", "-u", service, "DRIFT_PATH=/etc/etc-file", "DRIFT_MONITOR_RECORD="+harness.DriftDetected, "--no-pager", "-o", "verbose", "-n", "1")
	fields := regexp.MustCompile(`(?m)^ +(MESSAGE_ID|PRIORITY|DRIFT_[A-Z]+|MESSAGE)=.*$`).FindAllString(out, -1)
	if len(fields) == 0 {
		t.Errorf("no drift record of /etc/etc-file in the journal:\n%s", out)
	}
	d.print(strings.Join(fields, "\n"))

	d.say("drift-monitor check --format json (the update tool's preflight)")
	d.MustRun(t, "sh", "-c", "printf 'x' > /etc/etc-file")
	out, code = d.run("drift-monitor", "check", "--format", "json")
	var rep harness.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != 1 || len(rep.Drift) != 1 || rep.Drift[0].Path != "/etc/etc-file" {
		t.Errorf("drift-monitor check --format json: exit %d (%v), want 1 and one drift of /etc/etc-file:\n%s", code, err, out)
	}
	d.print(out + fmt.Sprintf("(exit %d: drift found)", code))
	d.say("done; the container is thrown away")
}
