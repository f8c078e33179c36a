package image_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/drift-monitor/drift-monitor/test/harness"
)

// TestComposefsBaseline: on bootc's composefs-native backend (a composefs=
// kernel argument, no /usr/etc) the image's /etc lies under the bind mount
// of the deployment's own /etc. check --image as root reads it through a
// copy of the root mount without that bind mount and finds the edit; as
// another user (no CAP_SYS_ADMIN, as the daemon runs) it cannot, and says
// so: a not-checked notice and the reason, never a clean /etc.
func TestComposefsBaseline(t *testing.T) {
	harness.RequireRoot(t, "a bind mount over /etc, the binary run as another user")
	bin := harness.Binary(t)
	dir, err := os.MkdirTemp("", "drift-monitor-composefs-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	must(t, os.Chmod(dir, 0o755))
	root, state := filepath.Join(dir, "root"), filepath.Join(dir, "state")
	writeFile(t, root+"/proc/cmdline", "root=UUID=x rw composefs=0123456789abcdef0123456789abcdef\n", 0o644)
	writeFile(t, root+"/etc/motd", "image motd\n", 0o644)
	writeFile(t, root+"/etc/issue", "image issue\n", 0o644)
	writeFile(t, state+"/motd", "edited motd\n", 0o644)
	writeFile(t, state+"/issue", "image issue\n", 0o644)
	// The binary where the other user can run it.
	raw, err := os.ReadFile(bin)
	must(t, err)
	bin = filepath.Join(dir, "drift-monitor")
	must(t, os.WriteFile(bin, raw, 0o755))
	must(t, unix.Mount(state, root+"/etc", "", unix.MS_BIND, ""))
	t.Cleanup(func() { unix.Unmount(root+"/etc", unix.MNT_DETACH) })

	rep := checkImage(t, bin, root, "--no-cache")
	var got []string
	for _, d := range rep.Image.Differences {
		got = append(got, d.Class+" "+d.Path)
	}
	if rep.Image.Baseline != "bootc-composefs" || rep.Image.Unavailable != "" || strings.Join(got, "; ") != "undeclared /etc/motd" {
		t.Errorf("as root: baseline %q (%s), differences %v; want bootc-composefs, the motd edit undeclared", rep.Image.Baseline, rep.Image.Unavailable, got)
	}

	cmd := exec.Command(bin, "check", "--root", root, "--image", "--no-cache", "--format", "json")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if ee, ok := err.(*exec.ExitError); err != nil && (!ok || ee.ExitCode() > 1) {
		t.Fatalf("check --image as nobody: %v\n%s", err, stderr.String())
	}
	var unpriv report
	if err := json.Unmarshal(out, &unpriv); err != nil {
		t.Fatalf("check --image's report as nobody: %v\n%s", err, out)
	}
	said := false
	for _, n := range unpriv.Notices {
		said = said || n.Kind == "not-checked" && n.Path == "/etc" && strings.Contains(n.Message, "CAP_SYS_ADMIN")
	}
	if !said || !strings.Contains(unpriv.Image.Unavailable, "baseline unavailable") || len(unpriv.Image.Differences) != 0 {
		t.Errorf("as nobody: want the baseline said unavailable (a not-checked notice naming CAP_SYS_ADMIN), got %+v\n%s", unpriv, stderr.String())
	}
}
