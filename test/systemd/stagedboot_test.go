package systemd_test

import (
	"strings"
	"testing"

	"github.com/drift-monitor/drift-monitor/test/harness"
	"github.com/drift-monitor/drift-monitor/test/nspawn"
)

// TestStagedDeployMergeLoss stages the image's next version on a booted
// ostree deployment as rpm-ostree and bootc do (`ostree admin deploy
// --stage`: ostree writes /run/ostree/staged-deployment, and
// ostree-finalize-staged.service makes the deployment, /etc merge
// included, at shutdown), with a config that declares a file as the
// booted image has it and the new image changes it
// (machine-config-operator's OCPBUGS-105508). Before the reboot the daemon
// and `check` (the update tool's preflight) say that the merge will
// replace it; after it the merge did, and the declared file's drift
// record says that the OS update's merge replaced it.
func TestStagedDeployMergeLoss(t *testing.T) {
	t.Parallel()
	nspawn.Require(t)
	bin := harness.Binary(t) // built once for the whole tier: not this test's cost
	m := newOstreeMachine(t, bin)
	const declared = "/etc/unchanged.conf" // "one\n" in version 1, "two\n" in version 2
	cfg := `{"ignition":{"version":"3.4.0"},"storage":{"files":[` + sentinelEntry + `,` +
		`{"path":"` + declared + `","mode":420,"overwrite":true,"contents":{"source":"data:,one%0A"}}]}}`
	m.version(1, cfg)
	d1 := m.h.Deploy("testos/x86_64")
	b := m.boot(d1)
	b.dumpOnFailure()
	b.waitRecord(0, harness.MsgImage, map[string]string{"MESSAGE": "Comparing /etc with the booted deployment's /usr/etc"})
	b.waitStatus("No drift: watching 2 paths, 0 units")

	c2 := m.version(2, cfg)
	from := b.mark()
	b.MustRun(t, "env", "OSTREE_SYSROOT_DEBUG=mutable-deployments", "ostree", "admin", "deploy", "--stage", "--os="+m.h.OS, "testos/x86_64")
	if st := b.MustRun(t, "ostree", "admin", "status"); !strings.Contains(st, "staged") {
		t.Fatalf("after deploy --stage, ostree admin status shows no staged deployment:\n%s", st)
	}
	b.MustRun(t, "test", "-s", "/run/ostree/staged-deployment")
	b.waitRecord(from, harness.MsgNotice, map[string]string{"DRIFT_KIND": "merge-loss", "DRIFT_PATH": declared})
	// The preflight: a notice, not drift (the host matches its config now).
	out, _, err := b.Run(b.ctx, "drift-monitor", "check")
	if err != nil || !strings.Contains(out, `the next boot's /etc merge will replace "`+declared+`" with the new image's default`) {
		t.Errorf("check before the reboot (%v) does not predict the merge's loss as a notice:\n%s", err, out)
	}
	if got := b.MustRun(t, "cat", declared); got != "one\n" {
		t.Fatalf("before the reboot %s holds %q", declared, got)
	}

	// The reboot: ostree-finalize-staged.service deploys at shutdown.
	_, _, _ = b.Run(b.ctx, "systemctl", "reboot")
	b.WaitRebooted(t, recordTimeout)
	b = m.boot(m.deploymentOf(c2))
	b.dumpOnFailure()
	if got := b.MustRun(t, "cat", declared); got != "two\n" {
		t.Fatalf("after the staged deployment's merge %s holds %q, want the new image's default, as predicted", declared, got)
	}
	r, _ := b.waitRecord(0, harness.DriftDetected, map[string]string{"DRIFT_PATH": declared, "DRIFT_KIND": "content"})
	if !strings.Contains(r["MESSAGE"], "the OS update's /etc merge replaced it with the new image's default") {
		t.Errorf("the drift record of %s does not say that the OS update's merge replaced it: %s", declared, r["MESSAGE"])
	}
}
