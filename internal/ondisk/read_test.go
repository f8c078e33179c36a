package ondisk

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// A root's own files are read through links inside it, never out of it: an
// absolute link resolves from the root, as the host inside it would see it.
func TestReadFileStaysInRoot(t *testing.T) {
	// The "host" outside the root holds a file each escaping link would
	// reach by a lexical join.
	host := t.TempDir()
	os.WriteFile(filepath.Join(host, "secret"), []byte("host\n"), 0o644)
	dir := t.TempDir()
	mk := func(p string) { os.MkdirAll(filepath.Join(dir, p), 0o755) }
	ln := func(target, p string) {
		if err := os.Symlink(target, filepath.Join(dir, p)); err != nil {
			t.Fatal(err)
		}
	}
	write := func(p, s string) { os.WriteFile(filepath.Join(dir, p), []byte(s), 0o644) }
	mk("real/etc")
	mk("sub")
	write("real/etc/passwd", "in root\n")
	write("secret", "root's secret\n")
	ln("/real/etc", "etc")                   // absolute directory link
	ln(host+"/secret", "abs-file")           // absolute file link: host path, in root it is missing
	ln("../../../../../secret", "sub/climb") // climbs past the root: stays at it
	ln("/sub/climb", "chain")                // a link to a link
	ln("loop2", "loop1")
	ln("loop1", "loop2")
	syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644)

	r, err := OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	cases := []readCase{
		{"absolute directory link", "/etc/passwd", "in root\n", nil},
		{"relative climb", "/sub/climb", "root's secret\n", nil},
		{"chain of links", "/chain", "root's secret\n", nil},
		{"unclean path", "/etc/../etc/passwd", "in root\n", nil},
		// ".." climbs from where /etc really is (/real), not lexically.
		{"dot-dot after a link", "/etc/../secret", "", fs.ErrNotExist},
		{"absolute link to a host path", "/abs-file", "", fs.ErrNotExist},
		{"missing", "/etc/group", "", fs.ErrNotExist},
		{"loop", "/loop1", "", syscall.ELOOP},
		{"directory", "/etc", "", ErrNotRegular},
		{"fifo", "/fifo", "", ErrNotRegular},
	}
	// The user-space resolution (no openat2) must read the same.
	for _, mode := range []string{"openat2", "user space"} {
		r.noOpenat2.Store(mode == "user space")
		for _, tc := range cases {
			t.Run(mode+"/"+tc.name, func(t *testing.T) { readCheck(t, r, tc) })
		}
	}
}

func readCheck(t *testing.T, r *Root, tc readCase) {
	t.Helper()
	got, err := r.ReadFile(tc.path)
	if tc.err != nil {
		if !errors.Is(err, tc.err) {
			t.Fatalf("ReadFile(%s) = %q, %v; want error %v", tc.path, got, err, tc.err)
		}
		var pe *fs.PathError
		if !errors.As(err, &pe) || pe.Path != r.Join(tc.path) {
			t.Errorf("error %v does not name %s", err, r.Join(tc.path))
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(tc.want, string(got)); diff != "" {
		t.Errorf("ReadFile(%s) (-want +got):\n%s", tc.path, diff)
	}
}

type readCase struct {
	name, path string
	want       string
	err        error
}

func TestReadDirStaysInRoot(t *testing.T) {
	host := t.TempDir()
	os.WriteFile(filepath.Join(host, "host.ign"), nil, 0o644)
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "real/d/sub"), 0o755)
	os.WriteFile(filepath.Join(dir, "real/d/b.ign"), nil, 0o644)
	os.Symlink("/real/d/b.ign", filepath.Join(dir, "real/d/a.ign"))
	os.Symlink("/real/d", filepath.Join(dir, "d"))
	os.Symlink(host, filepath.Join(dir, "out"))

	r, err := OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	ents, err := r.ReadDir("/d")
	if err != nil {
		t.Fatal(err)
	}
	type ent struct {
		Name string
		Type fs.FileMode
	}
	var got []ent
	for _, e := range ents {
		got = append(got, ent{e.Name(), e.Type()})
	}
	want := []ent{{"a.ign", fs.ModeSymlink}, {"b.ign", 0}, {"sub", fs.ModeDir}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ReadDir(/d) (-want +got):\n%s", diff)
	}
	// /out names the host's directory by its absolute path: inside the root
	// that path does not exist.
	if ents, err := r.ReadDir("/out"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ReadDir(/out) = %v, %v; want not found", ents, err)
	}
}

func TestIsHost(t *testing.T) {
	for _, tc := range []struct {
		dir  string
		want bool
	}{{"/", true}, {"/.", true}, {t.TempDir(), false}} {
		r, err := OpenRoot(tc.dir)
		if err != nil {
			t.Fatal(err)
		}
		if got := r.IsHost(); got != tc.want {
			t.Errorf("OpenRoot(%s).IsHost() = %v, want %v", tc.dir, got, tc.want)
		}
		r.Close()
	}
}

// TestReadAllSized: a regular file is read into one buffer of its size (a
// byte more to see its end), never grown and copied, which would hold a
// large config twice; a file whose size fstat does not give (in /proc) is
// read whole all the same.
func TestReadAllSized(t *testing.T) {
	want := bytes.Repeat([]byte("0123456789abcdef"), 1<<16)
	p := filepath.Join(t.TempDir(), "big")
	if err := os.WriteFile(p, want, 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got, err := ReadAll(f)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("ReadAll: %d bytes, %v; want the file's %d", len(got), err, len(want))
	}
	if cap(got) != len(want)+1 {
		t.Errorf("read into a buffer of %d bytes, want the file's size and one", cap(got))
	}
	proc, err := os.Open("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	defer proc.Close()
	if got, err := ReadAll(proc); err != nil || !bytes.Contains(got, []byte("VmRSS")) {
		t.Errorf("ReadAll of a file fstat says is empty: %q, %v", got, err)
	}
}
