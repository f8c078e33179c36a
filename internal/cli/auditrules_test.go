package cli_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/drift-monitor/drift-monitor/internal/cli"
)

func TestAuditRules(t *testing.T) {
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "etc"), 0o755)
	os.WriteFile(filepath.Join(root, "etc/motd"), []byte("x"), 0o644)
	cfg := filepath.Join(t.TempDir(), "c.ign")
	os.WriteFile(cfg, []byte(`{"ignition":{"version":"3.4.0"},"storage":{
	  "files":[{"path":"/etc/motd","contents":{"source":"data:,hi"}},
	           {"path":"/etc/app/conf.d/a.conf","contents":{"source":"data:,a"}},
	           {"path":"/etc/a b","contents":{"source":"data:,a"}}],
	  "directories":[{"path":"/etc"}]}}`), 0o644)
	code, stdout, stderr := run(t, context.Background(), "audit-rules", "--root", root, "--config", cfg)
	if code != cli.ExitClean {
		t.Fatalf("exit %d; stderr:\n%s", code, stderr)
	}
	// -F path=, never -w: auditctl -R would make a -w of the directory
	// /etc a recursive watch of all of /etc.
	want := []string{
		"## drift-monitor: attribution of drift to its writers (drift-monitor audit-rules)",
		"-a always,exit -F path=" + root + "/etc -F perm=wa -F key=drift-monitor",
		"-a always,exit -F path=" + root + "/etc/app -F perm=wa -F key=drift-monitor", // the topmost missing component
		"-a always,exit -F path=" + root + "/etc/motd -F perm=wa -F key=drift-monitor",
	}
	if diff := cmp.Diff(want, strings.Split(strings.TrimSpace(stdout), "\n")); diff != "" {
		t.Errorf("rules (-want +got):\n%s", diff)
	}
	if !strings.Contains(stderr, root+"/etc/a b: cannot be written as an auditctl rule") {
		t.Errorf("stderr does not say the path with a space is not covered: %q", stderr)
	}

	// What the exclusions leave alone, in the root's exclude.conf as the
	// daemon reads it, gets no rule.
	os.MkdirAll(filepath.Join(root, "etc/drift-monitor"), 0o755)
	os.WriteFile(filepath.Join(root, "etc/drift-monitor/exclude.conf"), []byte("/etc/motd\n/etc/app\n/etc/a*\n"), 0o644)
	code, stdout, stderr = run(t, context.Background(), "audit-rules", "--root", root, "--config", cfg)
	want = []string{
		"## drift-monitor: attribution of drift to its writers (drift-monitor audit-rules)",
		"-a always,exit -F path=" + root + "/etc -F perm=wa -F key=drift-monitor",
	}
	if diff := cmp.Diff(want, strings.Split(strings.TrimSpace(stdout), "\n")); code != cli.ExitClean || stderr != "" || diff != "" {
		t.Errorf("with exclusions: exit %d, stderr %q, rules (-want +got):\n%s", code, stderr, diff)
	}
	os.WriteFile(filepath.Join(root, "etc/drift-monitor/exclude.conf"), []byte("motd\n"), 0o644)
	code, stdout, stderr = run(t, context.Background(), "audit-rules", "--root", root, "--config", cfg)
	if code != cli.ExitFailed || stdout != "" || !strings.Contains(stderr, "/etc/drift-monitor/exclude.conf:1: pattern") {
		t.Errorf("a bad exclude.conf: exit %d, stdout %q, stderr %q; want 2 naming it", code, stdout, stderr)
	}
}

// TestAuditRulesNeverTreesNorKernel: a MachineConfig's osImageURL,
// kernelType, extensions and fips are checked against the booted
// deployment, /sys, the rpm database and /proc: no rule watches them (a
// rule on /ostree or /var/lib/rpm would audit every object an upgrade
// writes), and a file declared under /proc or /sys gets none either. The
// files the MachineConfig declares are watched as usual.
func TestAuditRulesNeverTreesNorKernel(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{"etc", "ostree/deploy/fedora", "var/lib/rpm", "proc/sys/crypto", "sys/kernel"} {
		os.MkdirAll(filepath.Join(root, d), 0o755)
	}
	cfg := filepath.Join(t.TempDir(), "mc.yaml")
	os.WriteFile(cfg, []byte(`apiVersion: machineconfiguration.openshift.io/v1
kind: MachineConfig
metadata:
  name: 99-worker
spec:
  osImageURL: quay.io/openshift/os@sha256:0000000000000000000000000000000000000000000000000000000000000000
  kernelType: realtime
  extensions: [usbguard]
  fips: true
  kernelArguments: [nosmt]
  config:
    ignition:
      version: 3.2.0
    storage:
      files:
      - path: /etc/motd
        contents:
          source: data:,hi
      - path: /proc/sys/kernel/foo
        contents:
          source: data:,1
      - path: /sys/kernel/bar
        contents:
          source: data:,1
      directories:
      - path: /var/lib/rpm
`), 0o644)
	code, stdout, stderr := run(t, context.Background(), "audit-rules", "--root", root, "--config", cfg)
	if code != cli.ExitClean {
		t.Fatalf("exit %d; stderr:\n%s", code, stderr)
	}
	want := []string{
		"## drift-monitor: attribution of drift to its writers (drift-monitor audit-rules)",
		"-a always,exit -F path=" + root + "/etc/motd -F perm=wa -F key=drift-monitor",
		// declared itself: its own node, not the tree below it
		"-a always,exit -F path=" + root + "/var/lib/rpm -F perm=wa -F key=drift-monitor",
	}
	if diff := cmp.Diff(want, strings.Split(strings.TrimSpace(stdout), "\n")); diff != "" {
		t.Errorf("rules (-want +got):\n%s", diff)
	}
	for _, bad := range []string{"dir=", "-w ", "/ostree", "/proc", "/sys"} {
		if strings.Contains(stdout, bad) {
			t.Errorf("the rules hold %q:\n%s", bad, stdout)
		}
	}
}
