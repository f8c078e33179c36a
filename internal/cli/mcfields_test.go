package cli_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/drift-monitor/drift-monitor/test/ostree"
)

// mcdCertificates is a MachineConfig declaring the kubelet's CA bundle
// (one of the files the MCD's certificate writer owns) and another file;
// the root holds another CA bundle than declared, as the writer leaves it.
func mcdCertificates(t *testing.T) (root, config string) {
	t.Helper()
	root = t.TempDir()
	for p, c := range map[string]string{
		"etc/kubernetes/kubelet-ca.crt": "rotated CA\n",
		"etc/kubernetes/kubeconfig":     "k\n",
	} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(root, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, p), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	config = filepath.Join(t.TempDir(), "mc.yaml")
	mc := "kind: MachineConfig\nspec:\n  config:\n    ignition: {version: 3.4.0}\n    storage:\n      files:\n" +
		"      - {path: /etc/kubernetes/kubelet-ca.crt, mode: 0644, contents: {source: 'data:,installer%20CA%0A'}}\n" +
		"      - {path: /etc/kubernetes/kubeconfig, mode: 0644, contents: {source: 'data:,k%0A'}}\n"
	if err := os.WriteFile(config, []byte(mc), 0o644); err != nil {
		t.Fatal(err)
	}
	return root, config
}

// TestCheckMCDCertificates: the MCD's certificate files are listed as not
// checked, with the reason, in text and JSON; --check-mcd-certificates
// checks them like any other file.
func TestCheckMCDCertificates(t *testing.T) {
	root, config := mcdCertificates(t)
	ctx := context.Background()
	code, out, errs := run(t, ctx, "check", "--no-cache", "--root", root, "--config", config)
	if code != 0 {
		t.Fatalf("check: exit %d, want 0 (clean)\n%s%s", code, out, errs)
	}
	if m, ok := contains(out, `notice: file "/etc/kubernetes/kubelet-ca.crt" is not checked: the machine-config daemon's certificate writer owns it`,
		"No drift: 1 entry matches 1 config file."); !ok {
		t.Errorf("check output lacks %q:\n%s", m, out)
	}

	code, out, _ = run(t, ctx, "check", "--no-cache", "--root", root, "--config", config, "--format", "json")
	var rep struct {
		Clean   bool
		Checked int
		Notices []struct{ Kind, Path, Message string }
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != 0 {
		t.Fatalf("check --format json: exit %d, %v\n%s", code, err, out)
	}
	if !rep.Clean || rep.Checked != 1 || len(rep.Notices) != 1 || rep.Notices[0].Kind != "not-checked" ||
		rep.Notices[0].Path != "/etc/kubernetes/kubelet-ca.crt" || !strings.Contains(rep.Notices[0].Message, "getFilesToIgnore") {
		t.Errorf("report %+v: want clean, one entry checked and a not-checked notice with its reason", rep)
	}

	code, out, _ = run(t, ctx, "check", "--no-cache", "--root", root, "--config", config, "--check-mcd-certificates")
	if m, ok := contains(out, `file "/etc/kubernetes/kubelet-ca.crt"`, "Drift: 1 difference in 2 entries."); code != 1 || !ok {
		t.Errorf("check --check-mcd-certificates: exit %d, output lacks %q:\n%s", code, m, out)
	}
	if strings.Contains(out, "not checked") {
		t.Errorf("check --check-mcd-certificates still lists a file as not checked:\n%s", out)
	}
}

// TestCheckMachineConfigFieldsUnderRoot: `check --root` of an ostree host
// checks the MachineConfig's fields from the root's files.
func TestCheckMachineConfigFieldsUnderRoot(t *testing.T) {
	h := ostree.NewHost(t)
	h.Commit("testos/x86_64")
	dep := h.Deploy("testos/x86_64")
	h.SetOrigin(dep, "[origin]\ncontainer-image-reference=ostree-unverified-registry:quay.io/o/os:4.16\n")
	h.Boot(dep)
	h.WriteFile("/proc/self/smaps", "KernelPageSize: 4 kB\n")
	h.WriteFile("/proc/cmdline", "root=/dev/vda4\n")
	config := filepath.Join(t.TempDir(), "mc.yaml")
	write := func(image string) {
		mc := "kind: MachineConfig\nspec:\n  osImageURL: " + image + "\n  kernelType: default\n  fips: false\n"
		if err := os.WriteFile(config, []byte(mc), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("quay.io/o/os:4.16")
	ctx := context.Background()
	if code, out, errs := run(t, ctx, "check", "--no-cache", "--root", h.Root, "--config", config); code != 0 {
		t.Fatalf("check: exit %d, want clean\n%s%s", code, out, errs)
	}
	write("quay.io/o/os:4.17")
	code, out, _ := run(t, ctx, "check", "--no-cache", "--root", h.Root, "--config", config, "--format", "json")
	var rep struct {
		Drift []struct{ Kind, Entry, Path, Want, Got string }
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != 1 {
		t.Fatalf("check --format json: exit %d, %v\n%s", code, err, out)
	}
	if len(rep.Drift) != 1 || rep.Drift[0].Kind != "os-image" || rep.Drift[0].Entry != "os-image" || rep.Drift[0].Path != "/ostree/deploy" ||
		rep.Drift[0].Want != "quay.io/o/os:4.17" || rep.Drift[0].Got != "quay.io/o/os:4.16" {
		t.Errorf("drift %+v: want the os-image drift alone", rep.Drift)
	}
}

// TestReconcileLeavesMCDCertificates: reconcile leaves the MCD's
// certificate files to it, and writes them with --check-mcd-certificates.
func TestReconcileLeavesMCDCertificates(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("reconcile is root only; the conformance tier runs it as root")
	}
	root, config := mcdCertificates(t)
	ca := filepath.Join(root, "etc/kubernetes/kubelet-ca.crt")
	code, out, errs := run(t, context.Background(), "reconcile", "--root", root, "--config", config)
	if b, _ := os.ReadFile(ca); code != 0 || string(b) != "rotated CA\n" {
		t.Fatalf("reconcile: exit %d, the CA bundle holds %q; want exit 0 and the writer's bundle kept\n%s%s", code, b, out, errs)
	}
	code, out, errs = run(t, context.Background(), "reconcile", "--root", root, "--config", config, "--check-mcd-certificates")
	if b, _ := os.ReadFile(ca); code != 0 || string(b) != "installer CA\n" {
		t.Fatalf("reconcile --check-mcd-certificates: exit %d, the CA bundle holds %q; want the declared one\n%s%s", code, b, out, errs)
	}
}
