package ondisk_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/drift-monitor/drift-monitor/internal/model"
	"github.com/drift-monitor/drift-monitor/internal/ondisk"
	"github.com/drift-monitor/drift-monitor/test/harness"
	"golang.org/x/sys/unix"
)

// TestObserveMeta: on ext4 and tmpfs, one observation of a node gives its
// xattrs (values for the names present), its ACLs with the parent's default
// ACL, and its immutable and append-only flags, without following a
// symlink at its path and without opening a FIFO.
func TestObserveMeta(t *testing.T) {
	harness.RequireRoot(t, "setting file capabilities, trusted.* xattrs and the immutable flag")
	for _, c := range []struct {
		fstype string
		proc   bool
	}{{"ext4", false}, {"tmpfs", false}, {"ext4", true}} {
		fstype := c.fstype
		name := fstype
		if c.proc {
			name += "/proc-self-fd" // the path before listxattrat (Linux 6.13)
		}
		t.Run(name, func(t *testing.T) {
			ondisk.ForceProcXattrs(c.proc)
			defer ondisk.ForceProcXattrs(false)
			dir := harness.ScratchFS(t, fstype)
			at := func(p string) string { return filepath.Join(dir, p) }
			must := func(err error) {
				t.Helper()
				if err != nil {
					t.Fatal(err)
				}
			}
			must(os.MkdirAll(at("etc/d"), 0o755))
			must(os.WriteFile(at("etc/d/f"), []byte("x"), 0o644))
			must(os.WriteFile(at("etc/plain"), []byte("x"), 0o644))
			must(os.WriteFile(at("etc/target"), []byte("x"), 0o644))
			must(os.Symlink("target", at("etc/link")))
			must(unix.Mkfifo(at("etc/fifo"), 0o644))
			named := []ondisk.ACLEntry{{Tag: ondisk.ACLUserObj, Perm: 7}, {Tag: ondisk.ACLUser, Perm: 6, ID: 65534},
				{Tag: ondisk.ACLGroupObj, Perm: 5}, {Tag: ondisk.ACLMask, Perm: 7}, {Tag: ondisk.ACLOther, Perm: 5}}
			must(unix.Setxattr(at("etc/d"), ondisk.XattrACLDefault, ondisk.EncodeACL(named), 0))
			must(unix.Setxattr(at("etc/d/f"), ondisk.XattrACLAccess, ondisk.EncodeACL(named), 0))
			must(unix.Setxattr(at("etc/d/f"), "user.note", []byte("hello"), 0))
			must(unix.Setxattr(at("etc/d/f"), "trusted.t", []byte("t"), 0))
			// On the target: were the link followed, these would show.
			must(unix.Setxattr(at("etc/target"), "user.behind", []byte("b"), 0))
			must(unix.Lsetxattr(at("etc/link"), "trusted.own", []byte("own"), 0))
			harness.SetInodeFlags(t, at("etc/d/f"), harness.FlagImmutable)
			defer harness.SetInodeFlags(t, at("etc/d/f"), 0)

			r, err := ondisk.OpenRoot(dir)
			must(err)
			defer r.Close()
			o := ondisk.NewObserver(r)
			defer o.Close()
			observe := func(p string, typ model.Type) ondisk.Observation {
				e := model.Entry{Kind: model.KindFile, Path: p, Type: typ}
				ob := o.Observe(&e)
				if ob.Err != nil || ob.Meta.Err != nil || !ob.Meta.Observed {
					t.Fatalf("%s: %v, %v, observed %v", p, ob.Err, ob.Meta.Err, ob.Meta.Observed)
				}
				return ob
			}
			f := observe("/etc/d/f", model.TypeRegular)
			if !f.Meta.Immutable || f.Meta.Append {
				t.Errorf("flags: immutable %v, append %v, want immutable only", f.Meta.Immutable, f.Meta.Append)
			}
			if v, ok := f.Meta.Get("user.note"); !ok || string(v) != "hello" {
				t.Errorf("user.note = %q, %v", v, ok)
			}
			if _, ok := f.Meta.Get("trusted.t"); !ok {
				t.Errorf("trusted.t not listed (as root)")
			}
			acc, ok := f.Meta.Get(ondisk.XattrACLAccess)
			if es, err := ondisk.ParseACL(acc); !ok || err != nil || len(ondisk.Named(es)) != 1 || ondisk.Named(es)[0].ID != 65534 {
				t.Errorf("access ACL %v (%v): want the named entry for 65534", es, err)
			}
			if f.Meta.ParentDefaultACL == nil {
				t.Errorf("the parent's default ACL was not read")
			}
			if p := observe("/etc/plain", model.TypeRegular); len(p.Meta.Xattrs) != 0 || p.Meta.Immutable || p.Meta.ParentDefaultACL != nil {
				t.Errorf("a plain file: %+v", p.Meta)
			}
			l := observe("/etc/link", model.TypeSymlink)
			if _, ok := l.Meta.Get("user.behind"); ok {
				t.Errorf("the symlink was followed: %+v", l.Meta.Xattrs)
			}
			if _, ok := l.Meta.Get("trusted.own"); !ok {
				t.Errorf("the symlink's own xattr is missing: %+v", l.Meta.Xattrs)
			}
			observe("/etc/fifo", model.TypeRegular) // returns: not opened for reading
		})
	}
}

// TestObserveXattrsReuse: an Observer reads every node's xattrs into
// buffers it keeps for the next node, and hands out copies: an observation
// is not changed by the next one, whatever it reads (more names, a value
// longer than the first guess, a listing longer than the first buffer),
// and the names come sorted, the values whole — by listxattrat, through
// /proc/self/fd, and through the descriptor that reads a declared content
// alike.
func TestObserveXattrsReuse(t *testing.T) {
	harness.RequireRoot(t, "setting trusted.* and security.* xattrs")
	for _, c := range []struct {
		name          string
		proc, content bool
	}{{"xattrat", false, false}, {"proc-self-fd", true, false}, {"content-fd", true, true}} {
		proc := c.proc
		t.Run(c.name, func(t *testing.T) {
			ondisk.ForceProcXattrs(proc)
			defer ondisk.ForceProcXattrs(false)
			dir := harness.ScratchFS(t, "ext4")
			at := func(p string) string { return filepath.Join(dir, p) }
			for _, f := range []string{"a", "b", "c", "d"} {
				if err := os.WriteFile(at(f), []byte("x"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			set := func(p, name string, v []byte) {
				t.Helper()
				if err := unix.Lsetxattr(at(p), name, v, 0); err != nil {
					t.Fatal(err)
				}
			}
			long := bytes.Repeat([]byte("v"), 2000) // past the first 256-byte guess
			set("a", "user.z", []byte("za"))
			set("a", "user.b", []byte("ba"))
			set("a", "user.empty", nil)
			var want []string
			for i := range 30 { // a listing past the first 1024 bytes
				n := fmt.Sprintf("user.a-name-of-forty-bytes-or-so-%02d", 29-i)
				set("b", n, []byte(n))
				want = append(want, n)
			}
			set("c", "user.long", long)
			slices.Sort(want)

			r, err := ondisk.OpenRoot(dir)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			o := ondisk.NewObserver(r)
			defer o.Close()
			observe := func(p string) ondisk.Meta {
				t.Helper()
				e := model.Entry{Kind: model.KindFile, Path: "/" + p, Type: model.TypeRegular}
				if c.content {
					// Read through /proc/self/fd were the descriptor not used
					// (ForceProcXattrs): either way the values must match.
					e.Content = &model.Content{Exact: []byte("x")}
				}
				ob := o.Observe(&e)
				if ob.Err != nil || ob.Meta.Err != nil || !ob.Meta.Observed {
					t.Fatalf("%s: %v, %v, observed %v", p, ob.Err, ob.Meta.Err, ob.Meta.Observed)
				}
				if c.content && ob.Content.State != ondisk.Equal {
					t.Fatalf("%s: content %v, want equal", p, ob.Content.State)
				}
				return ob.Meta
			}
			a := observe("a")
			show := func(m ondisk.Meta) string { return fmt.Sprintf("%q", m.Xattrs) }
			before := show(a)
			if wantA := `[{"user.b" "ba"} {"user.empty" ""} {"user.z" "za"}]`; before != wantA {
				t.Errorf("a: %s, want %s", before, wantA)
			}
			if v, ok := a.Get("user.empty"); !ok || v == nil || len(v) != 0 {
				t.Errorf("user.empty = %q, %v: want present and empty", v, ok)
			}
			b := observe("b")
			var names []string
			for _, x := range b.Xattrs {
				names = append(names, x.Name)
				if string(x.Value) != x.Name {
					t.Errorf("b: %s = %q", x.Name, x.Value)
				}
			}
			if !slices.Equal(names, want) {
				t.Errorf("b's names %q, want %q", names, want)
			}
			if c := observe("c"); !bytes.Equal(c.Xattrs[0].Value, long) {
				v := c.Xattrs[0].Value
				t.Errorf("user.long: %d bytes, want %d", len(v), len(long))
			}
			if d := observe("d"); len(d.Xattrs) != 0 {
				t.Errorf("d: %s, want none", show(d))
			}
			if after := show(a); after != before {
				t.Errorf("a's observation changed by the next ones: %s, was %s", after, before)
			}
			// Appending to a value must not run into the next one's.
			v, _ := a.Get("user.b")
			_ = append(v, "!!"...)
			if got, _ := a.Get("user.z"); string(got) != "za" {
				t.Errorf("user.z = %q after an append to user.b", got)
			}
		})
	}
}

// TestObserveSameXattrsShared: nodes observed one after the other each get
// their own xattrs, whether the last node's were the same (then shared) or
// differed by a value, a name, or a value read against one only listed.
func TestObserveSameXattrsShared(t *testing.T) {
	harness.RequireRoot(t, "setting security.selinux without SELinux")
	dir := t.TempDir()
	nodes := []struct {
		name string
		xs   map[string]string
	}{
		{"a", map[string]string{ondisk.XattrSELinux: "u:r:etc_t:s0"}},
		{"b", map[string]string{ondisk.XattrSELinux: "u:r:etc_t:s0"}},
		{"c", map[string]string{ondisk.XattrSELinux: "u:r:bin_t:s0"}},
		{"d", map[string]string{ondisk.XattrSELinux: "u:r:bin_t:s0", "user.note": "n"}},
		{"e", map[string]string{"user.note": "n", ondisk.XattrSELinux: "u:r:bin_t:s0"}},
		{"f", map[string]string{"user.other": "n", ondisk.XattrSELinux: "u:r:bin_t:s0"}},
		{"g", nil},
		{"h", map[string]string{ondisk.XattrSELinux: "u:r:etc_t:s0"}},
	}
	var entries []model.Entry
	for _, n := range nodes {
		p := filepath.Join(dir, n.name)
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		for k, v := range n.xs {
			if err := unix.Lsetxattr(p, k, []byte(v), 0); err != nil {
				t.Fatal(err)
			}
		}
		entries = append(entries, model.Entry{Kind: model.KindFile, Path: "/" + n.name, Type: model.TypeRegular,
			Content: &model.Content{Exact: []byte("x")}})
	}
	r, err := ondisk.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for _, noLabel := range []bool{false, true} {
		o := ondisk.NewObserver(r)
		o.NoLabel = noLabel
		for i, n := range nodes {
			ob := o.Observe(&entries[i])
			got := map[string]string{}
			for _, x := range ob.Meta.Xattrs {
				got[x.Name] = string(x.Value)
			}
			want := map[string]string{}
			for k, v := range n.xs {
				if noLabel && k == ondisk.XattrSELinux {
					v = "" // listed, not read
				}
				want[k] = v
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("noLabel %v: %s: xattrs %v, want %v", noLabel, n.name, got, want)
			}
		}
		o.Close()
	}
}
