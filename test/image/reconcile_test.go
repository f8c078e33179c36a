package image_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/drift-monitor/drift-monitor/test/harness"
	"github.com/drift-monitor/drift-monitor/test/ostree"
)

// reconcileReport is reconcile's JSON report, as much as the tests read.
type reconcileReport struct {
	Clean    bool
	Repaired []struct {
		Path string
		Done []string
	}
	NotRepaired []struct {
		Path, Problem, Command string
	} `json:"not_repaired"`
}

func reconcileImage(t *testing.T, bin, root string, args ...string) (reconcileReport, int) {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"reconcile", "--image", "--root", root, "--format", "json"}, args...)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	var rep reconcileReport
	if code < 2 {
		if err := json.Unmarshal(out, &rep); err != nil {
			t.Fatalf("reconcile --image: %v\n%s%s", err, out, stderr.String())
		}
	}
	return rep, code
}

// TestReconcileImageOstree: named undeclared changes of a real deployment
// go back to the image's default — a content edit, a mode, a link's
// target, a removed directory with what it held, an added file — so that
// `ostree admin config-diff` no longer lists them; a dry run writes
// nothing; what is declared, runtime-written or an added directory that
// holds files is refused with the reason; and nothing is done unnamed.
func TestReconcileImageOstree(t *testing.T) {
	harness.RequireRoot(t, "ostree admin deploy, writing owners")
	harness.RequireTools(t, "ostree")
	bin := harness.Binary(t)
	h := ostree.NewHost(t)
	tree := filepath.Join(t.TempDir(), "tree")
	writeFile(t, tree+"/usr/etc/ssh/sshd_config", "PermitRootLogin no\n", 0o600)
	writeFile(t, tree+"/usr/etc/motd", "image motd\n", 0o644)
	writeFile(t, tree+"/usr/etc/profile.d/a.sh", "a\n", 0o644)
	writeFile(t, tree+"/usr/etc/profile.d/b.sh", "b\n", 0o644)
	writeFile(t, tree+"/usr/etc/declared.conf", "image\n", 0o644)
	writeFile(t, tree+"/usr/etc/issue", "image issue\n", 0o644)
	must(t, os.Symlink("motd", tree+"/usr/etc/motd.link"))
	h.CommitTree("testos/x86_64", tree)
	root := filepath.Join(h.DeployDir(), h.Deploy("testos/x86_64"))
	writeFile(t, root+"/run/ostree-booted", "", 0o644)
	etc := root + "/etc"
	writeFile(t, etc+"/ssh/sshd_config", "PermitRootLogin yes\n", 0o600)
	must(t, os.Chmod(etc+"/motd", 0o666))
	must(t, os.RemoveAll(etc+"/profile.d"))
	must(t, os.Remove(etc+"/motd.link"))
	must(t, os.Symlink("elsewhere", etc+"/motd.link"))
	writeFile(t, etc+"/sudoers.d/admin", "admin ALL=(ALL) ALL\n", 0o440)
	writeFile(t, etc+"/added.conf", "x\n", 0o644)
	writeFile(t, etc+"/declared.conf", "declared\n", 0o644)
	writeFile(t, etc+"/machine-id", "0123\n", 0o444)
	cfg := filepath.Join(t.TempDir(), "c.ign")
	writeFile(t, cfg, `{"ignition":{"version":"3.4.0"},"storage":{"files":[{"path":"/etc/declared.conf","mode":420,"overwrite":true,"contents":{"source":"data:,declared%0A"}}]}}`, 0o600)
	names := []string{"/etc/ssh/sshd_config", "/etc/motd", "/etc/profile.d", "/etc/motd.link", "/etc/added.conf",
		"/etc/sudoers.d", "/etc/declared.conf", "/etc/machine-id", "/etc/profile.d/a.sh", "/etc/issue"}

	// Nothing is restored unnamed.
	if _, code := reconcileImage(t, bin, root, "--config", cfg); code != 2 {
		t.Errorf("reconcile --image without a path: exit %d, want 2", code)
	}
	// A dry run writes nothing.
	before := h.ConfigDiff()
	rep, code := reconcileImage(t, bin, root, append([]string{"--config", cfg, "--dry-run"}, names...)...)
	// Seven nodes to write or remove (profile.d with its two files:
	// profile.d/a.sh, named too, is restored with it), four refused, as
	// in the real run: every name is judged before anything is written.
	if code != 1 || len(rep.Repaired) != 7 || len(rep.NotRepaired) != 4 {
		t.Errorf("--dry-run: exit %d, %d to restore, %d refused, want 1, 7, 4: %+v", code, len(rep.Repaired), len(rep.NotRepaired), rep)
	}
	if diff := cmp.Diff(before, h.ConfigDiff()); diff != "" {
		t.Errorf("a dry run changed /etc (-before +after):\n%s", diff)
	}

	rep, code = reconcileImage(t, bin, root, append([]string{"--config", cfg}, names...)...)
	refused := map[string]string{}
	for _, a := range rep.NotRepaired {
		refused[a.Path] = a.Problem
	}
	for p, why := range map[string]string{
		"/etc/sudoers.d":     "holds 1 entries",
		"/etc/declared.conf": "a config declares it",
		"/etc/machine-id":    "the OS writes it",
		"/etc/issue":         "not a difference from the image",
	} {
		if !strings.Contains(refused[p], why) {
			t.Errorf("%s: refused %q, want the reason %q", p, refused[p], why)
		}
	}
	if code != 1 || len(refused) != 4 {
		t.Errorf("exit %d, %d refused (%v); want 1, 4", code, len(refused), refused)
	}
	// config-diff, the oracle, lists only what was not restored.
	got := h.ConfigDiff()
	sort.Strings(got)
	want := []string{"A    machine-id", "A    sudoers.d", "A    sudoers.d/admin", "M    declared.conf"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ostree admin config-diff after the restoration (-want +got):\n%s", diff)
	}
	if b, _ := os.ReadFile(etc + "/profile.d/b.sh"); string(b) != "b\n" {
		t.Errorf("profile.d/b.sh restored as %q", b)
	}
}

// TestReconcileImageRPM: on an rpm host a mode and a link target come back
// from the rpm database; a content cannot, and the package to reinstall is
// named.
func TestReconcileImageRPM(t *testing.T) {
	harness.RequireRoot(t, "installing packages with owners")
	harness.RequireTools(t, "rpm", "rpmbuild")
	bin := harness.Binary(t)
	rpms := buildSpecs(t, map[string]string{"imgconf": imgconfSpec, "imgshared": imgsharedSpec})
	root := installRoot(t, rpms)
	d := root + "/etc/imgconf"
	must(t, os.Chmod(d+"/plain", 0o600))
	must(t, os.Remove(d+"/link"))
	must(t, os.Symlink("plain", d+"/link"))
	appendTo(t, d+"/main.conf", "edited\n")

	rep, code := reconcileImage(t, bin, root, "/etc/imgconf/plain", "/etc/imgconf/link", "/etc/imgconf/main.conf")
	if code != 1 || len(rep.NotRepaired) != 1 || rep.NotRepaired[0].Command != "dnf reinstall imgconf" {
		t.Errorf("exit %d, refused %+v; want 1 and main.conf with dnf reinstall imgconf", code, rep.NotRepaired)
	}
	left := rpmVerify(t, root)
	if diff := cmp.Diff(map[string]string{"/etc/imgconf/main.conf": "S.5......"}, left); diff != "" {
		t.Errorf("rpm -Va after the restoration (-want +got):\n%s", diff)
	}
}
