package image

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/drift-monitor/drift-monitor/internal/drift"
	"github.com/drift-monitor/drift-monitor/internal/model"
	"github.com/drift-monitor/drift-monitor/internal/ondisk"
)

func TestShippedRuntimeList(t *testing.T) {
	rt := ShippedRuntime()
	if rt.Version < 1 || len(rt.Patterns) < 10 {
		t.Fatalf("shipped list: version %d, %d patterns", rt.Version, len(rt.Patterns))
	}
	for p, want := range map[string]string{
		"/etc/machine-id":                               "/etc/machine-id",
		"/etc/ssh/ssh_host_ed25519_key":                 "/etc/ssh/ssh_host_*",
		"/etc/pki/ca-trust/extracted/pem/tls-ca-bundle": "/etc/pki/ca-trust/extracted",
		"/etc/shadow-":                                  "/etc/shadow-",
		"/etc/ssh/sshd_config":                          "",
		"/etc/shadow":                                   "",
		"/etc/passwd":                                   "",
	} {
		if got := rt.Match(p); got != want {
			t.Errorf("Match(%s) = %q, want %q", p, got, want)
		}
	}
}

func TestParseRuntimeRefuses(t *testing.T) {
	for _, text := range []string{
		"/etc/x\n",                // no version first
		"version 1\nrelative\n",   // not absolute
		"version 1\n/usr/lib/x\n", // not under /etc
		"version 1\n/etc/[\n",     // bad pattern
		"version zero\n",
	} {
		if _, err := ParseRuntime("t", text); err == nil {
			t.Errorf("ParseRuntime(%q) took it", text)
		}
	}
}

func TestClassify(t *testing.T) {
	mode := uint32(0o644)
	entries := []model.Entry{
		{Kind: model.KindFile, Path: "/etc/chrony.conf", Type: model.TypeRegular, Mode: &mode},
		{Kind: model.KindFile, Path: "/etc/new/dir/file", Type: model.TypeRegular},
		{Kind: model.KindEnablement, Path: "/etc/systemd/system/kubelet.service", Unit: "kubelet.service", Type: model.TypeNone},
		{Kind: model.KindUser, Path: "/etc/passwd", User: "core", Type: model.TypeNone},
	}
	cl := NewClassifier(entries)
	link := &Node{Type: ondisk.Symlink, Target: "/etc/systemd/system/kubelet.service"}
	file := &Node{Type: ondisk.Regular}
	dir := &Node{Type: ondisk.Directory}
	cs := []Change{
		{Path: "/etc/chrony.conf", Op: Modified, What: WContent, Base: file, Live: file},
		{Path: "/etc/new", Op: Added, Live: dir},
		{Path: "/etc/new/dir", Op: Added, Live: dir},
		{Path: "/etc/ssh", Op: Modified, What: WMode, Base: dir, Live: dir}, // not the declared one's
		{Path: "/etc/systemd/system/multi-user.target.wants/kubelet.service", Op: Added, Live: link},
		{Path: "/etc/systemd/system/multi-user.target.wants/other.service", Op: Added, Live: link},
		{Path: "/etc/passwd", Op: Modified, What: WContent, Base: file, Live: file},
		{Path: "/etc/machine-id", Op: Added, Live: file},
		{Path: "/etc/broken", Op: Modified, Err: "permission denied"},
	}
	var got []string
	for _, d := range cl.Classify(context.Background(), cs) {
		got = append(got, string(d.Class)+" "+d.Path)
	}
	want := []string{
		"declared /etc/chrony.conf",
		"declared /etc/new",
		"declared /etc/new/dir",
		"undeclared /etc/ssh",
		"declared /etc/systemd/system/multi-user.target.wants/kubelet.service",
		"undeclared /etc/systemd/system/multi-user.target.wants/other.service",
		"undeclared /etc/passwd",
		"runtime /etc/machine-id",
		"undeclared /etc/broken",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("classes (-want +got):\n%s", diff)
	}
}

// TestUndeclaredDrift: the report names the path quoted, what differs,
// and never a content.
func TestUndeclaredDrift(t *testing.T) {
	d := Difference{Change: Change{Path: "/etc/ssh/sshd_config\x1b[2J", Op: Modified, What: WContent | WMode,
		Base: &Node{Type: ondisk.Regular, Mode: 0o600, Size: 10}, Live: &Node{Type: ondisk.Regular, Mode: 0o644, Size: 12}},
		Class: ClassUndeclared}
	dr := d.Drift("the booted deployment's /usr/etc")
	if dr.Kind != drift.Undeclared || dr.Entry != model.KindUndeclared || dr.Attribute != "mode,content" {
		t.Errorf("drift %+v", dr)
	}
	if strings.ContainsRune(dr.Message, 0x1b) {
		t.Errorf("control character in %q", dr.Message)
	}
	for _, w := range []string{"mode (0600 → 0644)", "content (10 → 12 bytes)", "undeclared change to"} {
		if !strings.Contains(dr.Message, w) {
			t.Errorf("message %q lacks %q", dr.Message, w)
		}
	}
}

// TestFirstBootRecord: a recorded path left as it was is first-boot; a
// later change to it is undeclared again; extending never replaces what
// is recorded; without the key's ID matching, contents never match.
func TestFirstBootRecord(t *testing.T) {
	root := baseTree(t)
	etc := filepath.Join(root, "etc")
	write(t, etc+"/hostname", "node-1\n")
	write(t, etc+"/motd", "first boot\n")
	r, err := ondisk.OpenRoot(root)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	ctx := context.Background()
	b := &Baseline{Kind: KindOstree, Tree: &Tree{Root: r, Base: UsrEtcDir, Live: EtcDir}}
	rc := &Recorder{Root: r, Key: model.NewKey([]byte("0123456789abcdef0123456789abcdef"))}
	const recPath = "/var/lib/drift-monitor/image-firstboot.json"
	n, err := RecordNow(ctx, r, b, rc, recPath)
	if err != nil || n != 2 {
		t.Fatalf("RecordNow = %d, %v; want 2 paths", n, err)
	}
	st, err := os.Stat(filepath.Join(root, recPath))
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("record: %v, %v", st, err)
	}
	classes := func(rc *Recorder) map[string]Class {
		rec, err := LoadRecord(r, recPath)
		if err != nil {
			t.Fatal(err)
		}
		cs, err := b.Diff(ctx, r)
		if err != nil {
			t.Fatal(err)
		}
		cl := NewClassifier(nil)
		cl.Record, cl.Recorder = rec, rc
		m := map[string]Class{}
		for _, d := range cl.Classify(ctx, cs) {
			m[d.Path] = d.Class
		}
		return m
	}
	if got := classes(rc); got["/etc/hostname"] != ClassFirstBoot || got["/etc/motd"] != ClassFirstBoot {
		t.Errorf("as recorded: %v", got)
	}
	write(t, etc+"/motd", "edited later\n")
	write(t, etc+"/added-later", "x")
	if got := classes(rc); got["/etc/motd"] != ClassUndeclared || got["/etc/hostname"] != ClassFirstBoot {
		t.Errorf("after a change: %v", got)
	}
	// Extending adds the new path, keeps motd's first-boot state.
	if n, err := RecordNow(ctx, r, b, rc, recPath); err != nil || n != 1 {
		t.Fatalf("extending: %d, %v; want 1 path", n, err)
	}
	if got := classes(rc); got["/etc/motd"] != ClassUndeclared || got["/etc/added-later"] != ClassFirstBoot {
		t.Errorf("after extending: %v", got)
	}
	other := &Recorder{Root: r, Key: model.NewKey([]byte("another key, another host......."))}
	if got := classes(other); got["/etc/hostname"] != ClassUndeclared {
		t.Errorf("another key: %v", got)
	}
	// A record others may write is refused.
	must(t, os.Chmod(filepath.Join(root, recPath), 0o666))
	if _, err := LoadRecord(r, recPath); err == nil {
		t.Error("a world-writable record was used")
	}
}
