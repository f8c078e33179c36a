package check

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/drift-monitor/drift-monitor/internal/ondisk"
	"github.com/drift-monitor/drift-monitor/internal/selinux"
)

// TestLabelPolicyRereadsOnChange: the policy is read once while its files
// stay the same, and again when one is replaced, appears or goes, or the
// config names another policy; the labels wanted follow it.
func TestLabelPolicyRereadsOnChange(t *testing.T) {
	dir := t.TempDir()
	write := func(p, data string) {
		t.Helper()
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		// A new inode each time, as a package update renames one in.
		tmp := full + ".new"
		if err := os.WriteFile(tmp, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, full); err != nil {
			t.Fatal(err)
		}
	}
	const fc = "etc/selinux/a/contexts/files/file_contexts"
	write("etc/selinux/config", "SELINUX=permissive\nSELINUXTYPE=a\n")
	write(fc, "/etc(/.*)? system_u:object_r:etc_t:s0\n")
	r, err := ondisk.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var p LabelPolicy
	want := func(step string, reads int, label string) {
		t.Helper()
		l := p.Load(r, nil, false)
		if p.Reads != reads {
			t.Errorf("%s: %d reads of the policy, want %d", step, p.Reads, reads)
		}
		if l == nil || l.contexts == nil {
			t.Fatalf("%s: no contexts (%+v)", step, l)
		}
		got, _ := l.memo.Lookup("/etc/x.conf", selinux.Regular)
		if got != label {
			t.Errorf("%s: /etc/x.conf wants %q, want %q", step, got, label)
		}
	}
	want("first load", 1, "system_u:object_r:etc_t:s0")
	want("unchanged", 1, "system_u:object_r:etc_t:s0")
	write(fc+".local", "/etc/x\\.conf system_u:object_r:local_t:s0\n")
	want(".local appears", 2, "system_u:object_r:local_t:s0")
	want("unchanged again", 2, "system_u:object_r:local_t:s0")
	if err := os.Remove(filepath.Join(dir, fc+".local")); err != nil {
		t.Fatal(err)
	}
	want(".local goes", 3, "system_u:object_r:etc_t:s0")
	write(fc, "/etc(/.*)? system_u:object_r:etc2_t:s0\n")
	want("file_contexts replaced", 4, "system_u:object_r:etc2_t:s0")
	write("etc/selinux/b/contexts/files/file_contexts", "/etc(/.*)? system_u:object_r:b_t:s0\n")
	write("etc/selinux/config", "SELINUX=permissive\nSELINUXTYPE=b\n")
	want("another policy", 5, "system_u:object_r:b_t:s0")
}

// TestLabelPolicyRetriesErrors: a policy that could not be read is read
// again at the next load, never remembered as broken.
func TestLabelPolicyRetriesErrors(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "etc/selinux"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "etc/selinux/config"), []byte("SELINUX=enforcing\nSELINUXTYPE=gone\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := ondisk.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var p LabelPolicy
	for i := 1; i <= 2; i++ {
		if l := p.Load(r, nil, false); l == nil || l.Err == nil {
			t.Fatalf("load %d: %+v, want an error", i, l)
		}
		if p.Reads != i {
			t.Errorf("load %d: %d reads, want %d", i, p.Reads, i)
		}
	}
}
