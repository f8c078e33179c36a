package image_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"

	"github.com/drift-monitor/drift-monitor/internal/image"
	"github.com/drift-monitor/drift-monitor/internal/ondisk"
	"github.com/drift-monitor/drift-monitor/test/harness"
	"github.com/drift-monitor/drift-monitor/test/ostree"
)

// TestTransientEtcOracle: with etc.transient, /etc is an overlay whose
// lower layer is the deployment's usr/etc and whose upper directory, in
// /run, holds the boot's changes (ostree's otcore-prepare-root.c,
// otcore_mount_etc). The upper directory says some of them in a way only
// CAP_SYS_ADMIN can read: a removed lower file is a whiteout, a lower
// directory removed and made again is an opaque directory (its
// trusted.overlay.opaque xattr; Documentation/filesystems/overlayfs.rst).
// drift-monitor compares the merged /etc with usr/etc instead, which is
// what those mean: this test mounts a real overlay the same way, changes
// the merged /etc in every way the issue names — a directory replaced
// (opaque) and a file removed (a whiteout) among them, both checked in the
// upper directory —, and then `check --image` must list, letter for
// letter, what `ostree admin config-diff` lists for the same /etc on disk
// (a copy of the merged view as the deployment's own /etc). The daemon's
// comparison at the event that made the directory again (Tree.DiffAt)
// says the same of it.
func TestTransientEtcOracle(t *testing.T) {
	harness.RequireRoot(t, "mounting an overlay, ostree admin config-diff and changing owners")
	harness.RequireTools(t, "ostree", "cp")
	bin := harness.Binary(t)
	for seed := uint64(1); seed <= 4; seed++ {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) { transientRound(t, bin, seed) })
	}
}

// transientOverlay is where otcore_mount_etc puts the overlay's
// directories ("/run/ostree/transient-etc.XXXXXX"), as this test names it.
const transientOverlay = "/run/ostree/transient-etc.test"

func transientRound(t *testing.T, bin string, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 139))
	tree := t.TempDir()
	randomTree(t, rng, filepath.Join(tree, "usr/etc"), 3)
	// Always there: a directory to replace and a file to remove.
	writeFile(t, filepath.Join(tree, "usr/etc/replaced/a"), "a\n", 0o644)
	writeFile(t, filepath.Join(tree, "usr/etc/replaced/sub/b"), "b\n", 0o644)
	writeFile(t, filepath.Join(tree, "usr/etc/gone.conf"), "gone\n", 0o644)
	h := ostree.NewHost(t)
	h.CommitTree("testos/x86_64", tree)
	dep := filepath.Join(h.DeployDir(), h.Deploy("testos/x86_64"))
	etc := filepath.Join(dep, "etc")

	ovl := filepath.Join(dep, transientOverlay)
	upper := filepath.Join(ovl, "upper")
	mkdir(t, upper, 0o755)
	mkdir(t, filepath.Join(ovl, "work"), 0o755)
	opts := "lowerdir=" + filepath.Join(dep, "usr/etc") + ",upperdir=" + upper + ",workdir=" + filepath.Join(ovl, "work")
	if err := unix.Mount("overlay", etc, "overlay", 0, opts); err != nil {
		harness.Unavailable(t, "mounting an overlay on %s (%s): %v", etc, opts, err)
	}
	mounted := true
	unmount := func() {
		if mounted {
			mounted = false
			if err := unix.Unmount(etc, unix.MNT_DETACH); err != nil {
				t.Errorf("unmounting %s: %v", etc, err)
			}
		}
	}
	t.Cleanup(unmount)
	writeFile(t, filepath.Join(dep, "run/ostree-booted"),
		string(ostree.Dict(ostree.Entry{Key: "transient-etc", Type: "s", Data: []byte(transientOverlay + "\x00")})), 0o644)

	for _, m := range mutations {
		mutate(t, rng, etc, m)
	}
	for range 6 {
		mutate(t, rng, etc, mutations[rng.IntN(len(mutations))])
	}
	must(t, os.RemoveAll(filepath.Join(etc, "replaced")))
	writeFile(t, filepath.Join(etc, "replaced/c"), "c\n", 0o600)
	if err := os.Remove(filepath.Join(etc, "gone.conf")); err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}

	// The overlay said it as the test means: replaced/ opaque, gone.conf
	// a whiteout (a character device 0/0).
	buf := make([]byte, 8)
	if n, err := unix.Getxattr(filepath.Join(upper, "replaced"), "trusted.overlay.opaque", buf); err != nil || string(buf[:n]) != "y" {
		t.Fatalf("the upper directory's replaced/ is not opaque (trusted.overlay.opaque %q, %v)", buf[:max(n, 0)], err)
	}
	var st unix.Stat_t
	if err := unix.Lstat(filepath.Join(upper, "gone.conf"), &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFCHR || st.Rdev != 0 {
		t.Fatalf("the upper directory's gone.conf is not a whiteout (mode %o rdev %d, %v)", st.Mode, st.Rdev, err)
	}

	rep := checkImage(t, bin, dep)
	if rep.Image.Baseline != string(image.KindTransientEtc) || !strings.Contains(rep.Image.Source, upper[len(dep):]) {
		t.Fatalf("check --image's baseline: %s, %q", rep.Image.Baseline, rep.Image.Source)
	}
	letter := map[string]string{"modified": "M", "added": "A", "removed": "D"}
	got := map[string]string{}
	for _, d := range rep.Image.Differences {
		got[d.Path] = letter[d.Change]
		if d.Error != "" {
			t.Errorf("%s: %s", d.Path, d.Error)
		}
	}

	// The daemon's comparison at the event that made the replaced
	// directory again (its IN_CREATE in /etc).
	r, err := ondisk.OpenRoot(dep)
	must(t, err)
	defer r.Close()
	tr := &image.Tree{Root: r, Base: image.UsrEtcDir, Live: image.EtcDir}
	_, cs, err := tr.DiffAt(context.Background(), "/etc/replaced")
	must(t, err)
	at := map[string]string{}
	for _, c := range cs {
		if strings.HasPrefix(c.Path, "/etc/replaced/") {
			at[c.Path] = string(c.Op)
		}
	}
	under := map[string]string{}
	for p, l := range got {
		if strings.HasPrefix(p, "/etc/replaced/") {
			under[p] = l
		}
	}
	if diff := cmp.Diff(under, at); diff != "" {
		t.Errorf("Tree.DiffAt in the opaque directory (-check +DiffAt):\n%s", diff)
	}

	// The same /etc on disk, as the deployment's own: config-diff.
	snap := filepath.Join(t.TempDir(), "etc")
	if out, err := exec.Command("cp", "-a", etc, snap).CombinedOutput(); err != nil {
		t.Fatalf("cp -a %s: %v\n%s", etc, err, out)
	}
	unmount()
	must(t, os.RemoveAll(etc))
	if out, err := exec.Command("cp", "-a", snap, etc).CombinedOutput(); err != nil {
		t.Fatalf("cp -a %s: %v\n%s", snap, err, out)
	}
	want := map[string]string{}
	for _, l := range h.ConfigDiff() {
		want[path.Join("/etc", l[5:])] = l[:1]
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("check --image on the transient /etc (-config-diff of the same /etc on disk +drift-monitor):\n%s", diff)
	}
	for p, l := range map[string]string{"/etc/replaced/a": "D", "/etc/replaced/sub": "D", "/etc/replaced/c": "A", "/etc/gone.conf": "D"} {
		if got[p] != l {
			t.Errorf("%s: %q, want %q", p, got[p], l)
		}
	}
}
