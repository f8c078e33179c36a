package systemd_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/drift-monitor/drift-monitor/test/harness"
	"github.com/drift-monitor/drift-monitor/test/nspawn"
	"github.com/drift-monitor/drift-monitor/test/ostree"
)

// TestKernelArgsOfTheNextBoot: on a live host whose /boot/loader/entries the
// real ostree wrote, `drift-monitor check` compares the declared kernel
// arguments with the default deployment's entry: an argument only the next
// boot has is a reboot-pending notice (exit 0), one the next boot lacks is
// drift naming the entry (exit 1). The running kernel is the container's
// (the host's) /proc/cmdline, which has neither test argument.
func TestKernelArgsOfTheNextBoot(t *testing.T) {
	t.Parallel()
	sysroot := ostree.Sysroot(t,
		[]string{"--karg=root=/dev/vda4", "--karg=drift_monitor.old=1"},
		[]string{"--karg-delete=drift_monitor.old=1", "--karg-append=drift_monitor.next=1"})
	entries, err := filepath.Glob(filepath.Join(sysroot, "boot/loader/entries/*.conf"))
	if err != nil || len(entries) != 2 {
		t.Fatalf("ostree wrote entries %v (%v), want two", entries, err)
	}
	m := nspawn.Boot(t, nspawn.Options{BindRO: []nspawn.Mount{{Src: harness.Binary(t), Dst: "/usr/bin/drift-monitor"}}})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if cmdline := m.MustRun(t, "cat", "/proc/cmdline"); strings.Contains(cmdline, "drift_monitor.") {
		t.Fatalf("the running kernel's command line %q has a test argument already", cmdline)
	}
	for _, e := range entries {
		b, err := os.ReadFile(e)
		if err != nil {
			t.Fatal(err)
		}
		m.WriteFile(t, "/boot/loader/entries/"+filepath.Base(e), b, 0o644)
	}
	const cfg = "/etc/drift-monitor/desired.d/kargs.ign"
	m.WriteFile(t, cfg, []byte(`{"ignition":{"version":"3.3.0"},"kernelArguments":`+
		`{"shouldExist":["drift_monitor.next=1"],"shouldNotExist":["drift_monitor.old=1"]}}`), 0o600)

	check := func() (int, []harness.Item, []harness.Item) {
		t.Helper()
		out, errOut, err := m.Run(ctx, "drift-monitor", "check", "--format", "json", "--no-cache")
		code := 0
		if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatalf("drift-monitor check: %v\n%s", err, errOut)
		}
		var rep harness.Report
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatalf("drift-monitor check (exit %d): %v\n%s%s", code, err, out, errOut)
		}
		return code, rep.Drift, rep.Notices
	}

	code, drift, notices := check()
	// drift_monitor.old=1 is absent from both: nothing pending for it.
	if code != 0 || len(drift) != 0 || len(notices) != 1 {
		t.Errorf("next boot as declared: exit %d, drift %v, notices %v; want exit 0 and one reboot-pending notice", code, drift, notices)
	}
	for _, n := range notices {
		if n.Kind != "reboot-pending" || !strings.Contains(n.Message, "ostree-2-testos.conf") {
			t.Errorf("notice %+v, want reboot-pending naming the default entry", n)
		}
	}

	// The default deployment's entry loses the argument (as a rollback to
	// the older deployment's arguments would leave it).
	def := "/boot/loader/entries/ostree-2-testos.conf"
	m.MustRun(t, "sed", "-i", "s/ drift_monitor.next=1//", def)
	code, drift, notices = check()
	if len(notices) != 0 {
		t.Errorf("notices %v, want none: the next boot lacks the argument too", notices)
	}
	if code != 1 || len(drift) != 1 || drift[0].Kind != "kernel-argument" || !strings.Contains(drift[0].Message, def) {
		t.Errorf("next boot without drift_monitor.next=1: exit %d, drift %v; want exit 1 and one kernel-argument drift naming %s", code, drift, def)
	}
}
