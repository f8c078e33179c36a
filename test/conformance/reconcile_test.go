package conformance_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/drift-monitor/drift-monitor/test/harness"
	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"
)

// node is what TestReconcile compares of one node of a root: everything
// but timestamps and inode numbers.
type node struct {
	Type       string
	Mode       uint32
	UID, GID   uint32
	Content    string // sha256 of a regular file's bytes
	Target     string // a symbolic link's
	HardLinked []string
	Label      string // the SELinux label, "" for none
}

// snapshot records every node under root by host path, with the other
// paths that share its inode.
func snapshot(t *testing.T, root string) map[string]node {
	t.Helper()
	nodes := map[string]node{}
	inodes := map[[2]uint64][]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel := "/" + strings.TrimPrefix(strings.TrimPrefix(p, root), "/")
		var st syscall.Stat_t
		if err := syscall.Lstat(p, &st); err != nil {
			return err
		}
		n := node{Mode: st.Mode & 0o7777, UID: st.Uid, GID: st.Gid, Label: labelOf(p)}
		switch st.Mode & syscall.S_IFMT {
		case syscall.S_IFREG:
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			sum := sha256.Sum256(b)
			n.Type, n.Content = "file", hex.EncodeToString(sum[:])
		case syscall.S_IFDIR:
			n.Type = "dir"
		case syscall.S_IFLNK:
			n.Type, n.Target = "symlink", mustReadlink(t, p)
		default:
			n.Type = fmt.Sprintf("special %o", st.Mode&syscall.S_IFMT)
		}
		if n.Type != "dir" {
			k := [2]uint64{st.Dev, st.Ino}
			inodes[k] = append(inodes[k], rel)
		}
		nodes[rel] = n
		return nil
	})
	if err != nil {
		t.Fatalf("walking %s: %v", root, err)
	}
	for _, paths := range inodes {
		if len(paths) < 2 {
			continue
		}
		for _, p := range paths {
			n := nodes[p]
			n.HardLinked = slices.Sorted(slices.Values(paths))
			nodes[p] = n
		}
	}
	return nodes
}

// labelOf is p's SELinux label, its link not followed; "" for none.
func labelOf(p string) string {
	buf := make([]byte, 256)
	n, err := unix.Lgetxattr(p, "security.selinux", buf)
	if err != nil {
		return ""
	}
	return strings.TrimRight(string(buf[:n]), "\x00")
}

func mustReadlink(t *testing.T, p string) string {
	t.Helper()
	s, err := os.Readlink(p)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func reconcileRoot(t *testing.T, root, cfg string, extra ...string) (int, harness.ReconcileReport) {
	t.Helper()
	args := append([]string{"reconcile", "--root", root, "--config", cfg, "--format", "json"}, extra...)
	r := runBinary(t, args...)
	var rep harness.ReconcileReport
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("drift-monitor %s: exit %d, output is not a JSON report: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), r.exit, err, r.stdout, r.stderr)
	}
	if r.exit != 0 && r.exit != 1 {
		t.Fatalf("drift-monitor %s: exit %d\nstderr:\n%s", strings.Join(args, " "), r.exit, r.stderr)
	}
	assertNoRoot(t, "reconcile output (outside its \"root\" field)", stripRootField(t, r.stdout), root)
	return r.exit, rep
}

// TestReconcile is the repair property: after each mutation TestMutations
// makes, on a root the real Ignition wrote (2.14 or 2.27, as the fixture's
// spec says) with Debian's SELinux policy and the real setfiles, one
// `reconcile --root` puts back what Ignition wrote: `check` is clean
// again, and the root equals the one Ignition wrote node by node (type,
// content, mode, owner, group, link target, hard links, SELinux label, the
// account files with them), but for what the mutation left at undeclared
// paths, which reconcile must not touch. A --dry-run before it changes
// nothing at all, and plans exactly the steps the run takes.
//
// The links of an enabled unit are made by the first boot's preset, which
// labels them only where SELinux is on in the kernel (here it is not), and
// Ignition 2.27 leaves unlabelled a declared link whose target its os.Stat
// does not reach: a link reconcile makes again carries the policy's label.
func TestReconcile(t *testing.T) {
	requireTier(t)
	// What reconcile cannot put back, by mutation: it lists the entry and
	// exits 1.
	refused := map[string]string{
		// The group file is not declared: the name cannot be resolved.
		"a group declared by name no longer in the root's group file": "/srv/shared",
		// Remote sources: drift-monitor has only their hashes.
		"sha512-verified content changed":            "/opt/remote/verified.bin",
		"sha256-verified content changed, same size": "/opt/remote/verified256.bin",
		// An append-only file (overwrite false, no contents) is its base
		// and its fragments, and only the first-boot record knows the base
		// (these roots have none: TestFirstBootRecord has one): what is
		// there now is no base to append to.
		"append-only file lost its fragment": "/etc/appended.conf",
		"kept file: appended fragment lost":  "/etc/pre/appended",
	}
	// The specialBits fixture sets the special bits after Ignition 2.14, as
	// Ignition 2.15 to 2.21 wrote them; reconcile writes a mode as Ignition
	// v2.27 does, without the special bits a spec before 3.6.0 declares
	// (config/v3_6/translate/translate.go: "& ^07000"), which check accepts
	// as well.
	modes := map[string]map[string]uint32{
		"setgid added to a file declared 04755 (spec 3.4.0)": {"/usr/local/bin/suid-root": 0o755},
	}
	for _, tt := range mutations() {
		t.Run(tt.name, func(t *testing.T) {
			f := tt.fixture
			f.prepare.selinux = true
			root, cfg := f.provision(t)
			want := snapshot(t, root)
			tt.mutate(t, root)
			mutated := snapshot(t, root)

			exit, dry := reconcileRoot(t, root, cfg, "--dry-run")
			if diff := cmp.Diff(mutated, snapshot(t, root)); diff != "" {
				t.Errorf("reconcile --dry-run changed the root (-before +after):\n%s", diff)
			}
			if !dry.DryRun || len(dry.Repaired)+len(dry.Refused) == 0 {
				t.Errorf("dry run (exit %d) says it would do nothing: %+v", exit, dry)
			}

			exit, rep := reconcileRoot(t, root, cfg)
			if diff := cmp.Diff(actionSteps(dry), actionSteps(rep)); diff != "" {
				t.Errorf("the dry run planned other steps than the run took (-dry-run +run):\n%s", diff)
			}
			if p, ok := refused[tt.name]; ok {
				if exit != 1 || len(rep.Refused) != 1 || rep.Refused[0].Path != p || rep.Refused[0].Problem == "" {
					t.Errorf("reconcile: exit %d, refused %+v; want exit 1 and %s refused with a reason", exit, rep.Refused, p)
				}
				return
			}
			if exit != 0 || !rep.Clean || len(rep.Refused) != 0 || len(rep.Remaining) != 0 {
				t.Fatalf("reconcile: exit %d, report %s; want exit 0 and nothing left\nroot:\n%s", exit, pretty(rep), describeTree(root))
			}
			exitCheck, after := check(t, root, cfg)
			wantClean(t, root, exitCheck, after)

			got := snapshot(t, root)
			for p, n := range got {
				if _, ok := want[p]; ok {
					continue
				}
				if _, ok := mutated[p]; ok {
					delete(got, p) // the mutation's own, undeclared
					continue
				}
				t.Errorf("reconcile left %s (%s), which neither Ignition nor the mutation made", p, n.Type)
			}
			for p := range got {
				n := got[p]
				n.HardLinked = slices.DeleteFunc(n.HardLinked, func(q string) bool { _, ok := want[q]; return !ok })
				if len(n.HardLinked) < 2 {
					n.HardLinked = nil
				}
				if w, ok := want[p]; ok && w.Label == "" && (enablementLink(p) || n.Type == "symlink") {
					// A preset's link, or its directory; a link Ignition
					// 2.27 did not relabel, its target out of its reach:
					// reconcile gives what it writes the policy's label.
					n.Label = ""
				}
				got[p] = n
			}
			for p, m := range modes[tt.name] {
				w := want[p]
				w.Mode = m
				want[p] = w
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("repaired root differs from Ignition's (-want +got):\n%s\nreport:\n%s", diff, pretty(rep))
			}
		})
	}
}

// TestReconcileNeverPrintsSecrets: a secret file whose content drifted is
// repaired, and neither its declared nor its drifted bytes appear in what
// reconcile prints, dry run or not, text or JSON.
func TestReconcileNeverPrintsSecrets(t *testing.T) {
	requireTier(t)
	root, cfg := base.provision(t)
	for _, args := range [][]string{
		{"--dry-run"}, {"--dry-run", "--format", "json"}, {"--format", "json"}, {},
	} {
		rewrite(t, root, "/etc/secret.key", "token="+secretNew+"\n")
		r := runBinary(t, append([]string{"reconcile", "--root", root, "--config", cfg}, args...)...)
		for _, secret := range []string{secretOld, secretNew} {
			if strings.Contains(r.stdout+r.stderr, secret) {
				t.Errorf("reconcile %v printed secret bytes:\n%s%s", args, r.stdout, r.stderr)
			}
		}
		if !strings.Contains(r.stdout, "/etc/secret.key") {
			t.Errorf("reconcile %v does not name /etc/secret.key:\n%s", args, r.stdout)
		}
	}
	if got := read(t, root, "/etc/secret.key"); got != "token="+secretOld+"\n" {
		t.Errorf("/etc/secret.key is not the declared content after reconcile")
	}
	exit, rep := check(t, root, cfg)
	wantClean(t, root, exit, rep)
}

// enablementLink: p is a link systemctl enable makes, or its .wants or
// .requires directory.
func enablementLink(p string) bool {
	d := p
	if !strings.HasSuffix(p, ".wants") && !strings.HasSuffix(p, ".requires") {
		d = filepath.Dir(p)
	}
	return strings.HasPrefix(p, unitDir+"/") && (strings.HasSuffix(d, ".wants") || strings.HasSuffix(d, ".requires"))
}

// actionSteps lists a report's steps, one line each ("path: step"), and
// what it refused ("path: refused: why").
func actionSteps(rep harness.ReconcileReport) []string {
	var out []string
	for _, a := range rep.Repaired {
		for _, d := range a.Done {
			out = append(out, a.Path+": "+d)
		}
	}
	for _, a := range rep.Refused {
		out = append(out, a.Path+": refused: "+a.Problem)
	}
	return out
}
