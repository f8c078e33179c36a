package ondisk_test

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/drift-monitor/drift-monitor/internal/model"
	"github.com/drift-monitor/drift-monitor/internal/ondisk"
	"github.com/drift-monitor/drift-monitor/test/harness"
	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"
)

// fixture builds trees inside a root directory. Paths are host paths.
type fixture struct {
	t    *testing.T
	root string
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	return &fixture{t: t, root: t.TempDir()}
}

func (f *fixture) path(p string) string { return filepath.Join(f.root, p) }

// mkdir makes a directory with mode bits as chmod(2) takes them (07777).
func (f *fixture) mkdir(p string, mode uint32) {
	f.t.Helper()
	if err := os.MkdirAll(f.path(p), 0o755); err != nil {
		f.t.Fatal(err)
	}
	if err := unix.Chmod(f.path(p), mode); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) file(p string, content string, mode uint32) {
	f.t.Helper()
	f.fileBytes(p, []byte(content), mode)
}

// fileBytes writes a regular file with mode bits as chmod(2) takes them
// (os.Chmod would drop setuid, setgid and sticky given as 07000).
func (f *fixture) fileBytes(p string, content []byte, mode uint32) {
	f.t.Helper()
	if err := os.MkdirAll(filepath.Dir(f.path(p)), 0o755); err != nil {
		f.t.Fatal(err)
	}
	if err := os.WriteFile(f.path(p), content, 0o600); err != nil {
		f.t.Fatal(err)
	}
	if err := unix.Chmod(f.path(p), mode); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) symlink(p, target string) {
	f.t.Helper()
	if err := os.MkdirAll(filepath.Dir(f.path(p)), 0o755); err != nil {
		f.t.Fatal(err)
	}
	if err := os.Symlink(target, f.path(p)); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) fifo(p string) {
	f.t.Helper()
	if err := unix.Mkfifo(f.path(p), 0o644); err != nil {
		f.t.Fatal(err)
	}
}

// observe examines e inside root, failing the test if that takes more than
// a few seconds (a FIFO opened for reading would block forever).
func observe(t *testing.T, root string, e model.Entry) ondisk.Observation {
	t.Helper()
	return observeDeclared(t, root, nil, e)
}

// observeDeclared is observe for an entry of a state that declares decl.
func observeDeclared(t *testing.T, root string, decl *ondisk.Declared, e model.Entry) ondisk.Observation {
	t.Helper()
	o := openObserver(t, root, decl)
	done := make(chan ondisk.Observation, 1)
	go func() { done <- o.Observe(&e) }()
	select {
	case ob := <-done:
		return ob
	case <-time.After(10 * time.Second):
		t.Fatalf("Observe(%s) blocked", e.Path)
	}
	return ondisk.Observation{}
}

// openObserver is an observer of root for entries of a state that declares
// decl, closed (with its root) when the test ends.
func openObserver(t *testing.T, root string, decl *ondisk.Declared) *ondisk.Observer {
	t.Helper()
	r, err := ondisk.OpenRoot(root)
	if err != nil {
		t.Fatal(err)
	}
	o := ondisk.NewObserver(r)
	t.Cleanup(func() { o.Close(); r.Close() })
	o.Declare(decl)
	return o
}

// view is the part of an observation a test states.
type view struct {
	Type    ondisk.FileType
	Mode    uint32
	Target  string
	Err     error
	Content ondisk.ContentState
}

func viewOf(ob ondisk.Observation) view {
	return view{Type: ob.Type, Mode: ob.Mode, Target: ob.Target, Err: ob.Err, Content: ob.Content.State}
}

func regular(p string, content string) model.Entry {
	return model.Entry{Kind: model.KindFile, Path: p, Type: model.TypeRegular, Content: &model.Content{Exact: []byte(content)}}
}

func TestObserveTypes(t *testing.T) {
	hostDir := t.TempDir() // outside every fixture root
	if err := os.WriteFile(filepath.Join(hostDir, "hostfile"), []byte("host"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		setup func(f *fixture)
		entry model.Entry
		want  view
	}{
		{
			name:  "regular file",
			setup: func(f *fixture) { f.file("/etc/a", "a\n", 0o640) },
			entry: regular("/etc/a", "a\n"),
			want:  view{Type: ondisk.Regular, Mode: 0o640, Content: ondisk.Equal},
		},
		{
			name:  "regular file with setuid, setgid and sticky bits",
			setup: func(f *fixture) { f.file("/usr/bin/x", "", 0o7755) },
			entry: model.Entry{Path: "/usr/bin/x", Type: model.TypeRegular},
			want:  view{Type: ondisk.Regular, Mode: 0o7755},
		},
		{
			name:  "directory",
			setup: func(f *fixture) { f.mkdir("/var/lib/x", 0o1777) },
			entry: model.Entry{Path: "/var/lib/x", Type: model.TypeDirectory},
			want:  view{Type: ondisk.Directory, Mode: 0o1777},
		},
		{
			name:  "symbolic link, target as written, not followed",
			setup: func(f *fixture) { f.file("/usr/share/x", "x", 0o644); f.symlink("/etc/x", "../usr/share/x") },
			entry: regular("/etc/x", "x"),
			want:  view{Type: ondisk.Symlink, Mode: 0o777, Target: "../usr/share/x"},
		},
		{
			name:  "dangling symbolic link",
			setup: func(f *fixture) { f.symlink("/etc/x", "/nowhere") },
			entry: model.Entry{Path: "/etc/x", Type: model.TypeSymlink, Target: "/nowhere"},
			want:  view{Type: ondisk.Symlink, Mode: 0o777, Target: "/nowhere"},
		},
		{
			name:  "FIFO where a file with content is declared: never opened",
			setup: func(f *fixture) { f.mkdir("/run", 0o755); f.fifo("/run/x") },
			entry: regular("/run/x", "x"),
			want:  view{Type: ondisk.Other, Mode: 0o644},
		},
		{
			name:  "missing",
			setup: func(f *fixture) { f.mkdir("/etc", 0o755) },
			entry: regular("/etc/missing", "x"),
			want:  view{Type: ondisk.Absent},
		},
		{
			name:  "missing parent",
			setup: func(f *fixture) {},
			entry: regular("/etc/a/b/c", "x"),
			want:  view{Type: ondisk.Absent},
		},
		{
			name:  "parent is a file (ENOTDIR): missing",
			setup: func(f *fixture) { f.file("/etc/a", "x", 0o644) },
			entry: regular("/etc/a/b", "x"),
			want:  view{Type: ondisk.Absent},
		},
		{
			name:  "parent is a symlink loop: cannot be examined",
			setup: func(f *fixture) { f.symlink("/etc/loop", "/etc/loop") },
			entry: regular("/etc/loop/x", "x"),
			want:  view{Err: unix.ELOOP},
		},
		{
			name:  "name too long: cannot be examined",
			setup: func(f *fixture) { f.mkdir("/etc", 0o755) },
			entry: regular("/etc/"+strings.Repeat("n", 300), "x"),
			want:  view{Err: unix.ENAMETOOLONG},
		},
		{
			name: "absolute symlink in a parent resolves inside the root",
			setup: func(f *fixture) {
				f.file("/var/home/core/.bashrc", "in root", 0o644)
				f.symlink("/home", "/var/home")
			},
			entry: regular("/home/core/.bashrc", "in root"),
			want:  view{Type: ondisk.Regular, Mode: 0o644, Content: ondisk.Equal},
		},
		{
			name:  "absolute symlink to a host directory does not reach the host",
			setup: func(f *fixture) { f.symlink("/escape", hostDir) },
			entry: regular("/escape/hostfile", "host"),
			want:  view{Type: ondisk.Absent},
		},
		{
			name: "relative symlink climbing out with .. stays inside the root",
			setup: func(f *fixture) {
				f.file("/etc/passwd", "root passwd", 0o644)
				f.symlink("/a/b/up", "../../../../../../../../..")
			},
			entry: regular("/a/b/up/etc/passwd", "root passwd"),
			want:  view{Type: ondisk.Regular, Mode: 0o644, Content: ondisk.Equal},
		},
		{
			name:  "content declared unverifiable is not compared",
			setup: func(f *fixture) { f.file("/etc/a", "whatever", 0o644) },
			entry: model.Entry{Path: "/etc/a", Type: model.TypeRegular, Content: &model.Content{Unverifiable: "remote"}},
			want:  view{Type: ondisk.Regular, Mode: 0o644},
		},
		{
			name:  "no content declared",
			setup: func(f *fixture) { f.file("/etc/a", "whatever", 0o644) },
			entry: model.Entry{Path: "/etc/a", Type: model.TypeRegular},
			want:  view{Type: ondisk.Regular, Mode: 0o644},
		},
		{
			name:  "entries checked elsewhere are not observed",
			setup: func(f *fixture) {},
			entry: model.Entry{Kind: model.KindEnablement, Path: "/etc/systemd/system/a.service", Type: model.TypeNone},
			want:  view{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			tt.setup(f)
			got := viewOf(observe(t, f.root, tt.entry))
			if diff := cmp.Diff(tt.want, got, cmp.Comparer(sameErrno)); diff != "" {
				t.Errorf("Observe(%s) (-want +got):\n%s", tt.entry.Path, diff)
			}
		})
	}
}

func sameErrno(a, b error) bool {
	if a == nil || b == nil {
		return a == b
	}
	return errors.Is(a, b) || errors.Is(b, a)
}

func TestObserveDevice(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mknod of a character device needs root")
	}
	f := newFixture(t)
	f.mkdir("/etc", 0o755)
	// /dev/zero would never end and /dev/tty could block: neither is opened.
	if err := unix.Mknod(f.path("/etc/zero"), unix.S_IFCHR|0o644, int(unix.Mkdev(1, 5))); err != nil {
		t.Skipf("mknod: %v", err)
	}
	got := viewOf(observe(t, f.root, regular("/etc/zero", "x")))
	if diff := cmp.Diff(view{Type: ondisk.Other, Mode: 0o644}, got, cmp.Comparer(sameErrno)); diff != "" {
		t.Errorf("Observe(device) (-want +got):\n%s", diff)
	}
}

func needRoot(t *testing.T) {
	t.Helper()
	harness.RequireRoot(t, "changing owners")
}

func TestObserveOwner(t *testing.T) {
	needRoot(t)
	f := newFixture(t)
	f.file("/etc/a", "", 0o644)
	f.symlink("/etc/l", "a")
	if err := os.Lchown(f.path("/etc/a"), 1234, 5678); err != nil {
		t.Fatal(err)
	}
	if err := os.Lchown(f.path("/etc/l"), 42, 43); err != nil {
		t.Fatal(err)
	}
	ob := observe(t, f.root, model.Entry{Path: "/etc/a", Type: model.TypeRegular})
	if ob.UID != 1234 || ob.GID != 5678 {
		t.Errorf("owner of /etc/a = %d:%d, want 1234:5678", ob.UID, ob.GID)
	}
	ob = observe(t, f.root, model.Entry{Path: "/etc/l", Type: model.TypeSymlink})
	if ob.UID != 42 || ob.GID != 43 {
		t.Errorf("owner of the link /etc/l = %d:%d, want the link's own 42:43", ob.UID, ob.GID)
	}
}

// recordedBase is b as the first-boot record keeps it: a length and a
// digest keyed with a key.
func recordedBase(b []byte) *model.Base {
	key := []byte("a digest key of the host's")
	sum := sha256.Sum256(b)
	m := hmac.New(sha256.New, key)
	m.Write(sum[:])
	out := &model.Base{Size: int64(len(b)), Key: model.NewKey(key)}
	copy(out.Keyed[:], m.Sum(nil))
	return out
}

func sha256Hex(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }
func sha512Hex(b []byte) string { s := sha512.Sum512(b); return hex.EncodeToString(s[:]) }

func TestObserveContent(t *testing.T) {
	big := bytes.Repeat([]byte("0123456789abcdef"), 5<<20/16) // 5 MiB
	bigLast := bytes.Clone(big)
	bigLast[len(bigLast)-1] = 'X'
	atLimit := bytes.Repeat([]byte("x"), ondisk.DiffLimit)
	atLimitOther := bytes.Repeat([]byte("y"), ondisk.DiffLimit)
	overLimit := bytes.Repeat([]byte("y"), ondisk.DiffLimit+1)
	base := []byte("a base fetched from a remote source\n")
	suffix := []byte("appended\n")
	withSuffix := append(bytes.Clone(base), suffix...)

	type result struct {
		State     ondisk.ContentState
		Got       []byte
		GotSize   int64
		GotDigest string
	}
	// A differing file is described by its bytes and digest when it is
	// small enough to be kept; a larger one by its size alone (see
	// TestObserveSizeDiffersReadsNothing).
	differs := func(disk []byte, keep bool) result {
		r := result{State: ondisk.Differs, GotSize: int64(len(disk))}
		if keep {
			r.Got, r.GotDigest = disk, sha256Hex(disk)
		}
		return r
	}
	tests := []struct {
		name string
		disk []byte
		want model.Content
		res  result
	}{
		{"equal", []byte("same\n"), model.Content{Exact: []byte("same\n")}, result{State: ondisk.Equal}},
		{"same size, differs", []byte("abcd"), model.Content{Exact: []byte("abce")}, differs([]byte("abcd"), true)},
		{"different size", []byte("longer text"), model.Content{Exact: []byte("short")}, differs([]byte("longer text"), true)},
		{"empty file, empty content", []byte{}, model.Content{Exact: []byte{}}, result{State: ondisk.Equal}},
		{"empty file, content wanted", []byte{}, model.Content{Exact: []byte("x")}, differs([]byte{}, true)},
		{"content, empty wanted", []byte("x"), model.Content{Exact: []byte{}}, differs([]byte("x"), true)},
		{"5 MiB equal", big, model.Content{Exact: big}, result{State: ondisk.Equal}},
		{"5 MiB differing in the last byte", bigLast, model.Content{Exact: big}, differs(bigLast, false)},
		{"DiffLimit bytes are kept for a diff", atLimit, model.Content{Exact: atLimitOther}, differs(atLimit, true)},
		{"beyond DiffLimit bytes are not kept", overLimit, model.Content{Exact: atLimit}, differs(overLimit, false)},
		{"sha256 equal", base, model.Content{Hash: &model.Hash{Algorithm: "sha256", Hex: sha256Hex(base)}}, result{State: ondisk.Equal}},
		{"sha512 equal", base, model.Content{Hash: &model.Hash{Algorithm: "sha512", Hex: sha512Hex(base)}}, result{State: ondisk.Equal}},
		{"sha512 differs", []byte("other"), model.Content{Hash: &model.Hash{Algorithm: "sha512", Hex: sha512Hex(base)}}, differs([]byte("other"), true)},
		{"sha256 and suffix equal", withSuffix,
			model.Content{Hash: &model.Hash{Algorithm: "sha256", Hex: sha256Hex(base)}, Suffix: suffix}, result{State: ondisk.Equal}},
		{"sha512 and suffix equal", withSuffix,
			model.Content{Hash: &model.Hash{Algorithm: "sha512", Hex: sha512Hex(base)}, Suffix: suffix}, result{State: ondisk.Equal}},
		{"hash right, suffix missing", base,
			model.Content{Hash: &model.Hash{Algorithm: "sha256", Hex: sha256Hex(base)}, Suffix: suffix}, differs(base, true)},
		{"hash wrong, suffix right", append([]byte("x"), withSuffix...),
			model.Content{Hash: &model.Hash{Algorithm: "sha256", Hex: sha256Hex(base)}, Suffix: suffix}, differs(append([]byte("x"), withSuffix...), true)},
		{"file shorter than the suffix", []byte("ab"),
			model.Content{Hash: &model.Hash{Algorithm: "sha256", Hex: sha256Hex(nil)}, Suffix: suffix}, differs([]byte("ab"), true)},
		{"suffix only, equal", withSuffix, model.Content{Suffix: suffix}, result{State: ondisk.Equal}},
		{"suffix only, the suffix alone", suffix, model.Content{Suffix: suffix}, result{State: ondisk.Equal}},
		{"suffix only, differs", base, model.Content{Suffix: suffix}, differs(base, true)},
		{"suffix only, file shorter than the suffix", []byte("x"), model.Content{Suffix: suffix}, differs([]byte("x"), true)},
		{"empty suffix only", []byte("anything"), model.Content{Suffix: []byte{}}, result{State: ondisk.Equal}},
		// A base recorded at the first boot (package firstboot).
		{"recorded base and suffix equal", withSuffix, model.Content{Suffix: suffix, Base: recordedBase(base)}, result{State: ondisk.Equal}},
		{"recorded empty base, the suffix alone", suffix, model.Content{Suffix: suffix, Base: recordedBase(nil)}, result{State: ondisk.Equal}},
		{"recorded empty base, the first fragment twice", []byte("line 1\nline 1\nline 2\n"),
			model.Content{Suffix: []byte("line 1\nline 2\n"), Base: recordedBase(nil)}, differs([]byte("line 1\nline 1\nline 2\n"), true)},
		{"recorded base, another of its size", append(bytes.Repeat([]byte("x"), len(base)), suffix...),
			model.Content{Suffix: suffix, Base: recordedBase(base)}, differs(append(bytes.Repeat([]byte("x"), len(base)), suffix...), true)},
		{"recorded base, suffix missing", base, model.Content{Suffix: suffix, Base: recordedBase(base)}, differs(base, true)},
		{"no recorded base: the suffix alone decides", append([]byte("anything\n"), suffix...),
			model.Content{Suffix: suffix, Base: &model.Base{Unknown: "none recorded"}}, result{State: ondisk.Equal}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			f.fileBytes("/etc/f", tt.disk, 0o644)
			c := tt.want
			ob := observe(t, f.root, model.Entry{Path: "/etc/f", Type: model.TypeRegular, Content: &c})
			if ob.Err != nil || ob.Content.Err != nil {
				t.Fatalf("Observe: %v, content: %v", ob.Err, ob.Content.Err)
			}
			got := result{State: ob.Content.State, Got: ob.Content.Got, GotSize: ob.Content.GotSize, GotDigest: ob.Content.GotDigest}
			if diff := cmp.Diff(tt.res, got, cmp.Comparer(func(a, b []byte) bool {
				return bytes.Equal(a, b) && (a == nil) == (b == nil)
			})); diff != "" {
				t.Errorf("content (-want +got):\n%s", diff)
			}
			if c.Exact == nil {
				return
			}
			// Kept as its size and digest (a daemon's state), the content
			// compares the same.
			stored := model.Content{Stored: &model.Stored{Size: int64(len(c.Exact)), Sum: sha256.Sum256(c.Exact)}}
			ob = observe(t, f.root, model.Entry{Path: "/etc/f", Type: model.TypeRegular, Content: &stored})
			got = result{State: ob.Content.State, Got: ob.Content.Got, GotSize: ob.Content.GotSize, GotDigest: ob.Content.GotDigest}
			if diff := cmp.Diff(tt.res, got, cmp.Comparer(func(a, b []byte) bool {
				return bytes.Equal(a, b) && (a == nil) == (b == nil)
			})); diff != "" {
				t.Errorf("stored content (-want +got):\n%s", diff)
			}
		})
	}
}

func TestObserveUnsupportedHash(t *testing.T) {
	f := newFixture(t)
	f.file("/etc/f", "x", 0o644)
	ob := observe(t, f.root, model.Entry{Path: "/etc/f", Type: model.TypeRegular,
		Content: &model.Content{Hash: &model.Hash{Algorithm: "md5", Hex: "00"}}})
	if ob.Content.State != ondisk.ReadFailed || ob.Content.Err == nil || !strings.Contains(ob.Content.Err.Error(), "md5") {
		t.Errorf("content = %+v, want ReadFailed naming md5", ob.Content)
	}
}

// TestObserveReadError: root cannot be denied a read, but the kernel refuses
// to read /proc/self/mem at offset 0 (EIO) although it is a regular file: a
// read error in the middle of a comparison must come out as ReadFailed.
func TestObserveReadError(t *testing.T) {
	if _, err := os.Stat("/proc/self/mem"); err != nil {
		t.Skip("no /proc")
	}
	ob := observe(t, "/proc/self", regular("/mem", "x"))
	if ob.Err != nil || ob.Type != ondisk.Regular {
		t.Fatalf("Observe(/proc/self/mem) = %+v, want a regular file", ob)
	}
	if ob.Content.State != ondisk.ReadFailed || !errors.Is(ob.Content.Err, unix.EIO) {
		t.Errorf("content = %+v (%v), want ReadFailed with EIO", ob.Content.State, ob.Content.Err)
	}
}

func TestObserveHardLink(t *testing.T) {
	f := newFixture(t)
	f.file("/etc/target", "t", 0o644)
	if err := os.Link(f.path("/etc/target"), f.path("/etc/shared")); err != nil {
		t.Fatal(err)
	}
	f.file("/etc/copy", "t", 0o644)
	f.symlink("/loop", "/loop")
	link := func(p, target string) model.Entry {
		return model.Entry{Kind: model.KindHardLink, Path: p, Type: model.TypeHardLink, Target: target}
	}

	ob := observe(t, f.root, link("/etc/shared", "/etc/target"))
	if ob.Type != ondisk.Regular || ob.TargetType != ondisk.Regular || ob.Ino != ob.TargetIno || ob.Dev != ob.TargetDev {
		t.Errorf("shared inode: %+v", ob)
	}
	ob = observe(t, f.root, link("/etc/copy", "/etc/target"))
	if ob.TargetType != ondisk.Regular || ob.Ino == ob.TargetIno {
		t.Errorf("separate inode: %+v", ob)
	}
	ob = observe(t, f.root, link("/etc/copy", "/etc/gone"))
	if ob.TargetType != ondisk.Absent || ob.TargetErr != nil {
		t.Errorf("missing target: %+v", ob)
	}
	ob = observe(t, f.root, link("/etc/copy", "/loop/x"))
	if !errors.Is(ob.TargetErr, unix.ELOOP) {
		t.Errorf("unexaminable target: TargetErr = %v, want ELOOP", ob.TargetErr)
	}
}

// TestObserverForget: an observer keeps its last parent directory open; after
// Forget it sees a directory that replaced it.
func TestObserverForget(t *testing.T) {
	f := newFixture(t)
	f.file("/etc/d/f", "old", 0o644)
	r, err := ondisk.OpenRoot(f.root)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	o := ondisk.NewObserver(r)
	defer o.Close()
	e := regular("/etc/d/f", "new")
	if ob := o.Observe(&e); ob.Content.State != ondisk.Differs {
		t.Fatalf("before: %+v", ob.Content)
	}
	if err := os.Rename(f.path("/etc/d"), f.path("/etc/d.old")); err != nil {
		t.Fatal(err)
	}
	f.file("/etc/d/f", "new", 0o644)
	o.Forget()
	if ob := o.Observe(&e); ob.Content.State != ondisk.Equal {
		t.Errorf("after Forget: %+v, want the new directory's file", ob.Content)
	}
}

// TestObserverParentCache: consecutive entries share the cached parent, and
// a missing parent is remembered as missing without hiding later entries.
func TestObserverParentCache(t *testing.T) {
	f := newFixture(t)
	f.file("/etc/a", "a", 0o644)
	f.file("/etc/b", "b", 0o644)
	f.file("/var/c", "c", 0o644)
	r, err := ondisk.OpenRoot(f.root)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	o := ondisk.NewObserver(r)
	defer o.Close()
	for _, tt := range []struct {
		e    model.Entry
		want ondisk.ContentState
		typ  ondisk.FileType
	}{
		{regular("/etc/a", "a"), ondisk.Equal, ondisk.Regular},
		{regular("/etc/b", "x"), ondisk.Differs, ondisk.Regular},
		{regular("/nope/x", "x"), ondisk.NotCompared, ondisk.Absent},
		{regular("/nope/y", "y"), ondisk.NotCompared, ondisk.Absent},
		{regular("/var/c", "c"), ondisk.Equal, ondisk.Regular},
		{regular("/etc/a", "a"), ondisk.Equal, ondisk.Regular},
	} {
		ob := o.Observe(&tt.e)
		if ob.Type != tt.typ || ob.Content.State != tt.want || ob.Err != nil {
			t.Errorf("Observe(%s) = %v/%v/%v, want %v/%v", tt.e.Path, ob.Type, ob.Content.State, ob.Err, tt.typ, tt.want)
		}
	}
}

func TestOpenRoot(t *testing.T) {
	if _, err := ondisk.OpenRoot(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Error("OpenRoot(missing) succeeded")
	}
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ondisk.OpenRoot(file); err == nil || !strings.Contains(err.Error(), file) {
		t.Errorf("OpenRoot(a file) = %v, want an error naming it", err)
	}
	dir := t.TempDir()
	r, err := ondisk.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if r.Dir() != dir || r.Join("/etc/a") != filepath.Join(dir, "etc/a") {
		t.Errorf("Dir, Join = %q, %q", r.Dir(), r.Join("/etc/a"))
	}
	slash, err := ondisk.OpenRoot("/")
	if err != nil {
		t.Fatal(err)
	}
	defer slash.Close()
	if slash.Join("/etc/a") != "/etc/a" {
		t.Errorf("Join on / = %q", slash.Join("/etc/a"))
	}
}
