package systemd_test

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/drift-monitor/drift-monitor/test/harness"
	"github.com/drift-monitor/drift-monitor/test/nspawn"
)

// livePackages are the unit tests that need what only a booted systemd
// gives (a system bus with systemd1 on it, journald's socket, root on a
// throwaway machine that may change units). Everywhere else they skip;
// here they must run, and pass: a skip is a failure.
var livePackages = []struct {
	pkg  string
	run  string   // -test.run
	want []string // each must PASS
	env  []string
}{
	{
		pkg: "./internal/systemd",
		run: "^TestLive",
		want: []string{"TestLiveStatesMatchSystemctl", "TestLiveInvalidName",
			"TestLiveEnableDisableMaskAreSeen", "TestLiveStartUnit"},
		// The container is throwaway: the mutating tests may create, enable
		// and mask units in its /etc/systemd/system.
		env: []string{"DRIFT_MONITOR_SYSTEMD_MUTATE=1"},
	},
	{
		pkg:  "./internal/journal",
		run:  "^(TestJournaldRoundTrip|TestCatalogJournalctl)$",
		want: []string{"TestJournaldRoundTrip", "TestCatalogJournalctl"},
	},
}

var testResult = regexp.MustCompile(`(?m)^\s*--- (PASS|FAIL|SKIP): (\S+)`)

// TestLivePackageTests runs, inside a booted container, the test binaries
// of the packages whose live tests skip on a machine without systemd as
// PID 1, with the race detector on.
func TestLivePackageTests(t *testing.T) {
	t.Parallel()
	var binds []nspawn.Mount
	for i, p := range livePackages {
		bin := harness.TestBinary(t, p.pkg)
		binds = append(binds, nspawn.Mount{Src: bin, Dst: fmt.Sprintf("/usr/local/libexec/dm-live/%d.test", i)})
	}
	m := nspawn.Boot(t, nspawn.Options{BindRO: binds})
	for i, p := range livePackages {
		t.Run(strings.TrimPrefix(p.pkg, "./"), func(t *testing.T) {
			args := append([]string{"env"}, p.env...)
			args = append(args, fmt.Sprintf("/usr/local/libexec/dm-live/%d.test", i), "-test.v", "-test.count=1", "-test.run", p.run)
			out, errOut, err := m.Run(t.Context(), args...)
			if err != nil {
				t.Fatalf("%s: %v\nstdout:\n%s\nstderr:\n%s", p.pkg, err, out, errOut)
			}
			got := map[string]string{}
			for _, r := range testResult.FindAllStringSubmatch(out, -1) {
				got[r[2]] = r[1]
			}
			for _, name := range p.want {
				if got[name] != "PASS" {
					t.Errorf("%s: %s is %q, want PASS\n%s", p.pkg, name, got[name], out)
				}
			}
			for name, res := range got {
				if res != "PASS" {
					t.Errorf("%s: %s: %s\n%s", p.pkg, name, res, out)
				}
			}
		})
	}
}

// TestDaemonUnderTheRaceDetector runs the daemon built with -race under the
// shipped unit (its sandbox, watchdog and notify socket in force) through
// what moves its goroutines at once: drift and its repair, a reload, an
// inhibitor taken and released, a unit disabled and enabled, status over
// the bus. GORACE=halt_on_error=1 makes a race fatal, and the unit would
// restart it: the run must end with no race report and no restart.
func TestDaemonUnderTheRaceDetector(t *testing.T) {
	t.Parallel()
	s := demoHost
	s.race = true
	s.busPolicy = true
	s.dropIn = "[Service]\nEnvironment=GORACE=halt_on_error=1\n"
	h := bootDaemon(t, s)
	const clean = "No drift: watching 3 paths, 1 unit"
	h.waitStatus(clean)

	h.driftAndResolve("not-the-data", clean)

	m := h.mark()
	h.MustRun(t, "systemctl", "disable", "--quiet", demoUnit)
	h.waitRecord(m, harness.DriftDetected, map[string]string{"DRIFT_UNIT": demoUnit})
	m = h.mark()
	h.MustRun(t, "systemctl", "enable", "--quiet", demoUnit)
	h.waitRecord(m, harness.MsgDriftResolved, map[string]string{"DRIFT_UNIT": demoUnit})

	h.MustRun(t, "systemctl", "reload", service)
	h.waitStatus(clean)
	h.MustRun(t, "drift-monitor", "inhibit", "--who", "race-test", "--why", "a transition", "--",
		"sh", "-c", `printf 'x' >/etc/sentinel; printf 's\n' >/etc/sentinel`)
	h.waitStatus(clean)
	if out := h.MustRun(t, "drift-monitor", "status", "--format", "summary"); !strings.HasPrefix(out, "No drift") {
		t.Errorf("drift-monitor status --format summary = %q, want No drift…", out)
	}

	h.MustRun(t, "journalctl", "--sync")
	if out := h.MustRun(t, "journalctl", "-u", service, "--no-pager", "-q", "-o", "cat"); strings.Contains(out, "DATA RACE") {
		t.Errorf("the race detector reported:\n%s", out)
	}
	if n := h.prop("NRestarts"); n != "0" {
		t.Errorf("NRestarts = %s, want 0 (a race halts the daemon)", n)
	}
}
