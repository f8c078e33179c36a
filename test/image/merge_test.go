package image_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/drift-monitor/drift-monitor/internal/image"
	"github.com/drift-monitor/drift-monitor/internal/ondisk"
	"github.com/drift-monitor/drift-monitor/test/harness"
	"github.com/drift-monitor/drift-monitor/test/ostree"
)

// The merge oracle: three real deploys (A, then B over A, then C over B),
// each new deployment's /etc made by ostree's own merge. Before looking at
// it, drift-monitor predicts it from the booted deployment and the staged
// one's /usr/etc: every path's node (type, mode, owner, link target,
// content) must be what ostree then made; and the merge losses `check`
// lists for the declared paths must be exactly the declared attributes the
// merge changed (and the image contents it lost under a declared mode).

// imageMutations are the changes a committed tree can carry (ostree
// commits no FIFO), and the live /etc's in these rounds: none makes a
// file a directory, which fails the deploy when the file was changed
// locally (TestMergeFails proves that case apart).
var imageMutations = []string{"content", "mode", "owner", "symlink retarget", "type change to link", "added file",
	"added directory", "deleted file", "deleted directory"}

// declaredCase is a path the test's config declares, and how.
type declaredCase struct {
	path    string
	content string // "" : no content declared
	mode    os.FileMode
	dir     bool
}

func TestMergeOracle(t *testing.T) {
	harness.RequireRoot(t, "ostree admin deploy, owners and bind mounts")
	harness.RequireTools(t, "ostree", "cp")
	bin := harness.Binary(t)
	for seed := uint64(1); seed <= 6; seed++ {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) { threeDeploys(t, bin, seed) })
	}
}

func threeDeploys(t *testing.T, bin string, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 4))
	h := ostree.NewHost(t)
	const branch = "testos/x86_64"

	// A: a random tree, and the paths whose merge the issue names.
	treeA := filepath.Join(t.TempDir(), "a")
	randomTree(t, rng, filepath.Join(treeA, "usr/etc"), 2)
	etcA := filepath.Join(treeA, "usr/etc")
	writeFile(t, etcA+"/replace.conf", "v1\n", 0o644)   // declared as the image has it: OCPBUGS-105508
	writeFile(t, etcA+"/modeonly.conf", "A\n", 0o644)   // declared mode only
	writeFile(t, etcA+"/resetdir/f", "f\n", 0o644)      // declared directory mode, no child changed
	writeFile(t, etcA+"/keptdir/g", "g\n", 0o644)       // declared directory mode, a child changed
	writeFile(t, etcA+"/edited.conf", "image\n", 0o644) // declared other content: kept
	writeFile(t, etcA+"/same.conf", "same\n", 0o644)    // declared as the image has it, unchanged by B
	writeFile(t, etcA+"/gone.conf", "gone\n", 0o644)    // declared as the image has it, removed by B
	h.CommitTree(branch, treeA)
	depA := h.Deploy(branch)
	rootA := filepath.Join(h.DeployDir(), depA)
	declared := []declaredCase{
		{path: "/etc/replace.conf", content: "v1\n", mode: 0o644},
		{path: "/etc/modeonly.conf", mode: 0o600},
		{path: "/etc/resetdir", mode: 0o700, dir: true},
		{path: "/etc/keptdir", mode: 0o700, dir: true},
		{path: "/etc/edited.conf", content: "declared\n", mode: 0o644},
		{path: "/etc/same.conf", content: "same\n", mode: 0o644},
		{path: "/etc/gone.conf", content: "gone\n", mode: 0o644},
	}
	applyDeclared(t, rootA, declared)
	writeFile(t, rootA+"/etc/keptdir/g", "g changed\n", 0o644)
	for range 6 {
		mutate(t, rng, filepath.Join(rootA, "etc"), imageMutations[rng.IntN(len(imageMutations))])
	}
	cfg := filepath.Join(t.TempDir(), "declared.ign")
	writeFile(t, cfg, declaredConfig(declared), 0o600)

	// B: A with the image's changes.
	treeB := filepath.Join(t.TempDir(), "b")
	run(t, "cp", "-a", treeA, treeB)
	etcB := filepath.Join(treeB, "usr/etc")
	writeFile(t, etcB+"/replace.conf", "v2\n", 0o644)
	writeFile(t, etcB+"/modeonly.conf", "B\n", 0o644)
	must(t, os.Remove(etcB+"/gone.conf"))
	writeFile(t, etcB+"/edited.conf", "image 2\n", 0o644)
	for range 6 {
		mutate(t, rng, etcB, imageMutations[rng.IntN(len(imageMutations))])
	}
	h.CommitTree(branch, treeB)
	depB := h.Deploy(branch)
	rootB := filepath.Join(h.DeployDir(), depB)
	t.Run("A to B", func(t *testing.T) { mergeRound(t, h, bin, rootA, depB, cfg, declared) })

	// After the reboot into B: a declared file the merge replaced (its
	// content was A's default, and B's default is what it has now) says
	// so in its drift, and no other does.
	t.Run("after the reboot into B", func(t *testing.T) {
		unmount := bootInto(t, h, rootB)
		defer unmount()
		rep := checkImage(t, bin, rootB, "--config", cfg)
		want := map[string]bool{}
		for _, d := range declared {
			if d.content == "" || d.dir {
				continue
			}
			rel := strings.TrimPrefix(d.path, "/etc/")
			oldDefault := nodeState(t, rootA, "/usr/etc/"+rel)
			if contentOf(oldDefault) == fmt.Sprintf("%x", sha256.Sum256([]byte(d.content))) && strings.HasPrefix(oldDefault, "100") &&
				nodeState(t, rootB, d.path) == nodeState(t, rootB, "/usr/etc/"+rel) && nodeState(t, rootB, d.path) != oldDefault {
				want[d.path] = true
			}
		}
		got := map[string]bool{}
		for _, d := range rep.Drift {
			if strings.Contains(d.Message, "the OS update's /etc merge replaced it with the new image's default") ||
				strings.Contains(d.Message, "the OS update's /etc merge removed it") {
				got[d.Path] = true
			}
		}
		if !want["/etc/replace.conf"] {
			t.Log("replace.conf is not the OCPBUGS-105508 case in this seed")
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("drift explained by the merge (-the merge's doing +explained):\n%s\ndrift: %+v", diff, rep.Drift)
		}
	})

	// C: over B, whose /etc the admin (or the MCD) puts back as declared.
	applyDeclared(t, rootB, declared)
	for range 6 {
		mutate(t, rng, filepath.Join(rootB, "etc"), imageMutations[rng.IntN(len(imageMutations))])
	}
	treeC := filepath.Join(t.TempDir(), "c")
	run(t, "cp", "-a", treeB, treeC)
	writeFile(t, treeC+"/usr/etc/same.conf", "same, changed in C\n", 0o644)
	for range 8 {
		mutate(t, rng, filepath.Join(treeC, "usr/etc"), imageMutations[rng.IntN(len(imageMutations))])
	}
	h.CommitTree(branch, treeC)
	depC := h.Deploy(branch)
	t.Run("B to C", func(t *testing.T) { mergeRound(t, h, bin, rootB, depC, cfg, declared) })
}

// mergeRound predicts, from the deployment at root taken as booted, the
// merge of the staged deployment dep (already made by ostree), and
// compares with what ostree made.
func mergeRound(t *testing.T, h *ostree.Host, bin, root, dep, cfg string, declared []declaredCase) {
	unmount := bootInto(t, h, root)
	defer unmount()
	h.StageIn(root, dep)
	defer os.Remove(filepath.Join(root, "run/ostree/staged-deployment"))
	newRoot := filepath.Join(h.DeployDir(), dep)

	r, err := ondisk.OpenRoot(root)
	must(t, err)
	defer r.Close()
	m, staged, err := image.StagedMerge(context.Background(), r)
	if err != nil || m == nil || staged != dep {
		t.Fatalf("StagedMerge = %v, %q, %v; want the merge into %s", m, staged, err, dep)
	}
	// Every path of either side: predicted as ostree made it.
	paths := map[string]bool{}
	for _, top := range []string{filepath.Join(root, "etc"), filepath.Join(newRoot, "usr/etc"), filepath.Join(newRoot, "etc")} {
		filepath.Walk(top, func(p string, fi os.FileInfo, err error) error {
			if err == nil && p != top {
				rel, _ := filepath.Rel(top, p)
				paths["/etc/"+rel] = true
			}
			return nil
		})
	}
	checked := 0
	for p := range paths {
		pr := m.Predict(p)
		if pr.How == image.MergeFails {
			t.Errorf("%s: predicted a failing merge, yet ostree admin deploy succeeded", p)
			continue
		}
		want := nodeState(t, newRoot, p)
		got := "absent"
		if pr.Node != nil {
			got = nodeState(t, root, pr.Source)
			got = withPredictedMeta(got, pr)
		}
		if got != want {
			t.Errorf("%s: predicted %s (%s, from %s), ostree made %s; the booted /etc has %s, its image %s",
				p, got, pr.How, pr.Source, want, nodeState(t, root, p), nodeState(t, root, "/usr"+p))
		}
		checked++
	}
	t.Logf("%d paths predicted as ostree merged them", checked)

	// The merge losses of the declared paths, as check lists them.
	rep := checkImage(t, bin, root, "--config", cfg)
	got := map[string]string{}
	for _, n := range rep.Notices {
		if n.Kind == "merge-loss" {
			got[n.Path] = n.Attribute
		}
	}
	want := map[string]string{}
	var states []string
	for _, d := range declared {
		live, after := nodeState(t, root, d.path), nodeState(t, newRoot, d.path)
		if live == "absent" {
			continue
		}
		rel := strings.TrimPrefix(d.path, "/etc/")
		oldDefault := nodeState(t, root, "/usr/etc/"+rel)
		newDefault := nodeState(t, newRoot, "/usr/etc/"+rel)
		states = append(states, fmt.Sprintf("%s: live %s; old default %s; new default %s; after %s", d.path, live, oldDefault, newDefault, after))
		switch {
		case after == "absent":
			want[d.path] = "new-default"
		case declaredDiffers(d, live, after) && d.dir:
			want[d.path] = "directory-reset"
		case declaredDiffers(d, live, after):
			want[d.path] = "new-default"
		case d.content == "" && !d.dir && contentOf(after) == contentOf(oldDefault) && contentOf(newDefault) != contentOf(oldDefault) && newDefault != "absent":
			want[d.path] = "kept"
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("merge losses (-what ostree's merge did +what check predicted):\n%s\nnotices: %+v\n%s", diff, rep.Notices, strings.Join(states, "\n"))
	}
	if len(want) == 0 {
		t.Log("no merge loss in this round")
	}
}

// bootInto makes the deployment directory root look booted: /run/ostree-
// booted, and the sysroot under /sysroot with /ostree leading to it (as a
// booted host has them). The bind mount is undone before ostree touches
// the deployments again.
func bootInto(t *testing.T, h *ostree.Host, root string) (unmount func()) {
	writeFile(t, filepath.Join(root, "run/ostree-booted"), "", 0o644)
	mkdir(t, filepath.Join(root, "sysroot"), 0o755)
	if _, err := os.Lstat(filepath.Join(root, "ostree")); os.IsNotExist(err) {
		must(t, os.Symlink("sysroot/ostree", filepath.Join(root, "ostree")))
	}
	target := filepath.Join(root, "sysroot")
	if err := syscall.Mount(h.Root, target, "", syscall.MS_BIND, ""); err != nil {
		t.Fatalf("bind mount of the sysroot: %v", err)
	}
	done := false
	unmount = func() {
		if !done {
			done = true
			if err := syscall.Unmount(target, syscall.MNT_DETACH); err != nil {
				t.Errorf("unmounting %s: %v", target, err)
			}
		}
	}
	t.Cleanup(unmount)
	return unmount
}

// applyDeclared makes the declared paths of root's /etc as declared.
func applyDeclared(t *testing.T, root string, declared []declaredCase) {
	for _, d := range declared {
		p := filepath.Join(root, d.path)
		switch {
		case d.dir:
			mkdir(t, p, 0o755)
			must(t, os.Chmod(p, d.mode))
		case d.content != "":
			writeFile(t, p, d.content, d.mode)
		default:
			if _, err := os.Stat(p); err != nil {
				writeFile(t, p, "", d.mode)
			}
			must(t, os.Chmod(p, d.mode))
		}
	}
}

// declaredConfig declares each case: files with their content (or, for a
// mode-only case, no content) and mode, directories with their mode.
func declaredConfig(declared []declaredCase) string {
	var files, dirs []string
	for _, d := range declared {
		switch {
		case d.dir:
			dirs = append(dirs, fmt.Sprintf(`{"path":%q,"mode":%d}`, d.path, d.mode))
		case d.content != "":
			files = append(files, fmt.Sprintf(`{"path":%q,"mode":%d,"overwrite":true,"contents":{"source":"data:;base64,%s"}}`, d.path, d.mode, b64([]byte(d.content))))
		default:
			files = append(files, fmt.Sprintf(`{"path":%q,"mode":%d}`, d.path, d.mode))
		}
	}
	sort.Strings(files)
	return `{"ignition":{"version":"3.4.0"},"storage":{"files":[` + strings.Join(files, ",") + `],"directories":[` + strings.Join(dirs, ",") + `]}}`
}

// declaredDiffers: what is declared of a path differs between two states
// (nodeState strings: "MODE UID GID[ -> TARGET| SHA]").
func declaredDiffers(d declaredCase, a, b string) bool {
	fa, fb := strings.Fields(a), strings.Fields(b)
	if len(fa) < 3 || len(fb) < 3 {
		return a != b
	}
	// Type and mode, owner and group (a config that names no owner
	// declares root's, as Ignition writes it), content where declared.
	if fa[0] != fb[0] || fa[1] != fb[1] || fa[2] != fb[2] {
		return true
	}
	return d.content != "" && contentOf(a) != contentOf(b)
}

// contentOf is the content digest of a nodeState ("" for none).
func contentOf(s string) string {
	f := strings.Fields(s)
	if len(f) == 4 {
		return f[3]
	}
	return ""
}

// withPredictedMeta puts the predicted mode and owner into the state of
// the node its content comes from (a directory kept with the old /etc's
// mode, say).
func withPredictedMeta(s string, pr image.Prediction) string {
	f := strings.Fields(s)
	if len(f) < 3 {
		return s
	}
	var typ uint32
	fmt.Sscanf(f[0], "%o", &typ)
	f[0] = fmt.Sprintf("%o", typ&^0o7777|pr.Node.Mode)
	f[1], f[2] = fmt.Sprint(pr.Node.UID), fmt.Sprint(pr.Node.GID)
	return strings.Join(f, " ")
}

// TestMergeFails: a file changed locally where the new image has a
// directory fails ostree's deploy ("Modified config file newly defaults to
// directory"), and the prediction, made first from the new commit's tree,
// says the merge fails there.
func TestMergeFails(t *testing.T) {
	harness.RequireRoot(t, "ostree admin deploy")
	harness.RequireTools(t, "ostree")
	h := ostree.NewHost(t)
	const branch = "testos/x86_64"
	tree := filepath.Join(t.TempDir(), "a")
	writeFile(t, tree+"/usr/etc/x.conf", "file\n", 0o644)
	writeFile(t, tree+"/usr/etc/y.conf", "file\n", 0o644)
	h.CommitTree(branch, tree)
	root := filepath.Join(h.DeployDir(), h.Deploy(branch))
	writeFile(t, root+"/etc/x.conf", "changed here\n", 0o644)

	must(t, os.RemoveAll(tree+"/usr/etc/x.conf"))
	writeFile(t, tree+"/usr/etc/x.conf/inside", "now a directory\n", 0o644)
	must(t, os.RemoveAll(tree+"/usr/etc/y.conf"))
	writeFile(t, tree+"/usr/etc/y.conf/inside", "now a directory\n", 0o644)
	h.CommitTree(branch, tree)
	mkdir(t, root+"/var/tmp", 0o755)
	h.Checkout(branch, root+"/var/tmp/next")

	r, err := ondisk.OpenRoot(root)
	must(t, err)
	defer r.Close()
	m, err := image.NewMerge(context.Background(), r, "/var/tmp/next/usr/etc")
	must(t, err)
	if pr := m.Predict("/etc/x.conf"); pr.How != image.MergeFails {
		t.Errorf("Predict(x.conf) = %s, want %s", pr.How, image.MergeFails)
	}
	if pr := m.Predict("/etc/y.conf"); pr.How != image.MergeNewDefault {
		t.Errorf("Predict(y.conf), unchanged here = %s, want %s", pr.How, image.MergeNewDefault)
	}
	must(t, os.RemoveAll(root+"/var/tmp/next"))
	err = h.TryDeploy(branch)
	if err == nil || !strings.Contains(err.Error(), "newly defaults to directory 'x.conf'") {
		t.Errorf("ostree admin deploy: %v; want the merge's failure at x.conf", err)
	}
}
