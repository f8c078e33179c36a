package systemd_test

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/drift-monitor/drift-monitor/test/harness"
	"github.com/drift-monitor/drift-monitor/test/nspawn"
)

func TestMain(m *testing.M) { os.Exit(harness.Run(m)) }

const (
	service    = "drift-monitor.service"
	configPath = "/etc/drift-monitor/desired.d/50-test.ign"
	// recordTimeout bounds the wait for a record or a status line the
	// daemon owes after an inotify event or a D-Bus signal: it comes within
	// milliseconds; the margin is for a loaded CI machine.
	recordTimeout = 20 * time.Second
)

// file is a path the test provisions in the container, as Ignition would
// have before the daemon starts.
type file struct {
	path    string
	content string
	mode    fs.FileMode
}

// setup describes a host for bootDaemon.
type setup struct {
	config string // the desired Ignition config, at configPath
	files  []file
	// commands run after the files are written (systemctl enable...), each
	// through sh -c.
	commands []string
	// dropIn, when set, is installed as
	// /etc/systemd/system/drift-monitor.service.d/test.conf.
	dropIn string
	// flags, when set, are appended to the unit's ExecStart through that
	// drop-in (which must then be left empty), one word each.
	flags []string
	// busPolicy binds the shipped D-Bus policy where the package installs
	// it, so that the daemon may own its name on the system bus. It is
	// there from boot: dbus-daemon reads it when it starts.
	busPolicy bool
	// race runs the daemon built with -race (harness.RaceBinary).
	race bool
	// bind are host directories bound read-write into the container
	// (a scratch ext4, say), there from boot.
	bind []nspawn.Mount
	// longStart: the daemon's start loads a config that takes long to
	// parse, longer than a command's bound on a loaded machine; the
	// restart may take until near the test's deadline (untilDeadline).
	longStart bool
}

// busPolicyName is the policy file, in packaging/ and in
// /usr/share/dbus-1/system.d/.
const busPolicyName = "org.driftmonitor.DriftMonitor1.conf"

// host is a booted container whose drift-monitor.service runs on a
// provisioned desired state, seen from one test or subtest (see in).
type host struct {
	*machine
	t *testing.T
}

// machine is what the tests and subtests of one container share.
type machine struct {
	*nspawn.Machine
	ctx context.Context
	// inv is the InvocationID of the service's current run: its journal
	// records, and only those, carry it as _SYSTEMD_INVOCATION_ID.
	inv string
}

// in returns h for the subtest t: its failures end t, not the parent (whose
// FailNow must not be called from a subtest).
func (h *host) in(t *testing.T) *host { return &host{h.machine, t} }

// bootDaemon boots a container with the built binary and the shipped unit,
// provisions s, and (re)starts drift-monitor.service. First boot applies the
// presets, so the service may already have started on a bare /etc and
// reported everything missing: restarting it after provisioning gives a run
// of its own, told apart by its invocation id. `systemctl restart` of a
// Type=notify service returns once it sent READY=1, after its first check.
func bootDaemon(t *testing.T, s setup) *host {
	t.Helper()
	// The built binary and the shipped unit (and, if asked for, bus
	// policy), bound read-only where a package would install them.
	binds := daemonBinds(t)
	if s.race {
		binds[0].Src = harness.RaceBinary(t)
	}
	if s.busPolicy {
		binds = append(binds, nspawn.Mount{Src: harness.Repo(t, "packaging/"+busPolicyName), Dst: "/usr/share/dbus-1/system.d/" + busPolicyName})
	}
	if len(s.flags) > 0 {
		if s.dropIn != "" {
			t.Fatal("bootDaemon: setup has both flags and a dropIn")
		}
		for _, f := range s.flags {
			// Written as they are into ExecStart=, where systemd would split
			// or expand these.
			if f == "" || strings.ContainsAny(f, " \t\n\"'\\%$;") {
				t.Fatalf("bootDaemon: flag %q needs quoting in ExecStart=", f)
			}
		}
		s.dropIn = "[Service]\nExecStart=\nExecStart=/usr/bin/drift-monitor daemon " + strings.Join(s.flags, " ") + "\n"
	}
	m := nspawn.Boot(t, nspawn.Options{BindRO: binds, Bind: s.bind})
	h := newHost(t, m)
	t.Cleanup(func() {
		if t.Failed() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			out, _, err := m.Run(ctx, "journalctl", "-u", service, "--no-pager", "-o", "short-monotonic")
			t.Logf("%s: journalctl -u %s (%v):\n%s", m.Name, service, err, out)
		}
	})
	m.WriteFile(t, configPath, []byte(s.config), 0o644)
	for _, f := range s.files {
		m.WriteFile(t, f.path, []byte(f.content), f.mode)
	}
	for _, c := range s.commands {
		m.MustRun(t, "sh", "-c", c)
	}
	if s.dropIn != "" {
		m.WriteFile(t, "/etc/systemd/system/"+service+".d/test.conf", []byte(s.dropIn), 0o644)
		m.MustRun(t, "systemctl", "daemon-reload")
	}
	if s.longStart {
		h.shUntilDeadline(`systemctl restart "$1"`, service)
	} else {
		m.MustRun(t, "systemctl", "restart", service)
	}
	h.inv = h.prop("InvocationID")
	if st := h.prop("ActiveState"); st != "active" || h.inv == "" {
		t.Fatalf("after systemctl restart: ActiveState=%s InvocationID=%q, want active with an invocation", st, h.inv)
	}
	return h
}

// newHost is the booted container m as t's host. Its commands end with the
// test, each bounded by nspawn's Run: a deadline for all of them at once
// would end a long test's commands, however quick, once it passed
// (TestMemoryAfterStormsUnderSystemd, whose storms take minutes on a loaded
// machine, failed so in its third, every command "context deadline
// exceeded").
func newHost(t *testing.T, m *nspawn.Machine) *host {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	return &host{&machine{Machine: m, ctx: ctx}, t}
}

// daemonBinds binds the built binary and the shipped unit where the package
// installs them.
func daemonBinds(t *testing.T) []nspawn.Mount {
	return []nspawn.Mount{
		{Src: harness.Binary(t), Dst: "/usr/bin/drift-monitor"},
		{Src: harness.Repo(t, "units/"+service), Dst: "/usr/lib/systemd/system/" + service},
	}
}

// prop returns a property of drift-monitor.service (systemctl show).
func (h *host) prop(name string) string {
	h.t.Helper()
	return strings.TrimSpace(h.MustRun(h.t, "systemctl", "show", "-p", name, "--value", service))
}

// status is the service's STATUS= line as systemd has it.
func (h *host) status() (string, error) {
	out, errOut, err := h.Run(h.ctx, "systemctl", "show", "-p", "StatusText", "--value", service)
	if err != nil {
		return "", fmt.Errorf("%v: %s", err, errOut)
	}
	return strings.TrimSpace(out), nil
}

// waitStatus waits until systemd's StatusText for the service is want.
func (h *host) waitStatus(want string) {
	h.t.Helper()
	h.WaitFor(h.t, recordTimeout, fmt.Sprintf("StatusText %q", want), func() (bool, string) {
		got, err := h.status()
		if err != nil {
			return false, err.Error()
		}
		return got == want, fmt.Sprintf("StatusText %q", got)
	})
}

// statusShows asserts that `systemctl status` prints the status line.
func (h *host) statusShows(status string) {
	h.t.Helper()
	out := h.MustRun(h.t, "systemctl", "status", "--no-pager", "--full", "--lines=0", service)
	if want := fmt.Sprintf("Status: %q", status); !strings.Contains(out, want) {
		h.t.Errorf("systemctl status has no line %s:\n%s", want, out)
	}
}

// invocationArgs is the journalctl command line for the entries of the
// service's current run: only the daemon's own records carry
// _SYSTEMD_INVOCATION_ID (systemd's about the unit carry INVOCATION_ID).
func (h *host) invocationArgs() []string {
	return []string{"journalctl", "-o", "json", "--all", "-q", "--no-pager", "_SYSTEMD_INVOCATION_ID=" + h.inv}
}

// Records returns the records of the current run, oldest first
// (harness.Records).
func (h *host) Records() ([]harness.Record, error) {
	out, errOut, err := h.Run(h.ctx, h.invocationArgs()...)
	if err != nil {
		return nil, fmt.Errorf("%v: %s", err, errOut)
	}
	es, err := nspawn.JournalEntries(out)
	if err != nil {
		return nil, err
	}
	rs := make([]harness.Record, len(es))
	for i, e := range es {
		rs[i] = harness.JournalRecord(e)
	}
	return rs, nil
}

// mark returns how many records the current run has written so far, once
// journald has stored everything it received: a later waitRecord or
// between(from...) looks only at what came after.
func (h *host) mark() int {
	h.t.Helper()
	h.MustRun(h.t, "journalctl", "--sync")
	rs, err := h.Records()
	if err != nil {
		h.t.Fatal(err)
	}
	return len(rs)
}

// waitRecord waits for a record of the current run with the MESSAGE_ID and
// fields, after the first from records, and returns it with its index.
func (h *host) waitRecord(from int, id string, fields map[string]string) (harness.Record, int) {
	h.t.Helper()
	return h.waitRecordWithin(recordTimeout, from, id, fields)
}

// waitRecordWithin is waitRecord with its own bound.
func (h *host) waitRecordWithin(timeout time.Duration, from int, id string, fields map[string]string) (harness.Record, int) {
	h.t.Helper()
	return harness.WaitRecord(h.t, h.Waiting(timeout), h, from, id, fields)
}

// between returns the records with index in [from, to) that match id and
// fields.
func (h *host) between(from, to int, id string, fields map[string]string) []harness.Record {
	h.t.Helper()
	rs, err := h.Records()
	if err != nil {
		h.t.Fatal(err)
	}
	return harness.Select(rs, from, to, id, fields)
}

// sentinel is the declared file the tests drift on purpose: the daemon
// handles events in order, so once the sentinel's drift record is in the
// journal, a record for an earlier change would be there before it.
const sentinel = "/etc/sentinel"

var sentinelFile = file{sentinel, "s\n", 0o644}

// noDriftSince proves that nothing the test did since mark drifted path:
// it drifts the sentinel, waits for that record, asserts that no drift
// record for path came before it, and restores the sentinel.
func (h *host) noDriftSince(from int, path string) {
	h.t.Helper()
	h.MustRun(h.t, "chmod", "0600", sentinel)
	_, at := h.waitRecord(from, harness.DriftDetected, map[string]string{"DRIFT_PATH": sentinel, "DRIFT_KIND": "mode"})
	if got := h.between(from, at, harness.DriftDetected, map[string]string{"DRIFT_PATH": path}); len(got) > 0 {
		h.t.Errorf("false drift reported for %s: %s", path, got[0])
	}
	m := h.mark()
	h.MustRun(h.t, "chmod", "0644", sentinel)
	h.waitRecord(m, harness.MsgDriftResolved, map[string]string{"DRIFT_PATH": sentinel, "DRIFT_KIND": "mode"})
}

// driftAndResolve writes bad into /etc/etc-file, waits for its drift record,
// puts the declared content back, and waits for the resolution and the
// clean status line: proof that the running daemon watches.
func (h *host) driftAndResolve(bad, clean string) {
	h.t.Helper()
	m := h.mark()
	h.sh(`printf '%s' "$1" >/etc/etc-file`, bad)
	h.waitRecord(m, harness.DriftDetected, map[string]string{"DRIFT_PATH": etcFile})
	m = h.mark()
	h.sh(`printf 'hello world\n' >/etc/etc-file`)
	h.waitRecord(m, harness.MsgDriftResolved, map[string]string{"DRIFT_PATH": etcFile})
	h.waitStatus(clean)
}

// sh runs a shell script inside the container and fails the test unless it
// succeeds.
func (h *host) sh(script string, args ...string) string {
	h.t.Helper()
	return h.MustRun(h.t, append([]string{"sh", "-c", script, "sh"}, args...)...)
}

// shUntilDeadline is sh for a command whose time is the daemon's work on a
// large config: a loaded machine stretches it past any fixed bound, so it
// may take until a minute before the test's deadline (go test -timeout),
// and then fails as sh does, naming the command. Without a deadline it has
// an hour.
func (h *host) shUntilDeadline(script string, args ...string) string {
	h.t.Helper()
	deadline, ok := h.t.Deadline()
	if !ok {
		deadline = time.Now().Add(time.Hour)
	} else {
		deadline = deadline.Add(-time.Minute)
	}
	ctx, cancel := context.WithDeadline(h.ctx, deadline)
	defer cancel()
	return h.MustRunContext(h.t, ctx, append([]string{"sh", "-c", script, "sh"}, args...)...)
}
