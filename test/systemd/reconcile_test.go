package systemd_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/drift-monitor/drift-monitor/test/harness"
)

// harness.MsgReconciled is MsgReconciled (internal/journal/catalog.go).

const maskedUnit = "dm-masked.service"

// TestReconcileUnitsThroughSystemd proves that `drift-monitor reconcile` on a
// live host repairs a unit's enablement and a mask through systemd
// (EnableUnitFiles over D-Bus, the /dev/null link then daemon-reload) and a
// file's content, that systemd sees both unit changes at once (is-enabled,
// LoadState), that the daemon journals the
// repair (who ran it, what it repaired), and that the daemon reports no
// drift for the transition: the reconcile held an inhibitor while it wrote.
func TestReconcileUnitsThroughSystemd(t *testing.T) {
	t.Parallel()
	h := bootDaemon(t, setup{
		config: fmt.Sprintf(`{"ignition":{"version":"3.4.0"},"storage":{"files":[
 {"path":"/etc/sentinel","mode":420,"contents":{"source":"data:,s%%0A"}},
 {"path":"/etc/etc-file","mode":420,"contents":{"source":"data:,hello%%20world%%0A"}}]},
 "systemd":{"units":[%s,{"name":%q,"mask":true}]}}`, demoUnitJSON, maskedUnit),
		files:    []file{demoUnitFile, sentinelFile, etcFileOK},
		commands: []string{enableDemo, "systemctl mask --quiet " + maskedUnit},
	})
	h.waitStatus("No drift: watching 4 paths, 2 units")
	unitPath, maskPath := "/etc/systemd/system/"+demoUnit, "/etc/systemd/system/"+maskedUnit

	m := h.mark()
	h.MustRun(t, "systemctl", "disable", "--quiet", demoUnit)
	h.MustRun(t, "systemctl", "unmask", "--quiet", maskedUnit)
	h.MustRun(t, "sh", "-c", "echo tampered >"+etcFile)
	h.waitRecord(m, harness.DriftDetected, map[string]string{"DRIFT_PATH": etcFile, "DRIFT_KIND": "content"})
	h.waitRecord(m, harness.DriftDetected, map[string]string{"DRIFT_UNIT": demoUnit, "DRIFT_KIND": "enablement"})
	h.waitRecord(m, harness.DriftDetected, map[string]string{"DRIFT_UNIT": maskedUnit, "DRIFT_KIND": "unmasked"})

	m = h.mark()
	out, errOut, code := h.run("drift-monitor", "reconcile", "--format", "json")
	if code != 0 {
		t.Fatalf("drift-monitor reconcile: exit %d, want 0\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	var rep harness.ReconcileReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("reconcile output is not JSON: %v\n%s", err, out)
	}
	var repaired []string
	for _, a := range rep.Repaired {
		name := a.Unit
		if name == "" {
			name = a.Path
		}
		repaired = append(repaired, a.Entry+" "+name+": "+strings.Join(a.Done, "; "))
	}
	want := []string{"file " + etcFile + ": write the declared content (12 bytes), mode 0644, owner 0:0",
		"mask " + maskedUnit + ": link it to \"/dev/null\"", "enablement " + demoUnit + ": enable it through systemd"}
	if !rep.Clean || strings.Join(repaired, "\n") != strings.Join(want, "\n") {
		t.Errorf("reconcile repaired:\n%s\nwant:\n%s\n(clean %v)", strings.Join(repaired, "\n"), strings.Join(want, "\n"), rep.Clean)
	}

	// systemd itself sees the repair: no daemon-reload was left to the admin.
	if got, _, _ := h.run("systemctl", "is-enabled", demoUnit); strings.TrimSpace(got) != "enabled" {
		t.Errorf("systemctl is-enabled %s = %q, want enabled", demoUnit, got)
	}
	if got, _, _ := h.run("systemctl", "is-enabled", maskedUnit); strings.TrimSpace(got) != "masked" {
		t.Errorf("systemctl is-enabled %s = %q, want masked", maskedUnit, got)
	}
	if got, _, _ := h.run("systemctl", "show", "-P", "LoadState", maskedUnit); strings.TrimSpace(got) != "masked" {
		t.Errorf("systemd's LoadState of %s = %q, want masked (daemon-reload done)", maskedUnit, got)
	}

	r, _ := h.waitRecord(m, harness.MsgReconciled, map[string]string{"INHIBIT_WHO": "drift-monitor reconcile"})
	msg := r["MESSAGE"]
	if b, _, _ := h.run("cat", etcFile); b != "hello world\n" {
		t.Errorf("%s = %q after reconcile", etcFile, b)
	}
	for _, u := range []string{demoUnit, maskedUnit, etcFile} {
		if !strings.Contains(msg, u) {
			t.Errorf("reconciled record %q does not name %s", msg, u)
		}
	}
	if why := r["INHIBIT_WHY"]; !strings.Contains(why, "uid 0") {
		t.Errorf("INHIBIT_WHY = %q, want who ran it (uid 0)", why)
	}
	h.noDriftSince(m, unitPath)
	h.noDriftSince(m, maskPath)
	h.noDriftSince(m, etcFile)
	h.waitStatus("No drift: watching 4 paths, 2 units")
}
