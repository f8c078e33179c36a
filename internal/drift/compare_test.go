package drift_test

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	chk "github.com/drift-monitor/drift-monitor/internal/check"
	"github.com/drift-monitor/drift-monitor/internal/desired/statekey"
	"github.com/drift-monitor/drift-monitor/internal/drift"
	"github.com/drift-monitor/drift-monitor/internal/model"
	"github.com/drift-monitor/drift-monitor/internal/ondisk"
	"github.com/drift-monitor/drift-monitor/internal/statecache"
	"github.com/drift-monitor/drift-monitor/test/harness"
	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"
)

func ptr[T any](v T) *T { return &v }

// fixture builds a tree inside a root; paths are host paths and modes are
// chmod(2) bits (07777).
type fixture struct {
	t    *testing.T
	root string
}

func (f *fixture) path(p string) string { return filepath.Join(f.root, p) }

func (f *fixture) parent(p string) {
	f.t.Helper()
	if err := os.MkdirAll(filepath.Dir(f.path(p)), 0o755); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) dir(p string, mode uint32) {
	f.t.Helper()
	if err := os.MkdirAll(f.path(p), 0o755); err != nil {
		f.t.Fatal(err)
	}
	f.chmod(p, mode)
}

func (f *fixture) file(p, content string, mode uint32) {
	f.t.Helper()
	f.parent(p)
	if err := os.WriteFile(f.path(p), []byte(content), 0o600); err != nil {
		f.t.Fatal(err)
	}
	f.chmod(p, mode)
}

func (f *fixture) chmod(p string, mode uint32) {
	f.t.Helper()
	if err := unix.Chmod(f.path(p), mode); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) symlink(p, target string) {
	f.t.Helper()
	f.parent(p)
	if err := os.Symlink(target, f.path(p)); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) link(p, target string) {
	f.t.Helper()
	f.parent(p)
	if err := os.Link(f.path(target), f.path(p)); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) fifo(p string) {
	f.t.Helper()
	f.parent(p)
	if err := unix.Mkfifo(f.path(p), 0o644); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) chown(p string, uid, gid int) {
	f.t.Helper()
	harness.RequireRoot(f.t, "changing owners")
	if err := os.Lchown(f.path(p), uid, gid); err != nil {
		f.t.Fatal(err)
	}
}

// check observes e in root and compares.
func check(t *testing.T, root string, e model.Entry) []drift.Drift {
	t.Helper()
	return observe(t, root, e.Path, func(_ *ondisk.Root, o *ondisk.Observer) []drift.Drift {
		ob := o.Observe(&e)
		return drift.Compare(&e, &ob, testKey)
	})
}

// checkStored checks st's one entry as check does, with its store: the
// declared bytes of a Stored content are read back for a diff, and only
// then.
func checkStored(t *testing.T, root string, st model.State) []drift.Drift {
	t.Helper()
	return observe(t, root, st.Entries[0].Path, func(r *ondisk.Root, o *ondisk.Observer) []drift.Drift {
		c := &chk.Checker{Root: r, Key: testKey, Store: st.Store, Declared: ondisk.Declare(st.Entries)}
		return c.Outcome(o, &st.Entries[0], nil).Drift
	})
}

// observe runs fn with an observer of root, with a deadline: a FIFO opened
// for reading would block forever.
func observe(t *testing.T, root, path string, fn func(*ondisk.Root, *ondisk.Observer) []drift.Drift) []drift.Drift {
	t.Helper()
	r, err := ondisk.OpenRoot(root)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	o := ondisk.NewObserver(r)
	defer o.Close()
	done := make(chan []drift.Drift, 1)
	go func() { done <- fn(r, o) }()
	select {
	case d := <-done:
		inRows(t, d)
		return d
	case <-time.After(10 * time.Second):
		t.Fatalf("checking %s blocked", path)
	}
	return nil
}

// inRows fails t for a drift whose kind its entry's row of model.Kinds
// does not list: a state declaring the entry would export no series of
// drift_monitor_drift_entries for it until it appears.
func inRows(t *testing.T, ds []drift.Drift) {
	t.Helper()
	for _, d := range ds {
		m := d.Entry.Means()
		if !slices.Contains(m.Drift, string(d.Kind)) {
			t.Errorf("a %s entry reported %s drift, which its row of model.Kinds does not list", d.Entry, d.Kind)
		}
		if m.ValueFiles != nil && !slices.Contains(m.ValueFiles, d.Path) {
			t.Errorf("a %s entry reported %s drift at %s, which its row of model.Kinds does not list among its files", d.Entry, d.Kind, d.Path)
		}
	}
}

// expect builds the drift an entry is expected to produce.
func expect(e model.Entry, k drift.Kind, msg, want, got string) drift.Drift {
	return drift.Drift{Kind: k, Entry: e.Kind, Path: e.Path, Unit: e.Unit, User: e.User,
		Message: msg, Want: want, Got: got, EntryID: e.ID()}
}

func withDiff(d drift.Drift, diff string) drift.Drift { d.Diff = diff; return d }

func digest(s string) string { h := sha256.Sum256([]byte(s)); return hex.EncodeToString(h[:]) }

// describe is how a content that may be shown is described: its size and
// plain SHA-256.
func describe(s string) string { return fmt.Sprintf("%d bytes, sha256:%s", len(s), digest(s)) }

// testKey is the host's digest key in these tests; keyed(s) describes a
// content that must not be shown: its size and HMAC-SHA256 under testKey of
// its SHA-256.
var testKey = model.NewKey([]byte("0123456789abcdef0123456789abcdef"))

func keyed(s string) string {
	sum := sha256.Sum256([]byte(s))
	m := hmac.New(sha256.New, []byte("0123456789abcdef0123456789abcdef"))
	m.Write(sum[:])
	return fmt.Sprintf("%d bytes, hmac-sha256:%s", len(s), hex.EncodeToString(m.Sum(nil)))
}

func file(p string, mode uint32, content string) model.Entry {
	return model.Entry{Kind: model.KindFile, Path: p, Type: model.TypeRegular, Mode: ptr(mode),
		UID: ptr(0), GID: ptr(0), Content: &model.Content{Exact: []byte(content)}}
}

func dir(p string, mode uint32) model.Entry {
	return model.Entry{Kind: model.KindDirectory, Path: p, Type: model.TypeDirectory, Mode: ptr(mode), UID: ptr(0), GID: ptr(0)}
}

func symlink(p, target string) model.Entry {
	return model.Entry{Kind: model.KindLink, Path: p, Type: model.TypeSymlink, Target: target}
}

func hardlink(p, target string) model.Entry {
	return model.Entry{Kind: model.KindHardLink, Path: p, Type: model.TypeHardLink, Target: target}
}

func mask(unit string) model.Entry {
	return model.Entry{Kind: model.KindMask, Path: "/etc/systemd/system/" + unit, Unit: unit, Type: model.TypeSymlink, Target: "/dev/null"}
}

func unmask(unit string) model.Entry {
	return model.Entry{Kind: model.KindUnmask, Path: "/etc/systemd/system/" + unit, Unit: unit, Type: model.TypeNotMasked}
}

func withOwner(e model.Entry, uid, gid int) model.Entry { e.UID, e.GID = &uid, &gid; return e }

func TestCompareOnDisk(t *testing.T) {
	chrony := file("/etc/chrony.conf", 0o644, "server a.example.com iburst\nmakestep 1.0 3\n")
	secret := file("/etc/secret.key", 0o600, "MARKER-WANT-SECRET\n")
	unit := model.Entry{Kind: model.KindUnit, Path: "/etc/systemd/system/app.service", Unit: "app.service",
		Type: model.TypeRegular, Mode: ptr[uint32](0o644), UID: ptr(0), GID: ptr(0),
		Content: &model.Content{Exact: []byte("[Service]\nExecStart=/usr/bin/app\n")}}
	dropin := model.Entry{Kind: model.KindDropin, Path: "/etc/systemd/system/app.service.d/10-env.conf", Unit: "app.service",
		Type: model.TypeRegular, Mode: ptr[uint32](0o644), UID: ptr(0), GID: ptr(0),
		Content: &model.Content{Exact: []byte("[Service]\nEnvironment=A=1\n")}}
	keys := model.Entry{Kind: model.KindSSHKeys, Path: "/var/home/core/.ssh/authorized_keys.d/ignition", User: "core",
		Type: model.TypeRegular, Mode: ptr[uint32](0o600), UID: ptr(0), GID: ptr(0),
		Content: &model.Content{Exact: []byte("ssh-ed25519 AAAA-MARKER-WANT-KEY core\n")}}
	noOwnerProblem := file("/etc/owned", 0o644, "")
	noOwnerProblem.UID, noOwnerProblem.OwnerProblem = nil, `user "mallory" does not exist in the target's passwd`
	noGroupProblem := file("/etc/owned", 0o644, "")
	noGroupProblem.GID, noGroupProblem.GroupProblem = nil, `group "evil" does not exist in the target's group file`
	big := strings.Repeat("0123456789abcdef", 5<<20/16)
	bigLast := big[:len(big)-1] + "X"
	base := "fetched base\n"
	h256, h512 := sha256.Sum256([]byte(base)), sha512.Sum512([]byte(base))
	hashed := func(algo, hexSum, suffix string) model.Entry {
		e := file("/etc/hashed", 0o644, "")
		e.Content = &model.Content{Hash: &model.Hash{Algorithm: algo, Hex: hexSum}, Suffix: []byte(suffix)}
		return e
	}
	suffixOnly := file("/etc/hosts", 0o644, "")
	suffixOnly.Content = &model.Content{Suffix: []byte("10.0.0.1 db\n")}
	binary := file("/usr/lib/blob", 0o644, "\x00\x01\x02")

	tests := []struct {
		name  string
		setup func(f *fixture)
		entry model.Entry
		want  []drift.Drift
	}{
		// Regular files.
		{
			name:  "file equal",
			setup: func(f *fixture) { f.file(chrony.Path, string(chrony.Content.Exact), 0o644) },
			entry: chrony,
		},
		{
			name:  "file content differs, same size",
			setup: func(f *fixture) { f.file(chrony.Path, "server b.example.com iburst\nmakestep 1.0 3\n", 0o644) },
			entry: chrony,
			want: []drift.Drift{withDiff(expect(chrony, drift.Content, `content mismatch for file "/etc/chrony.conf"`,
				describe(string(chrony.Content.Exact)), describe("server b.example.com iburst\nmakestep 1.0 3\n")),
				"--- /etc/chrony.conf (want)\n+++ /etc/chrony.conf (got)\n@@ -1,2 +1,2 @@\n-server a.example.com iburst\n+server b.example.com iburst\n makestep 1.0 3\n")},
		},
		{
			name:  "file content differs, different size",
			setup: func(f *fixture) { f.file(chrony.Path, "server a.example.com iburst\n", 0o644) },
			entry: chrony,
			want: []drift.Drift{withDiff(expect(chrony, drift.Content, `content mismatch for file "/etc/chrony.conf"`,
				describe(string(chrony.Content.Exact)), describe("server a.example.com iburst\n")),
				"--- /etc/chrony.conf (want)\n+++ /etc/chrony.conf (got)\n@@ -1,2 +1 @@\n server a.example.com iburst\n-makestep 1.0 3\n")},
		},
		{
			name:  "file emptied",
			setup: func(f *fixture) { f.file(chrony.Path, "", 0o644) },
			entry: chrony,
			want: []drift.Drift{withDiff(expect(chrony, drift.Content, `content mismatch for file "/etc/chrony.conf"`,
				describe(string(chrony.Content.Exact)), describe("")),
				"--- /etc/chrony.conf (want)\n+++ /etc/chrony.conf (got)\n@@ -1,2 +0,0 @@\n-server a.example.com iburst\n-makestep 1.0 3\n")},
		},
		{
			name:  "empty file equal",
			setup: func(f *fixture) { f.file("/etc/empty", "", 0o644) },
			entry: file("/etc/empty", 0o644, ""),
		},
		{
			name:  "5 MiB file differing in its last byte: content drift, no diff",
			setup: func(f *fixture) { f.file("/var/big", bigLast, 0o644) },
			entry: file("/var/big", 0o644, big),
			want: []drift.Drift{expect(file("/var/big", 0o644, big), drift.Content, `content mismatch for file "/var/big"`,
				describe(big), fmt.Sprintf("%d bytes", len(bigLast)))}, // too large to be read for a digest
		},
		{
			name:  "5 MiB file equal",
			setup: func(f *fixture) { f.file("/var/big", big, 0o644) },
			entry: file("/var/big", 0o644, big),
		},
		{
			name:  "binary content: no diff",
			setup: func(f *fixture) { f.file(binary.Path, "\x00\x01\x03", 0o644) },
			entry: binary,
			want: []drift.Drift{expect(binary, drift.Content, `content mismatch for file "/usr/lib/blob"`,
				describe("\x00\x01\x02"), describe("\x00\x01\x03"))},
		},
		{
			name:  "sha256 with an appended suffix, equal",
			setup: func(f *fixture) { f.file("/etc/hashed", base+"tail", 0o644) },
			entry: hashed("sha256", hex.EncodeToString(h256[:]), "tail"),
		},
		{
			name:  "sha512, equal",
			setup: func(f *fixture) { f.file("/etc/hashed", base, 0o644) },
			entry: hashed("sha512", hex.EncodeToString(h512[:]), ""),
		},
		{
			name:  "sha512, differs",
			setup: func(f *fixture) { f.file("/etc/hashed", "other\n", 0o644) },
			entry: hashed("sha512", hex.EncodeToString(h512[:]), ""),
			want: []drift.Drift{expect(hashed("sha512", hex.EncodeToString(h512[:]), ""), drift.Content, `content mismatch for file "/etc/hashed"`,
				"sha512-"+hex.EncodeToString(h512[:]), describe("other\n"))},
		},
		{
			name:  "sha256 right, suffix wrong",
			setup: func(f *fixture) { f.file("/etc/hashed", base+"TAIL", 0o644) },
			entry: hashed("sha256", hex.EncodeToString(h256[:]), "tail"),
			want: []drift.Drift{expect(hashed("sha256", hex.EncodeToString(h256[:]), "tail"), drift.Content, `content mismatch for file "/etc/hashed"`,
				"sha256-"+hex.EncodeToString(h256[:])+" followed by 4 appended bytes", describe(base+"TAIL"))},
		},
		{
			name:  "suffix only, equal",
			setup: func(f *fixture) { f.file("/etc/hosts", "127.0.0.1 localhost\n10.0.0.1 db\n", 0o644) },
			entry: suffixOnly,
		},
		{
			name:  "suffix only, differs",
			setup: func(f *fixture) { f.file("/etc/hosts", "127.0.0.1 localhost\n", 0o644) },
			entry: suffixOnly,
			want: []drift.Drift{expect(suffixOnly, drift.Content, `content mismatch for file "/etc/hosts"`,
				"ending with 12 bytes, sha256:"+digest("10.0.0.1 db\n"), describe("127.0.0.1 localhost\n"))},
		},
		{
			name:  "mode",
			setup: func(f *fixture) { f.file(chrony.Path, string(chrony.Content.Exact), 0o664) },
			entry: chrony,
			want:  []drift.Drift{expect(chrony, drift.Mode, `mode mismatch for file "/etc/chrony.conf": want 0644, got 0664`, "0644", "0664")},
		},
		{
			name:  "setuid lost",
			setup: func(f *fixture) { f.file("/usr/bin/x", "", 0o755) },
			entry: file("/usr/bin/x", 0o4755, ""),
			want:  []drift.Drift{expect(file("/usr/bin/x", 0o4755, ""), drift.Mode, `mode mismatch for file "/usr/bin/x": want 4755, got 0755`, "4755", "0755")},
		},
		{
			name:  "setgid gained",
			setup: func(f *fixture) { f.file("/usr/bin/x", "", 0o2755) },
			entry: file("/usr/bin/x", 0o755, ""),
			want:  []drift.Drift{expect(file("/usr/bin/x", 0o755, ""), drift.Mode, `mode mismatch for file "/usr/bin/x": want 0755, got 2755`, "0755", "2755")},
		},
		{
			name:  "declared setuid a spec does not apply: absent on disk",
			setup: func(f *fixture) { f.file("/usr/bin/x", "", 0o755) },
			entry: optionalBits(file("/usr/bin/x", 0o755, ""), 0o4000),
		},
		{
			name:  "declared setuid a spec does not apply: present on disk",
			setup: func(f *fixture) { f.file("/usr/bin/x", "", 0o4755) },
			entry: optionalBits(file("/usr/bin/x", 0o755, ""), 0o4000),
		},
		{
			name:  "declared setuid a spec does not apply: setgid gained",
			setup: func(f *fixture) { f.file("/usr/bin/x", "", 0o6755) },
			entry: optionalBits(file("/usr/bin/x", 0o755, ""), 0o4000),
			want: []drift.Drift{expect(optionalBits(file("/usr/bin/x", 0o755, ""), 0o4000), drift.Mode,
				`mode mismatch for file "/usr/bin/x": want 0755 (or with bits 4000, declared but not applied by the spec), got 6755`, "0755", "6755")},
		},
		{
			name:  "sticky bit lost on a directory",
			setup: func(f *fixture) { f.dir("/srv/tmp", 0o777) },
			entry: dir("/srv/tmp", 0o1777),
			want:  []drift.Drift{expect(dir("/srv/tmp", 0o1777), drift.Mode, `mode mismatch for directory "/srv/tmp": want 1777, got 0777`, "1777", "0777")},
		},
		{
			name:  "owner",
			setup: func(f *fixture) { f.file("/etc/owned", "", 0o644); f.chown("/etc/owned", 1000, 0) },
			entry: file("/etc/owned", 0o644, ""),
			want:  []drift.Drift{expect(file("/etc/owned", 0o644, ""), drift.Owner, `owner mismatch for file "/etc/owned": want uid 0, got uid 1000`, "0", "1000")},
		},
		{
			name:  "group",
			setup: func(f *fixture) { f.file("/etc/owned", "", 0o644); f.chown("/etc/owned", 1000, 10) },
			entry: withOwner(file("/etc/owned", 0o644, ""), 1000, 0),
			want: []drift.Drift{expect(withOwner(file("/etc/owned", 0o644, ""), 1000, 0), drift.Group,
				`group mismatch for file "/etc/owned": want gid 0, got gid 10`, "0", "10")},
		},
		{
			name:  "owner declared by a name the target does not know",
			setup: func(f *fixture) { f.file("/etc/owned", "", 0o644) },
			entry: noOwnerProblem,
			want: []drift.Drift{expect(noOwnerProblem, drift.Owner,
				`owner mismatch for file "/etc/owned": user "mallory" does not exist in the target's passwd`, "", "0:0")},
		},
		{
			name:  "group declared by a name the target does not know",
			setup: func(f *fixture) { f.file("/etc/owned", "", 0o644) },
			entry: noGroupProblem,
			want: []drift.Drift{expect(noGroupProblem, drift.Group,
				`group mismatch for file "/etc/owned": group "evil" does not exist in the target's group file`, "", "0")},
		},
		{
			name:  "mode, owner and content at once",
			setup: func(f *fixture) { f.file(chrony.Path, "x\n", 0o666); f.chown(chrony.Path, 5, 6) },
			entry: chrony,
			want: []drift.Drift{
				expect(chrony, drift.Mode, `mode mismatch for file "/etc/chrony.conf": want 0644, got 0666`, "0644", "0666"),
				expect(chrony, drift.Owner, `owner mismatch for file "/etc/chrony.conf": want uid 0, got uid 5`, "0", "5"),
				expect(chrony, drift.Group, `group mismatch for file "/etc/chrony.conf": want gid 0, got gid 6`, "0", "6"),
				withDiff(expect(chrony, drift.Content, `content mismatch for file "/etc/chrony.conf"`, describe(string(chrony.Content.Exact)), describe("x\n")),
					"--- /etc/chrony.conf (want)\n+++ /etc/chrony.conf (got)\n@@ -1,2 +1 @@\n-server a.example.com iburst\n-makestep 1.0 3\n+x\n"),
			},
		},

		// What stands at the path.
		{
			name:  "missing",
			setup: func(f *fixture) { f.dir("/etc", 0o755) },
			entry: chrony,
			want:  []drift.Drift{expect(chrony, drift.Missing, `file "/etc/chrony.conf" does not exist`, "regular file", "nothing")},
		},
		{
			name:  "missing parent",
			setup: func(f *fixture) {},
			entry: file("/etc/a/b/c", 0o644, ""),
			want:  []drift.Drift{expect(file("/etc/a/b/c", 0o644, ""), drift.Missing, `file "/etc/a/b/c" does not exist`, "regular file", "nothing")},
		},
		{
			name:  "parent is a file",
			setup: func(f *fixture) { f.file("/etc/a", "", 0o644) },
			entry: file("/etc/a/b", 0o644, ""),
			want:  []drift.Drift{expect(file("/etc/a/b", 0o644, ""), drift.Missing, `file "/etc/a/b" does not exist`, "regular file", "nothing")},
		},
		{
			name:  "file became a directory",
			setup: func(f *fixture) { f.dir(chrony.Path, 0o755) },
			entry: chrony,
			want: []drift.Drift{expect(chrony, drift.Type,
				`type mismatch for file "/etc/chrony.conf": want regular file, got directory`, "regular file", "directory")},
		},
		{
			name: "file became a symlink (even to the right content)",
			setup: func(f *fixture) {
				f.file("/usr/etc/chrony.conf", string(chrony.Content.Exact), 0o644)
				f.symlink(chrony.Path, "/usr/etc/chrony.conf")
			},
			entry: chrony,
			want: []drift.Drift{expect(chrony, drift.Type,
				`type mismatch for file "/etc/chrony.conf": want regular file, got symbolic link`, "regular file", "symbolic link")},
		},
		{
			name:  "FIFO where a file is declared: reported, never opened",
			setup: func(f *fixture) { f.fifo(chrony.Path) },
			entry: chrony,
			want: []drift.Drift{expect(chrony, drift.Type,
				`type mismatch for file "/etc/chrony.conf": want regular file, got special file`, "regular file", "special file")},
		},
		{
			name:  "directory became a file",
			setup: func(f *fixture) { f.file("/var/lib/app", "", 0o755) },
			entry: dir("/var/lib/app", 0o755),
			want: []drift.Drift{expect(dir("/var/lib/app", 0o755), drift.Type,
				`type mismatch for directory "/var/lib/app": want directory, got regular file`, "directory", "regular file")},
		},
		{
			name:  "directory equal",
			setup: func(f *fixture) { f.dir("/var/lib/app", 0o750) },
			entry: dir("/var/lib/app", 0o750),
		},
		{
			name:  "symlink became a file",
			setup: func(f *fixture) { f.file("/etc/localtime", "TZif", 0o644) },
			entry: symlink("/etc/localtime", "../usr/share/zoneinfo/UTC"),
			want: []drift.Drift{expect(symlink("/etc/localtime", "../usr/share/zoneinfo/UTC"), drift.Type,
				`type mismatch for link "/etc/localtime": want symbolic link, got regular file`, "symbolic link", "regular file")},
		},
		{
			name:  "symlink equal, target as written (dangling is fine)",
			setup: func(f *fixture) { f.symlink("/etc/localtime", "../usr/share/zoneinfo/UTC") },
			entry: symlink("/etc/localtime", "../usr/share/zoneinfo/UTC"),
		},
		{
			name:  "symlink retargeted",
			setup: func(f *fixture) { f.symlink("/etc/localtime", "/usr/share/zoneinfo/UTC") },
			entry: symlink("/etc/localtime", "../usr/share/zoneinfo/UTC"),
			want: []drift.Drift{expect(symlink("/etc/localtime", "../usr/share/zoneinfo/UTC"), drift.Target,
				`target mismatch for link "/etc/localtime": want "../usr/share/zoneinfo/UTC", got "/usr/share/zoneinfo/UTC"`,
				"../usr/share/zoneinfo/UTC", "/usr/share/zoneinfo/UTC")},
		},
		{
			name:  "symlink owner, when declared",
			setup: func(f *fixture) { f.symlink("/etc/l", "x"); f.chown("/etc/l", 7, 0) },
			entry: withOwner(symlink("/etc/l", "x"), 0, 0),
			want: []drift.Drift{expect(withOwner(symlink("/etc/l", "x"), 0, 0), drift.Owner,
				`owner mismatch for link "/etc/l": want uid 0, got uid 7`, "0", "7")},
		},
		{
			name: "absolute symlink in a parent resolves inside the root",
			setup: func(f *fixture) {
				f.file("/var/home/core/.ssh/authorized_keys.d/ignition", string(keys.Content.Exact), 0o600)
				f.symlink("/home", "/var/home")
			},
			entry: func() model.Entry { e := keys; e.Path = "/home/core/.ssh/authorized_keys.d/ignition"; return e }(),
		},
		{
			name: "symlink climbing out with .. stays inside the root",
			setup: func(f *fixture) {
				f.file(chrony.Path, string(chrony.Content.Exact), 0o644)
				f.symlink("/a/up", "../../../../../../../../../../..")
			},
			entry: func() model.Entry { e := chrony; e.Path = "/a/up/etc/chrony.conf"; return e }(),
		},

		// Hard links.
		{
			name:  "hard link sharing the inode",
			setup: func(f *fixture) { f.file("/etc/target", "t", 0o644); f.link("/etc/hard", "/etc/target") },
			entry: hardlink("/etc/hard", "/etc/target"),
		},
		{
			// link(2) does not follow a symlink: the link is a symlink too.
			name:  "hard link to a symbolic link, sharing its inode",
			setup: func(f *fixture) { f.symlink("/etc/sym", "target"); f.link("/etc/hard", "/etc/sym") },
			entry: hardlink("/etc/hard", "/etc/sym"),
		},
		{
			name:  "hard link to a fifo, sharing its inode",
			setup: func(f *fixture) { f.fifo("/etc/fifo"); f.link("/etc/hard", "/etc/fifo") },
			entry: hardlink("/etc/hard", "/etc/fifo"),
		},
		{
			name:  "hard link to a symbolic link replaced by an identical symlink",
			setup: func(f *fixture) { f.symlink("/etc/sym", "target"); f.symlink("/etc/hard", "target") },
			entry: hardlink("/etc/hard", "/etc/sym"),
			want: []drift.Drift{expect(hardlink("/etc/hard", "/etc/sym"), drift.HardLink,
				`hard link "/etc/hard" does not share an inode with "/etc/sym"`, "/etc/sym", "another inode")},
		},
		{
			name:  "hard link to a symbolic link replaced by a regular file",
			setup: func(f *fixture) { f.symlink("/etc/sym", "target"); f.file("/etc/hard", "t", 0o644) },
			entry: hardlink("/etc/hard", "/etc/sym"),
			want: []drift.Drift{expect(hardlink("/etc/hard", "/etc/sym"), drift.Type,
				`type mismatch for hard link "/etc/hard": want symbolic link, got regular file`, "symbolic link", "regular file")},
		},
		{
			name:  "hard link broken into a copy",
			setup: func(f *fixture) { f.file("/etc/target", "t", 0o644); f.file("/etc/hard", "t", 0o644) },
			entry: hardlink("/etc/hard", "/etc/target"),
			want: []drift.Drift{expect(hardlink("/etc/hard", "/etc/target"), drift.HardLink,
				`hard link "/etc/hard" does not share an inode with "/etc/target"`, "/etc/target", "another inode")},
		},
		{
			name:  "hard link whose target is gone",
			setup: func(f *fixture) { f.file("/etc/hard", "t", 0o644) },
			entry: hardlink("/etc/hard", "/etc/target"),
			want: []drift.Drift{expect(hardlink("/etc/hard", "/etc/target"), drift.HardLink,
				`hard link "/etc/hard" does not share an inode with "/etc/target": the target does not exist`, "/etc/target", "")},
		},
		{
			name:  "hard link missing",
			setup: func(f *fixture) { f.file("/etc/target", "t", 0o644) },
			entry: hardlink("/etc/hard", "/etc/target"),
			want: []drift.Drift{expect(hardlink("/etc/hard", "/etc/target"), drift.Missing,
				`hard link "/etc/hard" does not exist`, "regular file", "nothing")},
		},

		// Units.
		{
			name:  "unit contents differ",
			setup: func(f *fixture) { f.file(unit.Path, "[Service]\nExecStart=/usr/bin/other\n", 0o644) },
			entry: unit,
			want: []drift.Drift{withDiff(expect(unit, drift.Content, `content mismatch for unit "app.service" ("/etc/systemd/system/app.service")`,
				describe(string(unit.Content.Exact)), describe("[Service]\nExecStart=/usr/bin/other\n")),
				"--- /etc/systemd/system/app.service (want)\n+++ /etc/systemd/system/app.service (got)\n@@ -1,2 +1,2 @@\n [Service]\n-ExecStart=/usr/bin/app\n+ExecStart=/usr/bin/other\n")},
		},
		{
			name:  "drop-in missing",
			setup: func(f *fixture) { f.file(unit.Path, string(unit.Content.Exact), 0o644) },
			entry: dropin,
			want: []drift.Drift{expect(dropin, drift.Missing, `drop-in "/etc/systemd/system/app.service.d/10-env.conf" does not exist`,
				"regular file", "nothing")},
		},
		{
			name:  "masked",
			setup: func(f *fixture) { f.symlink("/etc/systemd/system/bad.service", "/dev/null") },
			entry: mask("bad.service"),
		},
		{
			name:  "mask retargeted",
			setup: func(f *fixture) { f.symlink("/etc/systemd/system/bad.service", "/usr/lib/systemd/system/bad.service") },
			entry: mask("bad.service"),
			want: []drift.Drift{expect(mask("bad.service"), drift.Target,
				`unit "bad.service" is not masked: "/etc/systemd/system/bad.service" points to "/usr/lib/systemd/system/bad.service", want "/dev/null"`,
				"/dev/null", "/usr/lib/systemd/system/bad.service")},
		},
		{
			name:  "mask removed",
			setup: func(f *fixture) { f.dir("/etc/systemd/system", 0o755) },
			entry: mask("bad.service"),
			want: []drift.Drift{expect(mask("bad.service"), drift.Unmasked,
				`unit "bad.service" is not masked: want "/etc/systemd/system/bad.service" linked to /dev/null, got nothing`, "masked", "nothing")},
		},
		{
			name:  "mask replaced by a unit file",
			setup: func(f *fixture) { f.file("/etc/systemd/system/bad.service", "[Unit]\n", 0o644) },
			entry: mask("bad.service"),
			want: []drift.Drift{expect(mask("bad.service"), drift.Unmasked,
				`unit "bad.service" is not masked: want "/etc/systemd/system/bad.service" linked to /dev/null, got a regular file`, "masked", "regular file")},
		},
		{
			name:  "unmask: nothing there",
			setup: func(f *fixture) {},
			entry: unmask("x.service"),
		},
		{
			name:  "unmask: a unit file there",
			setup: func(f *fixture) { f.file("/etc/systemd/system/x.service", "[Unit]\n", 0o644) },
			entry: unmask("x.service"),
		},
		{
			name:  "unmask: masked again",
			setup: func(f *fixture) { f.symlink("/etc/systemd/system/x.service", "/dev/null") },
			entry: unmask("x.service"),
			want:  []drift.Drift{expect(unmask("x.service"), drift.Masked, `unit "x.service" is masked, want unmasked`, "unmasked", "masked")},
		},

		// Secrets and errors.
		{
			name:  "secret content differs: sizes and digests only",
			setup: func(f *fixture) { f.file(secret.Path, "MARKER-GOT-SECRET!\n", 0o600) },
			entry: secret,
			want: []drift.Drift{expect(secret, drift.Content, `content mismatch for file "/etc/secret.key"`,
				keyed("MARKER-WANT-SECRET\n"), keyed("MARKER-GOT-SECRET!\n"))},
		},
		{
			name:  "world-readable in the config, 0600 on disk: no bytes shown",
			setup: func(f *fixture) { f.file(chrony.Path, "MARKER-GOT-SECRET\n", 0o600) },
			entry: chrony,
			want: []drift.Drift{
				expect(chrony, drift.Mode, `mode mismatch for file "/etc/chrony.conf": want 0644, got 0600`, "0644", "0600"),
				expect(chrony, drift.Content, `content mismatch for file "/etc/chrony.conf"`,
					keyed(string(chrony.Content.Exact)), keyed("MARKER-GOT-SECRET\n")),
			},
		},
		{
			name:  "SSH keys differ: no key material shown",
			setup: func(f *fixture) { f.file(keys.Path, "ssh-ed25519 AAAA-MARKER-GOT-KEY mallory\n", 0o600) },
			entry: keys,
			want: []drift.Drift{expect(keys, drift.Content, `content mismatch for SSH keys of user "core" ("/var/home/core/.ssh/authorized_keys.d/ignition")`,
				keyed(string(keys.Content.Exact)), keyed("ssh-ed25519 AAAA-MARKER-GOT-KEY mallory\n"))},
		},
		{
			name: "parent swapped for a symlink into a directory only root may enter",
			setup: func(f *fixture) {
				f.file("/root/private/chrony.conf", "MARKER-GOT-BEHIND-THE-LINK\n", 0o644)
				f.chmod("/root/private", 0o700)
				f.symlink("/etc", "/root/private")
			},
			entry: chrony,
			want: []drift.Drift{expect(chrony, drift.Type, `type mismatch for file "/etc/chrony.conf": "/etc": want directory, got symbolic link to "/root/private"`,
				"directory", "symbolic link")},
		},
		{
			name:  "parent cannot be examined",
			setup: func(f *fixture) { f.symlink("/etc", "/etc") },
			entry: chrony,
			want: []drift.Drift{expect(chrony, drift.Unreadable,
				`cannot examine file "/etc/chrony.conf": too many levels of symbolic links`, "", "")},
		},
		{
			name:  "hard link target cannot be examined",
			setup: func(f *fixture) { f.file("/etc/hard", "", 0o644); f.symlink("/loop", "/loop") },
			entry: hardlink("/etc/hard", "/loop/target"),
			want: []drift.Drift{expect(hardlink("/etc/hard", "/loop/target"), drift.Unreadable,
				`cannot examine the target "/loop/target" of hard link "/etc/hard": too many levels of symbolic links`, "", "")},
		},
		{
			name:  "unverifiable content: only type, mode and owner",
			setup: func(f *fixture) { f.file("/etc/remote", "anything", 0o644) },
			entry: func() model.Entry {
				e := file("/etc/remote", 0o644, "")
				e.Content = &model.Content{Unverifiable: "remote https source without verification.hash (never fetched)"}
				return e
			}(),
		},
	}
	cache := &statecache.Cache{Dir: t.TempDir(), Mode: statecache.ModeLazy}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fixture{t: t, root: t.TempDir()}
			tt.setup(f)
			got := check(t, f.root, tt.entry)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Compare (-want +got):\n%s", diff)
			}
			if c := tt.entry.Content; c != nil && c.Exact != nil {
				// The same entry as the daemon holds it, its content Stored
				// (size and digest; check reads the bytes back for a diff),
				// must give the same drift.
				lazy := model.State{Entries: []model.Entry{tt.entry}}
				if !cache.Put(statekey.Key{byte(len(tt.name)), tt.name[0]}, &lazy) || lazy.Entries[0].Content.Stored == nil || lazy.Store == nil {
					t.Fatal("the lazy cache kept the content in memory")
				}
				if diff := cmp.Diff(tt.want, checkStored(t, f.root, lazy)); diff != "" {
					t.Errorf("Compare with the content stored (-want +got):\n%s", diff)
				}
			}
			js, err := json.Marshal(got)
			if err != nil {
				t.Fatal(err)
			}
			if bytes.Contains(js, []byte("MARKER")) {
				t.Errorf("secret bytes in the drift: %s", js)
			}
		})
	}
}

// TestCompareReadFailed: a read error in the middle of a comparison is an
// unreadable drift (root cannot be denied a read: the kernel refuses reads
// of /proc/self/mem at offset 0).
func TestCompareReadFailed(t *testing.T) {
	if _, err := os.Stat("/proc/self/mem"); err != nil {
		t.Skip("no /proc")
	}
	e := file("/mem", 0o600, "x")
	got := check(t, "/proc/self", e)
	want := []drift.Drift{expect(e, drift.Unreadable, `cannot read file "/mem": input/output error`, "", "")}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Compare (-want +got):\n%s", diff)
	}
}

// TestCompareObservations covers what a fixture cannot easily produce.
func TestCompareObservations(t *testing.T) {
	f := file("/etc/a", 0o644, "a\n")
	h := sha512.Sum512([]byte("hunter2"))
	hunter2sha512 := hex.EncodeToString(h[:])
	remote := file("/etc/remote", 0o600, "")
	remote.Content = &model.Content{Hash: &model.Hash{Algorithm: "sha512", Hex: hunter2sha512}, Suffix: []byte("\n")}
	remotePublic := remote
	remotePublic.Mode = ptr[uint32](0o644)
	appended := file("/etc/appended", 0o600, "")
	appended.Content = &model.Content{Suffix: []byte("token=hunter2\n")}
	differs := func(got string) ondisk.ContentResult {
		return ondisk.ContentResult{State: ondisk.Differs, Got: []byte(got), GotSize: int64(len(got)), GotDigest: digest(got)}
	}
	tests := []struct {
		name  string
		entry model.Entry
		ob    ondisk.Observation
		want  []drift.Drift
	}{
		{
			name:  "observation error wins over everything",
			entry: f,
			ob:    ondisk.Observation{Err: unix.EACCES, Type: ondisk.Regular, Mode: 0o600},
			want:  []drift.Drift{expect(f, drift.Unreadable, `cannot examine file "/etc/a": permission denied`, "", "")},
		},
		{
			name:  "content read failed",
			entry: f,
			ob:    ondisk.Observation{Type: ondisk.Regular, Mode: 0o644, Content: ondisk.ContentResult{State: ondisk.ReadFailed, Err: unix.EACCES}},
			want:  []drift.Drift{expect(f, drift.Unreadable, `cannot read file "/etc/a": permission denied`, "", "")},
		},
		{
			name:  "content differs but too large to keep: no diff",
			entry: f,
			ob: ondisk.Observation{Type: ondisk.Regular, Mode: 0o644, Public: true, Content: ondisk.ContentResult{State: ondisk.Differs,
				GotSize: 1 << 30, GotDigest: digest("big")}},
			want: []drift.Drift{expect(f, drift.Content, `content mismatch for file "/etc/a"`, describe("a\n"), "1073741824 bytes, sha256:"+digest("big"))},
		},
		{
			name:  "content differs, world-readable where not everyone may go: keyed digests, no diff",
			entry: f,
			ob:    ondisk.Observation{Type: ondisk.Regular, Mode: 0o644, Content: differs("b\n")},
			want:  []drift.Drift{expect(f, drift.Content, `content mismatch for file "/etc/a"`, keyed("a\n"), keyed("b\n"))},
		},
		{
			name:  "content differs, anyone may read it: plain digests and a diff",
			entry: f,
			ob:    ondisk.Observation{Type: ondisk.Regular, Mode: 0o644, Public: true, Content: differs("b\n")},
			want: []drift.Drift{withDiff(expect(f, drift.Content, `content mismatch for file "/etc/a"`, describe("a\n"), describe("b\n")),
				"--- /etc/a (want)\n+++ /etc/a (got)\n@@ -1 +1 @@\n-a\n+b\n")},
		},
		{
			name:  "secret verification hash: neither the config's digest nor a plain one of the file",
			entry: remote,
			ob:    ondisk.Observation{Type: ondisk.Regular, Mode: 0o600, Content: differs("hunter3")},
			want: []drift.Drift{expect(remote, drift.Content, `content mismatch for file "/etc/remote"`,
				"the sha512 verification hash in the config followed by 1 appended bytes", keyed("hunter3"))},
		},
		{
			name:  "public verification hash: the config's digest",
			entry: remotePublic,
			ob:    ondisk.Observation{Type: ondisk.Regular, Mode: 0o644, Public: true, Content: differs("other")},
			want: []drift.Drift{expect(remotePublic, drift.Content, `content mismatch for file "/etc/remote"`,
				"sha512-"+hunter2sha512+" followed by 1 appended bytes", describe("other"))},
		},
		{
			name:  "secret ending: keyed digest of the suffix",
			entry: appended,
			ob:    ondisk.Observation{Type: ondisk.Regular, Mode: 0o600, Content: differs("x")},
			want: []drift.Drift{expect(appended, drift.Content, `content mismatch for file "/etc/appended"`,
				"ending with "+keyed("token=hunter2\n"), keyed("x"))},
		},
		{
			name:  "parent is an undeclared symlink: type drift of the parent, nothing else",
			entry: f,
			ob:    ondisk.Observation{Detour: &ondisk.Detour{Path: "/etc", Target: "/root/private"}, Type: ondisk.Regular, Content: differs("b\n")},
			want: []drift.Drift{expect(f, drift.Type, `type mismatch for file "/etc/a": "/etc": want directory, got symbolic link to "/root/private"`,
				"directory", "symbolic link")},
		},
		{
			name:  "parent is a declared symlink with another target",
			entry: f,
			ob:    ondisk.Observation{Detour: &ondisk.Detour{Path: "/etc", Target: "/root/private", Want: "/usr/etc"}},
			want: []drift.Drift{expect(f, drift.Type, `type mismatch for file "/etc/a": "/etc": want symbolic link to "/usr/etc", got symbolic link to "/root/private"`,
				`symbolic link to "/usr/etc"`, `symbolic link to "/root/private"`)},
		},
		{
			name:  "mode of a symlink is never compared",
			entry: func() model.Entry { e := symlink("/etc/l", "x"); e.Mode = ptr[uint32](0o644); return e }(),
			ob:    ondisk.Observation{Type: ondisk.Symlink, Mode: 0o777, Target: "x"},
		},
		{
			name:  "enablement and kernel arguments are not compared here",
			entry: model.Entry{Kind: model.KindEnablement, Unit: "a.service", Type: model.TypeNone, Enabled: ptr(true)},
			ob:    ondisk.Observation{Type: ondisk.Absent},
		},
		{
			name: "an empty MachineConfig drop-in may be absent",
			entry: func() model.Entry {
				e := file("/etc/systemd/system/a.service.d/x.conf", 0o644, "")
				e.MayBeAbsent = true
				return e
			}(),
			ob: ondisk.Observation{Type: ondisk.Absent},
		},
		{
			name:  "but not a directory in its place",
			entry: func() model.Entry { e := file("/etc/a", 0o644, ""); e.MayBeAbsent = true; return e }(),
			ob:    ondisk.Observation{Type: ondisk.Directory, Mode: 0o755},
			want:  []drift.Drift{expect(file("/etc/a", 0o644, ""), drift.Type, `type mismatch for file "/etc/a": want regular file, got directory`, "regular file", "directory")},
		},
		{
			name:  "mask: observation error",
			entry: mask("a.service"),
			ob:    ondisk.Observation{Err: unix.EIO},
			want:  []drift.Drift{expect(mask("a.service"), drift.Unreadable, `cannot examine unit "a.service": input/output error`, "", "")},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := drift.Compare(&tt.entry, &tt.ob, testKey)
			inRows(t, got)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Compare (-want +got):\n%s", diff)
			}
		})
	}
}

// TestDigestsWithoutKey: without the host's key, content that must not be
// shown gets its size only; content that may be shown keeps its plain
// digest.
func TestDigestsWithoutKey(t *testing.T) {
	secret := file("/etc/secret", 0o600, "hunter2")
	public := file("/etc/public", 0o644, "a\n")
	tests := []struct {
		name      string
		entry     model.Entry
		ob        ondisk.Observation
		want, got string
	}{
		{"secret", secret, ondisk.Observation{Type: ondisk.Regular, Mode: 0o600,
			Content: ondisk.ContentResult{State: ondisk.Differs, GotSize: 7, GotDigest: digest("hunter3")}}, "7 bytes", "7 bytes"},
		{"public, where not everyone may go", public, ondisk.Observation{Type: ondisk.Regular, Mode: 0o644,
			Content: ondisk.ContentResult{State: ondisk.Differs, GotSize: 2, GotDigest: digest("b\n")}}, "2 bytes", "2 bytes"},
		{"public", public, ondisk.Observation{Type: ondisk.Regular, Mode: 0o644, Public: true,
			Content: ondisk.ContentResult{State: ondisk.Differs, GotSize: 2, GotDigest: digest("b\n")}}, describe("a\n"), describe("b\n")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ds := drift.Compare(&tt.entry, &tt.ob, model.Key{})
			if len(ds) != 1 || ds[0].Want != tt.want || ds[0].Got != tt.got {
				t.Errorf("Compare without a key = %+v, want want %q, got %q", ds, tt.want, tt.got)
			}
		})
	}
}

func TestCompareEnablement(t *testing.T) {
	on := model.Entry{Kind: model.KindEnablement, Path: "/etc/systemd/system/a.service", Unit: "a.service", Type: model.TypeNone, Enabled: ptr(true)}
	off := on
	off.Enabled = ptr(false)
	tests := []struct {
		entry model.Entry
		state string
		err   error
		want  []drift.Drift
	}{
		{on, "enabled", nil, nil},
		{on, "static", nil, nil},
		{on, "indirect", nil, nil},
		{on, "alias", nil, nil},
		{on, "generated", nil, nil},
		{on, "transient", nil, nil},
		// Ignition's preset enables persistently: links in /run only hide a
		// persistent disable until the next boot.
		{on, "enabled-runtime", nil, []drift.Drift{expect(on, drift.Enablement, `unit "a.service" is enabled-runtime, want enabled`, "enabled", "enabled-runtime")}},
		// A linked unit file without enablement links: systemctl is-enabled
		// exits non-zero, and the preset would have made its links.
		{on, "linked", nil, []drift.Drift{expect(on, drift.Enablement, `unit "a.service" is linked, want enabled`, "enabled", "linked")}},
		{on, "linked-runtime", nil, []drift.Drift{expect(on, drift.Enablement, `unit "a.service" is linked-runtime, want enabled`, "enabled", "linked-runtime")}},
		{on, "disabled", nil, []drift.Drift{expect(on, drift.Enablement, `unit "a.service" is disabled, want enabled`, "enabled", "disabled")}},
		{on, "masked", nil, []drift.Drift{expect(on, drift.Enablement, `unit "a.service" is masked, want enabled`, "enabled", "masked")}},
		// No unit file anywhere: Ignition writes only a preset line, as for a static unit.
		{on, "not-found", nil, nil},
		{off, "disabled", nil, nil},
		{off, "static", nil, nil},
		{off, "masked", nil, nil},
		{off, "not-found", nil, nil},
		{off, "enabled", nil, []drift.Drift{expect(off, drift.Enablement, `unit "a.service" is enabled, want disabled`, "disabled", "enabled")}},
		{off, "enabled-runtime", nil, []drift.Drift{expect(off, drift.Enablement, `unit "a.service" is enabled-runtime, want disabled`, "disabled", "enabled-runtime")}},
		{on, "", errors.New("no bus"), []drift.Drift{expect(on, drift.Unreadable, `cannot determine whether unit "a.service" is enabled: no bus`, "", "")}},
		{model.Entry{Kind: model.KindEnablement, Unit: "a.service"}, "disabled", nil, nil},
	}
	for _, tt := range tests {
		got := drift.CompareEnablement(&tt.entry, tt.state, tt.err)
		inRows(t, got)
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("CompareEnablement(enabled=%v, %q, %v) (-want +got):\n%s", tt.entry.Enabled, tt.state, tt.err, diff)
		}
	}
}

func TestCannotEnableNotice(t *testing.T) {
	on := model.Entry{Kind: model.KindEnablement, Path: "/etc/systemd/system/w@.service", Unit: "w@.service", Type: model.TypeNone, Enabled: ptr(true)}
	want := drift.Drift{Kind: drift.CannotEnable, Entry: model.KindEnablement, Path: on.Path, Unit: "w@.service", EntryID: on.ID(),
		Message: `unit "w@.service" cannot be enabled without an instance: why`, Want: "enabled", Got: "linked"}
	if diff := cmp.Diff(want, drift.CannotEnableNotice(&on, "linked", "cannot be enabled without an instance: why")); diff != "" {
		t.Errorf("CannotEnableNotice (-want +got):\n%s", diff)
	}
	lost := []drift.Drift{{Kind: drift.Enablement, Entry: model.KindEnablement, Path: on.Path, Unit: "w@.service", EntryID: on.ID(),
		Message: `unit "w@.service" is disabled, want enabled: it was enabled`, Want: "enabled", Got: "disabled"}}
	if diff := cmp.Diff(lost, drift.EnablementLost(&on, "disabled", "it was enabled")); diff != "" {
		t.Errorf("EnablementLost (-want +got):\n%s", diff)
	}
}

func TestCompareKernelArg(t *testing.T) {
	karg := func(arg string, present bool) model.Entry {
		return model.Entry{Kind: model.KindKernelArg, Path: "/proc/cmdline", Type: model.TypeNone, Arg: arg, ArgPresent: present}
	}
	cmdline := model.SplitKernelArguments("BOOT_IMAGE=/vmlinuz root=UUID=1 foo=\"a b\" nosmt quiet\n")
	tests := []struct {
		entry model.Entry
		err   error
		want  []drift.Drift
	}{
		{karg("nosmt", true), nil, nil},
		{karg(`foo="a b"`, true), nil, nil},
		{karg("mitigations=off", false), nil, nil},
		{karg("mitigations=off", true), nil, []drift.Drift{expect(karg("mitigations=off", true), drift.KernelArg,
			`kernel argument "mitigations=off" is missing from /proc/cmdline`, "mitigations=off", "")}},
		{karg("quiet", false), nil, []drift.Drift{expect(karg("quiet", false), drift.KernelArg,
			`kernel argument "quiet" is present in /proc/cmdline, want it absent`, "absent: quiet", "quiet")}},
		{karg("root", true), nil, []drift.Drift{expect(karg("root", true), drift.KernelArg,
			`kernel argument "root" is missing from /proc/cmdline`, "root", "")}}, // whole arguments only
		{karg("nosmt", true), errors.New("boom"), []drift.Drift{expect(karg("nosmt", true), drift.Unreadable,
			`cannot read the kernel command line: boom`, "", "")}},
	}
	for _, tt := range tests {
		got := drift.CompareKernelArg(&tt.entry, cmdline, tt.err)
		inRows(t, got)
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("CompareKernelArg(%q, present=%v) (-want +got):\n%s", tt.entry.Arg, tt.entry.ArgPresent, diff)
		}
	}
}

func TestNotice(t *testing.T) {
	e := file("/etc/remote", 0o644, "")
	e.Content = &model.Content{Unverifiable: "remote https source without verification.hash (never fetched)"}
	want := &drift.Drift{Kind: drift.Unverifiable, Entry: model.KindFile, Path: "/etc/remote", EntryID: "file:/etc/remote",
		Message: `content of file "/etc/remote" is not verified: remote https source without verification.hash (never fetched)`}
	if diff := cmp.Diff(want, drift.Notice(&e)); diff != "" {
		t.Errorf("Notice (-want +got):\n%s", diff)
	}
	child := model.Entry{Kind: model.KindConfig, Type: model.TypeNone, Path: "/etc/node.ign",
		Target: "ignition.config.merge.0 (https://example.com/c\x1b.ign)", Content: &model.Content{Unverifiable: "it is never fetched"}}
	want = &drift.Drift{Kind: drift.Unverifiable, Entry: model.KindConfig, Path: "/etc/node.ign", EntryID: child.ID(),
		Message: `ignition.config.merge.0 (https://example.com/c\x1b.ign) of config "/etc/node.ign" is not checked: it is never fetched`}
	if diff := cmp.Diff(want, drift.Notice(&child)); diff != "" {
		t.Errorf("Notice of a child config (-want +got):\n%s", diff)
	}
	for _, e := range []model.Entry{file("/etc/a", 0o644, "x"), dir("/etc", 0o755)} {
		if n := drift.Notice(&e); n != nil {
			t.Errorf("Notice(%s) = %+v, want nil", e.Path, n)
		}
	}
}

func TestDriftNames(t *testing.T) {
	en := model.Entry{Kind: model.KindEnablement, Path: "/etc/systemd/system/a\x1b.service", Unit: "a\x1b.service", Enabled: ptr(true)}
	d := drift.CompareEnablement(&en, "disabled", nil)[0]
	if got := d.Key(); got != "enablement:a\x1b.service|enablement" {
		t.Errorf("Key = %q", got)
	}
	if got := d.Subject(); got != `a\x1b.service` {
		t.Errorf("Subject = %q, want the escaped unit name", got)
	}
	f := file("/etc/new\nline", 0o644, "")
	fd := drift.Compare(&f, &ondisk.Observation{}, testKey)[0]
	if got := fd.Subject(); got != `/etc/new\nline` {
		t.Errorf("Subject = %q", got)
	}
	if strings.ContainsAny(fd.Message, "\n\x1b") {
		t.Errorf("Message %q holds a control character", fd.Message)
	}
	if fd.Key() == drift.Compare(&f, &ondisk.Observation{Type: ondisk.Directory}, testKey)[0].Key() {
		t.Error("a missing file and a type mismatch share a key")
	}
	k := model.Entry{Kind: model.KindKernelArg, Arg: "nosmt", ArgPresent: true}
	kd := drift.CompareKernelArg(&k, nil, nil)[0]
	if got := kd.Subject(); got != "kernel argument nosmt" {
		t.Errorf("Subject = %q", got)
	}
	nouns := map[string]model.Entry{
		`file "/a"`:                      {Kind: model.KindFile, Path: "/a"},
		`directory "/a"`:                 {Kind: model.KindDirectory, Path: "/a"},
		`link "/a"`:                      {Kind: model.KindLink, Path: "/a"},
		`hard link "/a"`:                 {Kind: model.KindHardLink, Path: "/a"},
		`unit "u" ("/a")`:                {Kind: model.KindUnit, Path: "/a", Unit: "u"},
		`unit "u"`:                       {Kind: model.KindMask, Path: "/a", Unit: "u"},
		`drop-in "/a"`:                   {Kind: model.KindDropin, Path: "/a", Unit: "u"},
		`SSH keys of user "core" ("/a")`: {Kind: model.KindSSHKeys, Path: "/a", User: "core"},
		`kernel argument "x"`:            {Kind: model.KindKernelArg, Arg: "x"},
		`file "/\x1b[2J"`:                {Kind: model.KindFile, Path: "/\x1b[2J"},
	}
	for want, e := range nouns {
		if got := drift.Noun(&e); got != want {
			t.Errorf("Noun(%+v) = %q, want %q", e, got, want)
		}
	}
}

func optionalBits(e model.Entry, bits uint32) model.Entry {
	e.ModeOptional = bits
	return e
}

// TestFirstBootMessages: a mode, owner or group the config leaves to the
// node, wanted as the first-boot record says, is reported with where the
// wanted value comes from; one the config declares is not. A content drift
// of an append-only file with a recorded base names the base by its keyed
// digest and size, never its bytes.
func TestFirstBootMessages(t *testing.T) {
	m, uid, gid := uint32(0o755), 0, 0
	rec := "/etc/drift-monitor/desired.d/10-firstboot.record"
	e := model.Entry{Kind: model.KindDirectory, Path: "/foo/bar", Type: model.TypeDirectory, Mode: &m, UID: &uid, GID: &gid,
		FirstBoot: &model.FirstBoot{Record: rec, Mode: true, Group: true}}
	ob := ondisk.Observation{Type: ondisk.Directory, Mode: 0o700, UID: 1000, GID: 1000}
	got := map[drift.Kind]string{}
	for _, d := range drift.Compare(&e, &ob, model.Key{}) {
		got[d.Kind] = d.Message
	}
	for k, fromRecord := range map[drift.Kind]bool{drift.Mode: true, drift.Owner: false, drift.Group: true} {
		if says := strings.Contains(got[k], "first boot, recorded in "+rec); says != fromRecord {
			t.Errorf("%s drift %q: says it is the first boot's: %v, want %v", k, got[k], says, fromRecord)
		}
	}

	key := []byte("the host's digest key")
	sum := sha256.Sum256([]byte("secret base\n"))
	h := hmac.New(sha256.New, key)
	h.Write(sum[:])
	b := &model.Base{Size: 12, Key: model.NewKey(key), Record: rec}
	copy(b.Keyed[:], h.Sum(nil))
	f := model.Entry{Kind: model.KindFile, Path: "/etc/secret.conf", Type: model.TypeRegular,
		Content: &model.Content{Suffix: []byte("frag\n"), Base: b}}
	fob := ondisk.Observation{Type: ondisk.Regular, Mode: 0o600, Content: ondisk.ContentResult{State: ondisk.Differs, GotSize: 3, Got: []byte("xx\n")}}
	ds := drift.Compare(&f, &fob, model.NewKey(key))
	if len(ds) != 1 || !strings.Contains(ds[0].Want, "12-byte base recorded at the first boot (hmac-sha256:"+hex.EncodeToString(b.Keyed[:])) ||
		strings.Contains(ds[0].Want, hex.EncodeToString(sum[:])) {
		t.Errorf("content drift of an append-only file with a recorded base: %+v", ds)
	}
}
