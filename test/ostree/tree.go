package ostree

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
)

// CommitTree commits the tree at dir as it is (its usr/etc with the
// modes, owners and links the test gave it), with the minimal boot files
// of Commit added where dir lacks them, and returns the commit's checksum.
func (h *Host) CommitTree(branch, dir string, opts ...string) string {
	h.t.Helper()
	h.n++
	for p, content := range map[string]string{
		"usr/lib/modules/6.1.0/vmlinuz":       "kernel",
		"usr/lib/modules/6.1.0/initramfs.img": "initramfs",
		"usr/lib/os-release":                  "ID=testos\nVERSION_ID=" + strconv.Itoa(h.n) + "\n",
	} {
		full := filepath.Join(dir, p)
		mkdir(h.t, filepath.Dir(full))
		// Anew, not in place: the tree's file may be a hard link to the
		// host's (BootableTree's usr/lib/os-release).
		if err := os.Remove(full); err != nil && !os.IsNotExist(err) {
			h.t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			h.t.Fatal(err)
		}
	}
	args := []string{"--repo=" + filepath.Join(h.Root, "ostree/repo"), "commit", "--branch=" + branch, "--tree=dir=" + dir, "-s", "test"}
	return h.run(append(args, opts...)...)
}

// ConfigDiff runs `ostree admin config-diff` for the OS's merge
// deployment (the last deployed) and returns its lines, each a letter
// (M, A, D) and the path relative to /etc.
func (h *Host) ConfigDiff() []string {
	h.t.Helper()
	out := h.run("admin", "config-diff", "--sysroot="+h.Root, "--os="+h.OS)
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		if l = strings.TrimRight(l, " "); l != "" {
			lines = append(lines, l)
		}
	}
	return lines
}

// TryDeploy is Deploy for a deployment that may fail: ostree's error, with
// its message, instead of the test's end.
func (h *Host) TryDeploy(ref string) error {
	h.t.Helper()
	cmd := exec.Command("ostree", "admin", "deploy", "--sysroot="+h.Root, "--os="+h.OS, ref)
	cmd.Env = append(os.Environ(), "OSTREE_SYSROOT_DEBUG=mutable-deployments")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%w: %s", err, out)
	}
	return nil
}

// Checkout checks ref out into dir (which must not exist).
func (h *Host) Checkout(ref, dir string) {
	h.t.Helper()
	h.run("--repo="+filepath.Join(h.Root, "ostree/repo"), "checkout", ref, dir)
}

// Layer commits to branch the tree of the commit base with the tree at dir
// laid over it (`ostree commit --tree=ref=BASE --tree=dir=DIR`: dir's
// files replace base's of the same path) and returns the commit's
// checksum. Only dir is read: an image's next version that changes its
// /etc costs what its /etc weighs, not what its /usr does.
func (h *Host) Layer(branch, base, dir string) string {
	h.t.Helper()
	return h.run("--repo="+filepath.Join(h.Root, "ostree/repo"), "commit", "--branch="+branch, "--tree=ref="+base, "--tree=dir="+dir, "-s", "test")
}
