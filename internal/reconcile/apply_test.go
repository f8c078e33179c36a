package reconcile

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/drift-monitor/drift-monitor/internal/drift"
	"github.com/drift-monitor/drift-monitor/internal/model"
	"github.com/drift-monitor/drift-monitor/internal/ondisk"
	"golang.org/x/sys/unix"
)

// digest is everything a reconcile could change under root: every node's
// path, type, mode, owner, inode, link target, content and xattrs.
func digest(t *testing.T, root string) string {
	t.Helper()
	h := sha256.New()
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			return err
		}
		fmt.Fprintf(h, "%s %o %d:%d %d\n", p, st.Mode, st.Uid, st.Gid, st.Ino)
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFLNK:
			target, err := os.Readlink(p)
			fmt.Fprintf(h, "-> %s %v\n", target, err)
		case unix.S_IFREG:
			b, err := os.ReadFile(p)
			fmt.Fprintf(h, "%q %v\n", b, err)
		}
		buf := make([]byte, 4096)
		n, _ := unix.Llistxattr(p, buf)
		fmt.Fprintf(h, "xattrs %q\n", buf[:max(n, 0)])
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%x", h.Sum(nil))
}

// public is a step as plans show it (no content, no private detail).
func public(actions []Action) []string {
	var out []string
	for _, a := range actions {
		for _, s := range a.Steps {
			out = append(out, fmt.Sprintf("%s %s %s %s: %s %v", a.Path, s.Op, s.Path, s.Unit, s.Says, s.Resolves))
		}
	}
	return out
}

// TestDryRunIsThePlanApplyRuns: a dry run writes nothing (the tree's
// digest is the same after it), and the apply that follows does the steps
// the dry run printed, in the same order, and no other.
func TestDryRunIsThePlanApplyRuns(t *testing.T) {
	root, entries, _ := crashRoot(t)
	uid, gid := os.Getuid(), os.Getgid()
	mode := uint32(0o640)
	if err := os.WriteFile(filepath.Join(root, "etc/m.conf"), []byte("same\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc/nowhere", filepath.Join(root, "etc/l")); err != nil {
		t.Fatal(err)
	}
	entries = append(entries,
		model.Entry{Kind: model.KindFile, Path: "/etc/m.conf", Type: model.TypeRegular, Mode: &mode, UID: &uid, GID: &gid,
			Content: &model.Content{Exact: []byte("same\n")}},
		model.Entry{Kind: model.KindLink, Path: "/etc/l", Type: model.TypeSymlink, Target: "/etc/a.conf"},
		model.Entry{Kind: model.KindDirectory, Path: "/etc/new", Type: model.TypeDirectory, Mode: ptr(uint32(0o750)), UID: &uid, GID: &gid})

	repair := func(dry bool) Result { return repairDry(t, root, entries, SysFS{}, dry) }
	before := digest(t, root)
	plan := repair(true)
	if after := digest(t, root); after != before {
		t.Fatalf("a dry run changed the tree")
	}
	if !plan.Clean() || len(plan.Repaired) != 7 {
		t.Fatalf("dry run: %d repaired, refused %+v; want the 7 entries", len(plan.Repaired), plan.Refused)
	}
	done := repair(false)
	if !done.Clean() {
		t.Fatalf("apply refused %+v", done.Refused)
	}
	want, got := strings.Join(public(plan.Repaired), "\n"), strings.Join(public(done.Repaired), "\n")
	if got != want {
		t.Errorf("apply did:\n%s\nthe dry run planned:\n%s", got, want)
	}
	for _, a := range done.Repaired {
		if strings.Join(a.Done, "; ") != strings.Join(says(a.Steps), "; ") {
			t.Errorf("%s: done %q, steps %q", a.Path, a.Done, says(a.Steps))
		}
	}
	for _, w := range []string{"/etc/new mkdir /etc/new", "/etc/new/b.conf write /etc/new/b.conf", "/etc/h hardlink /etc/h",
		"/etc/m.conf chmod /etc/m.conf", "/etc/l symlink /etc/l"} {
		if !strings.Contains(want, w) {
			t.Errorf("the plan lacks %q:\n%s", w, want)
		}
	}
	if again := repair(true); len(again.Repaired)+len(again.Refused) != 0 {
		t.Errorf("after the apply, a dry run still plans %v", public(again.Repaired))
	}
}

// TestApplyRefusesASwappedNode: a node replaced between planning and
// applying (another inode at the path) is not written to: the step is
// refused, and what stands there now keeps its mode and content.
func TestApplyRefusesASwappedNode(t *testing.T) {
	root := t.TempDir()
	p := filepath.Join(root, "etc/f")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	mode := uint32(0o644)
	uid, gid := os.Getuid(), os.Getgid()
	e := model.Entry{Kind: model.KindFile, Path: "/etc/f", Type: model.TypeRegular, Mode: &mode, UID: &uid, GID: &gid,
		Content: &model.Content{Exact: []byte("x")}}
	r, err := ondisk.OpenRoot(root)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	rec := &Reconciler{Root: r, Declared: ondisk.Declare([]model.Entry{e})}
	w := &writer{root: r, decl: rec.Declared, fs: SysFS{}}
	steps, err := rec.plan(w, &e, []drift.Kind{drift.Mode})
	if err != nil || len(steps) != 1 || steps[0].Op != OpChmod {
		t.Fatalf("plan %+v, %v; want one chmod", steps, err)
	}
	// Swapped: another file (another inode) at the path.
	if err := os.WriteFile(p+".new", []byte("someone else's"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(p+".new", p); err != nil {
		t.Fatal(err)
	}
	done, err := rec.apply(context.Background(), w, steps)
	if err == nil || len(done) != 0 || !strings.Contains(err.Error(), "changed since it was examined") {
		t.Fatalf("apply over a swapped node: done %+v, err %v; want it refused", done, err)
	}
	if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("the node put there since: %v, %v; want it left at 0600", fi, err)
	}
}
