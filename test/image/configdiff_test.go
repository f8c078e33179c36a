package image_test

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/drift-monitor/drift-monitor/internal/image"
	"github.com/drift-monitor/drift-monitor/test/harness"
	"github.com/drift-monitor/drift-monitor/test/ostree"
)

func TestMain(m *testing.M) { os.Exit(harness.Run(m)) }

// The differential test against `ostree admin config-diff`: random trees,
// committed and deployed by the real ostree, then changed the way a first
// boot and an admin change them. drift-monitor's `check --image` must
// list exactly config-diff's changes, letter for letter, and its
// undeclared ones must be those minus what the config declares, what the
// shipped runtime list holds and what the first boot's record holds
// unchanged.

// mutations are every kind of change the issue names, each applied to a
// random target of the live /etc.
var mutations = []string{"content", "mode", "owner", "symlink retarget", "type change", "added file",
	"added directory", "deleted file", "deleted directory", "fifo", "xattr only", "touch"}

func TestConfigDiffOracle(t *testing.T) {
	harness.RequireRoot(t, "ostree admin config-diff, and changing owners")
	harness.RequireTools(t, "ostree")
	bin := harness.Binary(t)
	for seed := uint64(1); seed <= 6; seed++ {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) { oracleRound(t, bin, seed) })
	}
}

func oracleRound(t *testing.T, bin string, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 39))
	tree := t.TempDir()
	randomTree(t, rng, filepath.Join(tree, "usr/etc"), 3)
	h := ostree.NewHost(t)
	h.CommitTree("testos/x86_64", tree)
	dep := filepath.Join(h.DeployDir(), h.Deploy("testos/x86_64"))
	etc := filepath.Join(dep, "etc")
	writeFile(t, filepath.Join(dep, "run/ostree-booted"), "", 0o644)

	// The first boot: a host name, a changed file, a preset's link.
	writeFile(t, filepath.Join(etc, "hostname"), "node-1\n", 0o644)
	mutate(t, rng, etc, "content")
	mutate(t, rng, etc, "added file")
	out := runBin(t, bin, "adopt", "--image", "--root", dep)
	if !strings.Contains(out, "recorded") {
		t.Fatalf("adopt --image: %s", out)
	}
	recorded := map[string]string{}
	for _, l := range h.ConfigDiff() {
		p := path.Join("/etc", l[5:])
		recorded[p] = nodeState(t, dep, p)
	}

	// Later: every kind of change once, then more at random, and what
	// the OS writes at run time.
	for _, m := range mutations {
		mutate(t, rng, etc, m)
	}
	for range 6 {
		mutate(t, rng, etc, mutations[rng.IntN(len(mutations))])
	}
	writeFile(t, filepath.Join(etc, "machine-id"), "0123456789abcdef0123456789abcdef\n", 0o444)
	writeFile(t, filepath.Join(etc, "ssh/ssh_host_ed25519_key"), "key\n", 0o600)

	want := map[string]string{} // path: config-diff's letter
	for _, l := range h.ConfigDiff() {
		if len(l) < 6 || l[1:5] != "    " {
			t.Fatalf("config-diff line %q", l)
		}
		want[path.Join("/etc", l[5:])] = l[:1]
	}
	declared := declare(t, rng, dep, want)
	cfg := filepath.Join(t.TempDir(), "declared.ign")
	writeFile(t, cfg, ignition(t, dep, declared), 0o600)

	rep := checkImage(t, bin, dep, "--config", cfg)
	got := map[string]string{}
	class := map[string]string{}
	for _, d := range rep.Image.Differences {
		got[d.Path] = map[string]string{"modified": "M", "added": "A", "removed": "D"}[d.Change]
		class[d.Path] = d.Class
		if d.Error != "" {
			t.Errorf("%s: %s", d.Path, d.Error)
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("check --image's changes (-config-diff +drift-monitor):\n%s", diff)
	}

	// The classes, computed here from what the test did.
	rt := image.ShippedRuntime()
	wantClass := map[string]string{}
	for p, letter := range want {
		switch {
		case declared[p] || letter != "M" && declaresUnder(declared, p):
			wantClass[p] = "declared"
		case rt.Match(p) != "":
			wantClass[p] = "runtime"
		case recorded[p] != "" && recorded[p] == nodeState(t, dep, p):
			wantClass[p] = "first-boot"
		default:
			wantClass[p] = "undeclared"
		}
	}
	if diff := cmp.Diff(wantClass, class); diff != "" {
		t.Errorf("classes (-want +got):\n%s", diff)
	}
	var undeclared []string
	for p, c := range wantClass {
		if c == "undeclared" {
			undeclared = append(undeclared, p)
		}
	}
	t.Logf("%d changes, %d undeclared, %d declared, %d recorded at the first boot", len(want), len(undeclared), len(declared), len(recorded))
	if rep.Image.Undeclared != len(undeclared) || len(undeclared) == 0 {
		t.Errorf("%d undeclared, want %d (%v)", rep.Image.Undeclared, len(undeclared), undeclared)
	}
}

// randomTree writes a random /etc: directories of several modes, files of
// random content, modes and owners, links.
func randomTree(t *testing.T, rng *rand.Rand, dir string, depth int) {
	mkdir(t, dir, 0o755)
	n := 3 + rng.IntN(6)
	for i := range n {
		p := filepath.Join(dir, fmt.Sprintf("n%d", i))
		switch k := rng.IntN(10); {
		case k < 2 && depth > 0:
			randomTree(t, rng, p, depth-1)
			must(t, os.Chmod(p, []os.FileMode{0o755, 0o700, 0o750}[rng.IntN(3)]))
		case k < 8:
			writeFile(t, p, randomBytes(rng), []os.FileMode{0o644, 0o600, 0o640, 0o755}[rng.IntN(4)])
			if rng.IntN(4) == 0 {
				must(t, os.Lchown(p, 1000, 1000))
			}
		default:
			must(t, os.Symlink(fmt.Sprintf("target-%d", rng.IntN(100)), p))
		}
	}
}

func randomBytes(rng *rand.Rand) string {
	b := make([]byte, rng.IntN(200))
	for i := range b {
		b[i] = byte('a' + rng.IntN(26))
	}
	return string(b)
}

// nodes lists the nodes under dir (relative paths), sorted, those a
// mutation may take as its target.
func nodes(t *testing.T, dir string, keep func(fi os.FileInfo) bool) []string {
	var out []string
	filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil || p == dir || strings.Contains(p, "drift-monitor") {
			return nil
		}
		if keep(fi) {
			out = append(out, p)
		}
		return nil
	})
	sort.Strings(out)
	return out
}

func pick(t *testing.T, rng *rand.Rand, dir string, keep func(fi os.FileInfo) bool) string {
	ns := nodes(t, dir, keep)
	if len(ns) == 0 {
		return ""
	}
	return ns[rng.IntN(len(ns))]
}

func regular(fi os.FileInfo) bool { return fi.Mode().IsRegular() }
func isDir(fi os.FileInfo) bool   { return fi.IsDir() }
func isLink(fi os.FileInfo) bool  { return fi.Mode()&os.ModeSymlink != 0 }

// mutate applies one kind of change to a random target under etc.
func mutate(t *testing.T, rng *rand.Rand, etc, kind string) {
	t.Helper()
	name := fmt.Sprintf("new-%d", rng.IntN(1000000))
	switch kind {
	case "content":
		if p := pick(t, rng, etc, regular); p != "" {
			b, _ := os.ReadFile(p)
			must(t, os.WriteFile(p, append(b, 'x'), 0))
		}
	case "mode":
		if p := pick(t, rng, etc, func(fi os.FileInfo) bool { return !isLink(fi) }); p != "" {
			fi, _ := os.Lstat(p)
			must(t, os.Chmod(p, fi.Mode().Perm()^0o020))
		}
	case "owner":
		if p := pick(t, rng, etc, func(os.FileInfo) bool { return true }); p != "" {
			fi, _ := os.Lstat(p)
			uid := 1001
			if fi.Sys().(*syscall.Stat_t).Uid == 1001 {
				uid = 0
			}
			must(t, os.Lchown(p, uid, -1))
		}
	case "symlink retarget":
		if p := pick(t, rng, etc, isLink); p != "" {
			target, _ := os.Readlink(p)
			must(t, os.Remove(p))
			must(t, os.Symlink(target+"-moved", p))
		}
	case "type change":
		if p := pick(t, rng, etc, func(fi os.FileInfo) bool { return !fi.IsDir() }); p != "" {
			must(t, os.Remove(p))
			if rng.IntN(2) == 0 {
				must(t, os.Mkdir(p, 0o755))
			} else {
				must(t, os.Symlink("was-a-file", p))
			}
		}
	case "type change to link":
		if p := pick(t, rng, etc, func(fi os.FileInfo) bool { return !fi.IsDir() }); p != "" {
			must(t, os.Remove(p))
			must(t, os.Symlink("was-a-file", p))
		}
	case "added file":
		dir := pick(t, rng, etc, isDir)
		if dir == "" {
			dir = etc
		}
		writeFile(t, filepath.Join(dir, name), "added\n", 0o644)
	case "added directory":
		dir := pick(t, rng, etc, isDir)
		if dir == "" {
			dir = etc
		}
		writeFile(t, filepath.Join(dir, name, "sub", "f"), "f\n", 0o644)
	case "deleted file":
		if p := pick(t, rng, etc, func(fi os.FileInfo) bool { return !fi.IsDir() }); p != "" {
			must(t, os.Remove(p))
		}
	case "deleted directory":
		if p := pick(t, rng, etc, isDir); p != "" {
			must(t, os.RemoveAll(p))
		}
	case "fifo":
		dir := pick(t, rng, etc, isDir)
		if dir == "" {
			dir = etc
		}
		must(t, syscall.Mkfifo(filepath.Join(dir, name), 0o644))
	case "xattr only":
		if p := pick(t, rng, etc, regular); p != "" {
			must(t, syscall.Setxattr(p, "user.drift", []byte("x"), 0))
		}
	case "touch":
		if p := pick(t, rng, etc, regular); p != "" {
			then := time.Now().Add(-time.Duration(1+rng.IntN(100)) * time.Hour)
			must(t, os.Chtimes(p, then, then))
		}
	default:
		t.Fatalf("mutation %q unknown", kind)
	}
}

// declare picks some regular files that config-diff lists as modified or
// added to be declared, as they are now.
func declare(t *testing.T, rng *rand.Rand, dep string, changed map[string]string) map[string]bool {
	var ps []string
	for p, l := range changed {
		fi, err := os.Lstat(filepath.Join(dep, p))
		if l != "D" && err == nil && fi.Mode().IsRegular() && !strings.HasPrefix(p, "/etc/drift-monitor") && !strings.Contains(p, "ssh_host") && p != "/etc/machine-id" {
			ps = append(ps, p)
		}
	}
	sort.Strings(ps)
	rng.Shuffle(len(ps), func(i, j int) { ps[i], ps[j] = ps[j], ps[i] })
	d := map[string]bool{}
	for _, p := range ps[:min(3, len(ps))] {
		d[p] = true
	}
	return d
}

// declaresUnder: a declared path is under p (p is a directory a declared
// path's writer made, or one whose removal the declared entry reports).
func declaresUnder(declared map[string]bool, p string) bool {
	for d := range declared {
		if strings.HasPrefix(d, p+"/") {
			return true
		}
	}
	return false
}

// ignition is a config declaring each path with its present content and
// mode.
func ignition(t *testing.T, dep string, declared map[string]bool) string {
	type file struct {
		Path      string `json:"path"`
		Mode      int    `json:"mode"`
		Overwrite bool   `json:"overwrite"`
		Contents  struct {
			Source string `json:"source"`
		} `json:"contents"`
	}
	var files []file
	for p := range declared {
		b, err := os.ReadFile(filepath.Join(dep, p))
		must(t, err)
		fi, _ := os.Lstat(filepath.Join(dep, p))
		f := file{Path: p, Mode: int(fi.Mode().Perm()), Overwrite: true}
		f.Contents.Source = "data:;base64," + b64(b)
		files = append(files, f)
	}
	sort.Slice(files, func(i, j int) bool { return files[i].Path < files[j].Path })
	cfg := map[string]any{"ignition": map[string]string{"version": "3.4.0"}, "storage": map[string]any{"files": files}}
	b, err := json.Marshal(cfg)
	must(t, err)
	return string(b)
}

// nodeState is what ostree's comparison sees of a node, in a string.
func nodeState(t *testing.T, dep, p string) string {
	full := filepath.Join(dep, p)
	var st syscall.Stat_t
	if err := syscall.Lstat(full, &st); err != nil {
		return "absent"
	}
	s := fmt.Sprintf("%o %d %d", st.Mode, st.Uid, st.Gid)
	switch st.Mode & syscall.S_IFMT {
	case syscall.S_IFLNK:
		target, _ := os.Readlink(full)
		s += " -> " + target
	case syscall.S_IFREG:
		b, _ := os.ReadFile(full)
		s += fmt.Sprintf(" %x", sha256.Sum256(b))
	}
	return s
}

// report is check's JSON report, as much as the tests read.
type report struct {
	Clean bool
	Drift []struct {
		Kind, Entry, Path, Attribute, Message string
	}
	Notices []struct {
		Kind, Entry, Path, Attribute, Message string
	}
	Image struct {
		Mode, Baseline, Source, Unavailable string
		Undeclared                          int
		Differences                         []struct {
			Path, Change, Class, Why, Package, RPM, Error, Message string
			What                                                   []string
		}
	}
}

func checkImage(t *testing.T, bin, root string, args ...string) report {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"check", "--root", root, "--image", "--format", "json"}, args...)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if ee, ok := err.(*exec.ExitError); err != nil && (!ok || ee.ExitCode() > 1) {
		t.Fatalf("check --image: %v\n%s", err, stderr.String())
	}
	var rep report
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatalf("check --image's report: %v\n%s", err, out)
	}
	return rep
}

func runBin(t *testing.T, bin string, args ...string) string {
	t.Helper()
	out, err := exec.Command(bin, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("drift-monitor %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

func writeFile(t *testing.T, p, s string, mode os.FileMode) {
	t.Helper()
	mkdir(t, filepath.Dir(p), 0o755)
	must(t, os.WriteFile(p, []byte(s), mode))
	must(t, os.Chmod(p, mode))
}

func mkdir(t *testing.T, p string, mode os.FileMode) {
	t.Helper()
	must(t, os.MkdirAll(p, mode))
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func b64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }
