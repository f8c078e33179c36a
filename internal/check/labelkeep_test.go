package check

import (
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/drift-monitor/drift-monitor/internal/desired"
	"github.com/drift-monitor/drift-monitor/internal/desired/derive"
	"github.com/drift-monitor/drift-monitor/internal/drift"
	"github.com/drift-monitor/drift-monitor/internal/model"
	"github.com/drift-monitor/drift-monitor/internal/ondisk"
	"github.com/drift-monitor/drift-monitor/internal/selinux"
	"github.com/drift-monitor/drift-monitor/internal/statecache"
	"github.com/drift-monitor/drift-monitor/test/harness"
)

// labelledRoot is a root with a policy (type "t") and files, each labelled
// as given, declared by an Ignition config.
type labelledRoot struct {
	t   *testing.T
	dir string
	r   *ondisk.Root
}

const keptFC = "etc/selinux/t/contexts/files/file_contexts"

func newLabelledRoot(t *testing.T, policy string) *labelledRoot {
	harness.RequireRoot(t, "setting security.selinux without SELinux")
	lr := &labelledRoot{t: t, dir: t.TempDir()}
	lr.write("etc/selinux/config", "SELINUX=enforcing\nSELINUXTYPE=t\n")
	lr.write(keptFC, policy)
	r, err := ondisk.OpenRoot(lr.dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	lr.r = r
	return lr
}

// write puts a new inode at p, as a package update renames one in.
func (lr *labelledRoot) write(p, data string) {
	lr.t.Helper()
	full := filepath.Join(lr.dir, p)
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		lr.t.Fatal(err)
	}
	if err := os.WriteFile(full+".new", []byte(data), 0o644); err != nil {
		lr.t.Fatal(err)
	}
	if err := os.Rename(full+".new", full); err != nil {
		lr.t.Fatal(err)
	}
}

// declare writes the files (path → label) and returns the entries of a
// config that declares them as they are.
func (lr *labelledRoot) declare(files map[string]string) []model.Entry {
	lr.t.Helper()
	var cfg []string
	for _, p := range slices.Sorted(func(yield func(string) bool) {
		for p := range files {
			if !yield(p) {
				return
			}
		}
	}) {
		lr.write(p, "x\n")
		if err := os.Chmod(filepath.Join(lr.dir, p), 0o644); err != nil {
			lr.t.Fatal(err)
		}
		if err := unix.Lsetxattr(filepath.Join(lr.dir, p), ondisk.XattrSELinux, append([]byte(files[p]), 0), 0); err != nil {
			lr.t.Fatal(err)
		}
		cfg = append(cfg, fmt.Sprintf(`{"path":"/%s","mode":420,"contents":{"source":"data:;base64,%s"}}`, p, base64.StdEncoding.EncodeToString([]byte("x\n"))))
	}
	frag, err := desired.Parse("c.ign", []byte(`{"ignition":{"version":"3.5.0"},"storage":{"files":[`+strings.Join(cfg, ",")+`]}}`))
	if err != nil {
		lr.t.Fatal(err)
	}
	st, err := derive.Derive(frag.Config, noAccounts{})
	if err != nil {
		lr.t.Fatal(err)
	}
	return st.Entries
}

type noAccounts struct{}

func (noAccounts) LookupUser(string) (derive.User, bool) { return derive.User{}, false }
func (noAccounts) LookupGroup(string) (int, bool)        { return 0, false }

// check runs a check as `check` does, its defaults kept in store, and
// returns its label drift and notices as "path: want" lines, and its
// Labels.
func (lr *labelledRoot) check(store LabelStore, entries []model.Entry) ([]string, *Labels) {
	lr.t.Helper()
	l := LoadLabelsKept(lr.r, entries, false, store)
	c := &Checker{Root: lr.r, Labels: l}
	res := c.All(context.Background(), entries)
	l.Keep()
	var got []string
	for _, d := range append(res.Drift, res.Notices...) {
		switch {
		case d.Kind == drift.Label:
			got = append(got, d.Path+": "+d.Want)
		case strings.Contains(d.Message, "SELinux"):
			got = append(got, d.Message)
		default:
			lr.t.Errorf("unexpected drift or notice: %s", d.Message)
		}
	}
	return got, l
}

// TestKeptLabelsAnswerAsThePolicy: a check keeps the defaults it looked up,
// and the next check of the same policy answers from them without loading
// it, finding the same drift; a changed policy, a path not looked up
// before, are asked of the policy, and then kept with the rest.
func TestKeptLabelsAnswerAsThePolicy(t *testing.T) {
	lr := newLabelledRoot(t, "/etc(/.*)? u:object_r:etc_t:s0\n/etc/b\\.conf u:object_r:b_t:s0\n")
	entries := lr.declare(map[string]string{"etc/a.conf": "u:object_r:etc_t:s0", "etc/b.conf": "u:object_r:etc_t:s0"})
	store := &statecache.Cache{Dir: t.TempDir()}
	step := func(name string, entries []model.Entry, loads bool, want ...string) {
		t.Helper()
		got, l := lr.check(store, entries)
		if diff := cmpLines(want, got); diff != "" {
			t.Errorf("%s: drift (-want +got):\n%s", name, diff)
		}
		if loaded := l.kept.contexts != nil; loaded != loads {
			t.Errorf("%s: the policy loaded: %v, want %v", name, loaded, loads)
		}
	}
	step("first check", entries, true, "/etc/b.conf: u:object_r:b_t:s0")
	step("again", entries, false, "/etc/b.conf: u:object_r:b_t:s0")
	step("and again", entries, false, "/etc/b.conf: u:object_r:b_t:s0")

	// A policy update: the new defaults, from the new policy.
	lr.write(keptFC, "/etc(/.*)? u:object_r:etc_t:s0\n/etc/a\\.conf u:object_r:a_t:s0\n")
	step("policy replaced", entries, true, "/etc/a.conf: u:object_r:a_t:s0")
	step("policy replaced, again", entries, false, "/etc/a.conf: u:object_r:a_t:s0")
	lr.write(keptFC+".local", "/etc/b\\.conf u:object_r:local_t:s0\n")
	step(".local appears", entries, true, "/etc/a.conf: u:object_r:a_t:s0", "/etc/b.conf: u:object_r:local_t:s0")

	// A path declared since: asked of the policy, then kept too.
	more := lr.declare(map[string]string{"etc/a.conf": "u:object_r:etc_t:s0", "etc/b.conf": "u:object_r:etc_t:s0", "etc/c.conf": "u:object_r:c_t:s0"})
	step("a new path", more, true, "/etc/a.conf: u:object_r:a_t:s0", "/etc/b.conf: u:object_r:local_t:s0", "/etc/c.conf: u:object_r:etc_t:s0")
	step("a new path, again", more, false, "/etc/a.conf: u:object_r:a_t:s0", "/etc/b.conf: u:object_r:local_t:s0", "/etc/c.conf: u:object_r:etc_t:s0")
	// The first config, checked in turn with the second, is still answered.
	step("the first config again", entries, false, "/etc/a.conf: u:object_r:a_t:s0", "/etc/b.conf: u:object_r:local_t:s0")

	// A node of another type than declared is asked of the policy.
	if err := os.Remove(filepath.Join(lr.dir, "etc/c.conf")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(lr.dir, "etc/c.conf"), 0o755); err != nil {
		t.Fatal(err)
	}
	l := LoadLabelsKept(lr.r, more, false, store)
	if c, ok := l.lookup("/etc/c.conf", selinux.Directory); !ok || c != "u:object_r:etc_t:s0" || l.kept.contexts == nil {
		t.Errorf("a directory at /etc/c.conf wants %q, %v (policy loaded: %v), want etc_t from the policy", c, ok, l.kept.contexts != nil)
	}
}

// breakPolicy is a store that spoils the policy once its answers are
// fetched: as an update that went wrong between the key and a lookup.
type breakPolicy struct {
	*statecache.Cache
	lr *labelledRoot
}

func (b breakPolicy) LabelAnswers(key selinux.PolicyKey) *selinux.Answers {
	a := b.Cache.LabelAnswers(key)
	b.lr.write(keptFC, "/etc/(unclosed u:object_r:etc_t:s0\n")
	return a
}

// TestKeptLabelsPolicyBrokenSince: a lookup the kept answers lack, when the
// policy can no longer be loaded, is no label drift: the check says that
// labels are not checked, and keeps nothing.
func TestKeptLabelsPolicyBrokenSince(t *testing.T) {
	lr := newLabelledRoot(t, "/etc(/.*)? u:object_r:etc_t:s0\n")
	entries := lr.declare(map[string]string{"etc/a.conf": "u:object_r:etc_t:s0"})
	store := &statecache.Cache{Dir: t.TempDir()}
	if got, _ := lr.check(store, entries); len(got) != 0 {
		t.Fatalf("first check: %q, want none", got)
	}
	more := lr.declare(map[string]string{"etc/a.conf": "u:object_r:etc_t:s0", "etc/new.conf": "u:object_r:wrong_t:s0"})
	got, l := lr.check(breakPolicy{store, lr}, more)
	if len(got) != 1 || !strings.Contains(got[0], "SELinux labels are not checked") || !strings.Contains(got[0], "unclosed") {
		t.Errorf("drift and notices %q, want only the notice that labels are not checked, naming the bad spec", got)
	}
	if l.kept.keyed {
		t.Error("a failed load is keyed: its answers would be kept")
	}
}

// cmpLines compares two sets of lines.
func cmpLines(want, got []string) string {
	slices.Sort(want)
	slices.Sort(got)
	if slices.Equal(want, got) {
		return ""
	}
	return fmt.Sprintf("-%q\n+%q", want, got)
}

// TestKeptLabelsOwnPathAsAnotherType: a check answered from kept answers
// finds each entry's default by the entry's position, for the node type
// it declares; its own path as a node of another type (the file replaced
// by a directory) is the policy's default for that type, not the kept
// one for the file, and is kept for the next check with the rest.
func TestKeptLabelsOwnPathAsAnotherType(t *testing.T) {
	lr := newLabelledRoot(t, "/etc(/.*)? u:object_r:etc_t:s0\n/etc/c\\.conf -d u:object_r:dir_t:s0\n")
	entries := lr.declare(map[string]string{"etc/a.conf": "u:object_r:etc_t:s0", "etc/c.conf": "u:object_r:etc_t:s0"})
	store := &statecache.Cache{Dir: t.TempDir()}
	if got, _ := lr.check(store, entries); len(got) != 0 {
		t.Fatalf("first check: %q, want none", got)
	}
	c := &entries[slices.IndexFunc(entries, func(e model.Entry) bool { return e.Path == "/etc/c.conf" })]
	l := LoadLabelsKept(lr.r, entries, false, store)
	lookup := entryLookup{l, c}.lookup
	if got, ok := lookup(c.Path, selinux.Regular); !ok || got != "u:object_r:etc_t:s0" || l.kept.contexts != nil {
		t.Errorf("the file's own default: %q, %v (policy loaded: %v), want etc_t from the kept answers", got, ok, l.kept.contexts != nil)
	}
	if got, ok := lookup(c.Path, selinux.Directory); !ok || got != "u:object_r:dir_t:s0" {
		t.Errorf("its path as a directory: %q, %v, want dir_t", got, ok)
	}
	l.Keep()
	l = LoadLabelsKept(lr.r, entries, false, store)
	for _, want := range []struct {
		typ  selinux.FileType
		want string
	}{{selinux.Regular, "u:object_r:etc_t:s0"}, {selinux.Directory, "u:object_r:dir_t:s0"}, {selinux.Regular, "u:object_r:etc_t:s0"}} {
		if got, ok := (entryLookup{l, c}).lookup(c.Path, want.typ); !ok || got != want.want {
			t.Errorf("the next check, as type %v: %q, %v, want %q", want.typ, got, ok, want.want)
		}
	}
	if l.kept.contexts != nil {
		t.Error("the next check loaded the policy: the directory's default was not kept")
	}
	a := &entries[slices.IndexFunc(entries, func(e model.Entry) bool { return e.Path == "/etc/a.conf" })]
	if got, ok := (entryLookup{l, a}).lookup(a.Path, selinux.Regular); !ok || got != "u:object_r:etc_t:s0" {
		t.Errorf("another entry's own default: %q, %v, want etc_t", got, ok)
	}
}
