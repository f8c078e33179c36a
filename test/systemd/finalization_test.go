package systemd_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/drift-monitor/drift-monitor/test/harness"
	"github.com/drift-monitor/drift-monitor/test/nspawn"
	"github.com/drift-monitor/drift-monitor/test/ostree"
)

// TestFinalizationFailureNotice: on a live ostree host, `check` of a
// MachineConfig with an osImageURL reads this boot's journal of a failed
// ostree-boot-complete.service (real journald, real journalctl) and lists
// the previous boot's failed finalization as a notice. The unit here
// fails as ostree's does when it finds /boot/ostree/finalize-failure.stamp
// (ostree admin boot-complete: "error: ostree-finalize-staged.service
// failed on previous boot: …"); the host is made an ostree host by
// /run/ostree-booted alone, so the booted deployment is not identified
// (an unverifiable notice of its own).
func TestFinalizationFailureNotice(t *testing.T) {
	t.Parallel()
	m := nspawn.Boot(t, nspawn.Options{BindRO: []nspawn.Mount{{Src: harness.Binary(t), Dst: "/usr/bin/drift-monitor"}}})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	m.WriteFile(t, "/run/ostree-booted", nil, 0o644)
	m.WriteFile(t, "/etc/drift-monitor/desired.d/mc.yaml",
		[]byte("kind: MachineConfig\nspec:\n  osImageURL: quay.io/o/os@sha256:"+strings.Repeat("a", 64)+"\n"), 0o600)

	notices := func() []harness.Item {
		t.Helper()
		// --image=off: the host is an ostree host by /run/ostree-booted
		// alone, its /etc no deployment's: what it differs in from a
		// /usr/etc is not this test's.
		out, errOut, err := m.Run(ctx, "drift-monitor", "check", "--format", "json", "--no-cache", "--image=off")
		if ee := (*exec.ExitError)(nil); err != nil && !errors.As(err, &ee) {
			t.Fatalf("drift-monitor check: %v\n%s", err, errOut)
		}
		var rep harness.Report
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatalf("drift-monitor check: %v\n%s%s", err, out, errOut)
		}
		if len(rep.Drift) != 0 {
			t.Errorf("drift %v: want none", rep.Drift)
		}
		return rep.Notices
	}
	kinds := func(ns []harness.Item) string {
		var ks []string
		for _, n := range ns {
			ks = append(ks, n.Kind)
		}
		return strings.Join(ks, ",")
	}
	const reason = "Bootloader write failed: No space left on device"
	unit := fmt.Sprintf(
		"[Unit]\nDescription=OSTree Complete Boot\n[Service]\nType=oneshot\nRemainAfterExit=yes\n"+
			"ExecStart=/bin/sh -c 'echo \"error: ostree-finalize-staged.service failed on previous boot: %s\" >&2; exit 1'\n", reason)
	// The unit is there, not run: its condition (the stamp) did not hold.
	m.WriteFile(t, "/etc/systemd/system/ostree-boot-complete.service", []byte(unit), 0o644)
	m.MustRun(t, "systemctl", "daemon-reload")
	if got := kinds(notices()); got != "unverifiable" {
		t.Fatalf("before the failure: notices %s, want the booted deployment's unverifiable alone", got)
	}
	if _, _, err := m.Run(ctx, "systemctl", "start", "ostree-boot-complete.service"); err == nil {
		t.Fatal("ostree-boot-complete.service started: want it failed")
	}
	var last []harness.Item
	m.WaitFor(t, 30*time.Second, "the finalization notice", func() (bool, string) {
		last = notices()
		for _, n := range last {
			if n.Kind == "finalization-failed" && strings.Contains(n.Message, reason) && n.Unit == "ostree-boot-complete.service" {
				return true, ""
			}
		}
		return false, fmt.Sprintf("notices %+v", last)
	})
}

// TestDaemonFinalizationAndCertificateNotices: the daemon, under its
// shipped unit's sandbox, journals the previous boot's failed ostree
// finalization (journalctl run from the service) and a MachineConfig's
// kubelet CA bundle as not checked, each as a notice, and no drift for
// the CA bundle the certificate writer rewrote.
func TestDaemonFinalizationAndCertificateNotices(t *testing.T) {
	t.Parallel()
	const reason = "Bootloader write failed: No space left on device"
	const ca = "/etc/kubernetes/kubelet-ca.crt"
	unit := fmt.Sprintf("[Unit]\nDescription=OSTree Complete Boot\n[Service]\nType=oneshot\nRemainAfterExit=yes\n"+
		"ExecStart=/bin/sh -c 'echo \"error: ostree-finalize-staged.service failed on previous boot: %s\" >&2; exit 1'\n", reason)
	h := bootDaemon(t, setup{
		config: `{"kind":"MachineConfig","spec":{"osImageURL":"quay.io/o/os@sha256:` + strings.Repeat("a", 64) + `",` +
			`"config":{"ignition":{"version":"3.4.0"},"storage":{"files":[` +
			`{"path":"` + ca + `","mode":420,"contents":{"source":"data:,installer%20CA%0A"}}]}}}}`,
		files: []file{{"/run/ostree-booted", "", 0o644}, {"/etc/systemd/system/ostree-boot-complete.service", unit, 0o644},
			{ca, "rotated by the certificate writer\n", 0o644}},
		commands: []string{"systemctl daemon-reload", "! systemctl start ostree-boot-complete.service", "journalctl --sync"},
	})
	r, _ := h.waitRecord(0, harness.MsgNotice, map[string]string{"DRIFT_KIND": "finalization-failed", "DRIFT_UNIT": "ostree-boot-complete.service"})
	if !strings.Contains(r["MESSAGE"], reason) {
		t.Errorf("finalization notice %v: want ostree's error in the message", r)
	}
	_, at := h.waitRecord(0, harness.MsgNotice, map[string]string{"DRIFT_KIND": "not-checked", "DRIFT_PATH": ca})
	if got := h.between(0, at, harness.DriftDetected, map[string]string{"DRIFT_PATH": ca}); len(got) != 0 {
		t.Errorf("the CA bundle the certificate writer owns reported as drift: %v", got)
	}
}

// TestDaemonExtensions: the daemon, under its shipped unit's sandbox
// (/usr read-only, few capabilities), looks an extension's packages up in
// the rpm database with rpm: one installed is clean, one missing is drift.
func TestDaemonExtensions(t *testing.T) {
	t.Parallel()
	rpms := ostree.BuildRPMs(t, "usbguard")
	h := bootDaemon(t, setup{
		config: `{"kind":"MachineConfig","spec":{"extensions":["usbguard","kerberos"],"config":{"ignition":{"version":"3.4.0"}}}}`,
		files:  []file{{"/run/ostree-booted", "", 0o644}},
	})
	b, err := os.ReadFile(rpms[0])
	if err != nil {
		t.Fatal(err)
	}
	h.WriteFile(t, "/tmp/usbguard.rpm", b, 0o644)
	h.MustRun(t, "rpm", "--dbpath", "/usr/share/rpm", "--initdb")
	h.MustRun(t, "rpm", "--dbpath", "/usr/share/rpm", "-i", "--justdb", "--nodeps", "--noscripts", "/tmp/usbguard.rpm")
	m := h.mark()
	h.MustRun(t, "systemctl", "reload", service)
	_, at := h.waitRecord(m, harness.MsgDriftResolved, map[string]string{"DRIFT_KIND": "extension", "DRIFT_PATH": "/var/lib/rpm"})
	if got := h.between(0, at+1, harness.MsgDriftResolved, map[string]string{"DRIFT_KIND": "extension"}); len(got) != 1 ||
		!strings.Contains(got[0]["MESSAGE"], `extension "usbguard"`) {
		t.Errorf("resolved %v: want usbguard's drift alone resolved once installed", got)
	}
	if got := h.between(0, at+1, harness.DriftDetected, map[string]string{"DRIFT_KIND": "extension"}); len(got) != 2 {
		t.Errorf("extension drift %v: want usbguard and kerberos missing before the install", got)
	}
	if st := h.prop("StatusText"); !strings.Contains(st, "extension kerberos") || strings.Contains(st, "usbguard") {
		t.Errorf("status %q: want kerberos' drift alone", st)
	}
	if n := h.between(0, at+1, harness.MsgNotice, map[string]string{"DRIFT_ENTRY": "extension"}); len(n) != 0 {
		t.Errorf("extension notices %v: want none (rpm answered)", n)
	}
}
