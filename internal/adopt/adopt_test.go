package adopt

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// cache is shaped as Ignition's config cache is (every object written out,
// no indentation), in a spec drift-monitor loads.
const cache = `{"ignition":{"config":{"replace":{"verification":{}}},"proxy":{},"security":{"tls":{}},"timeouts":{},"version":"3.4.0"},"kernelArguments":{},"passwd":{},"storage":{"files":[{"group":{},"path":"/etc/x","user":{},"contents":{"source":"data:,secret","verification":{}},"mode":420}]},"systemd":{}}`

// paths returns a source holding content (unless content is nil) and a
// destination in a desired.d that does not exist yet.
func paths(t *testing.T, content []byte) (src, dst string) {
	t.Helper()
	root := t.TempDir()
	src = filepath.Join(root, DefaultSource)
	dst = filepath.Join(root, DefaultDest)
	if content != nil {
		if err := os.MkdirAll(filepath.Dir(src), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(src, content, 0o640); err != nil {
			t.Fatal(err)
		}
	}
	return src, dst
}

func TestAdoptWritesTheCacheOnce(t *testing.T) {
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	src, dst := paths(t, []byte(cache))

	res, err := Adopt(src, dst)
	if err != nil || res != Adopted {
		t.Fatalf("Adopt = %v, %v; want Adopted", res, err)
	}
	got, err := os.ReadFile(dst)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(cache, string(got)); diff != "" {
		t.Errorf("fragment bytes (-want +got):\n%s", diff)
	}
	modes := map[string]fs.FileMode{}
	for _, p := range []string{dst, filepath.Dir(dst), filepath.Dir(filepath.Dir(dst))} {
		st, err := os.Lstat(p)
		if err != nil {
			t.Fatal(err)
		}
		modes[p] = st.Mode()
	}
	want := map[string]fs.FileMode{
		dst:                             0o600,
		filepath.Dir(dst):               fs.ModeDir | 0o700,
		filepath.Dir(filepath.Dir(dst)): fs.ModeDir | 0o755,
	}
	if diff := cmp.Diff(want, modes); diff != "" {
		t.Errorf("modes with umask 0 (-want +got):\n%s", diff)
	}
	noTemporaries(t, filepath.Dir(dst), filepath.Base(dst))

	// A second run, with a cache that changed meanwhile, keeps the first.
	if err := os.WriteFile(src, []byte(strings.Replace(cache, "secret", "other", 1)), 0o640); err != nil {
		t.Fatal(err)
	}
	if res, err := Adopt(src, dst); err != nil || res != Kept {
		t.Fatalf("second Adopt = %v, %v; want Kept", res, err)
	}
	if got2, _ := os.ReadFile(dst); string(got2) != cache {
		t.Errorf("second Adopt changed the fragment to %q", got2)
	}
	noTemporaries(t, filepath.Dir(dst), filepath.Base(dst))
}

// TestAdoptExperimental: the cache in an experimental spec, as Ignition 2.24
// and 2.14 write it, is adopted when the fragment's name says it is a cache;
// under another name (--to), the loader would refuse its version, and so
// does Adopt.
func TestAdoptExperimental(t *testing.T) {
	for _, v := range []string{"3.6.0-experimental", "3.4.0-experimental"} {
		content := []byte(strings.Replace(cache, `"3.4.0"`, `"`+v+`"`, 1))
		t.Run(v, func(t *testing.T) {
			src, dst := paths(t, content)
			if res, err := Adopt(src, dst); err != nil || res != Adopted {
				t.Fatalf("Adopt = %v, %v; want Adopted", res, err)
			}
			plain := filepath.Join(filepath.Dir(dst), "10-firstboot.json")
			_, err := Adopt(src, plain)
			if !errors.Is(err, ErrNotLoadable) || !strings.Contains(err.Error(), v) {
				t.Errorf("Adopt to %s = %v, want ErrNotLoadable naming %s", plain, err, v)
			}
		})
	}
}

// TestAdoptNeverOverwrites: whatever has the fragment's name stays, even a
// dangling symlink (which os.Stat would call absent) or a directory.
func TestAdoptNeverOverwrites(t *testing.T) {
	for _, tc := range []struct {
		name  string
		place func(dst string) error
	}{
		{"config", func(dst string) error { return os.WriteFile(dst, []byte("admin's\n"), 0o644) }},
		{"dangling symlink", func(dst string) error { return os.Symlink("nowhere", dst) }},
		{"directory", func(dst string) error { return os.Mkdir(dst, 0o755) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src, dst := paths(t, []byte(cache))
			if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := tc.place(dst); err != nil {
				t.Fatal(err)
			}
			before, _ := os.Lstat(dst)
			if res, err := Adopt(src, dst); err != nil || res != Kept {
				t.Fatalf("Adopt = %v, %v; want Kept", res, err)
			}
			after, err := os.Lstat(dst)
			if err != nil || !os.SameFile(before, after) || before.Mode() != after.Mode() {
				t.Errorf("Adopt touched %s: before %v, after %v (%v)", dst, before.Mode(), after, err)
			}
			noTemporaries(t, filepath.Dir(dst), filepath.Base(dst))
		})
	}
}

// TestRenameNoReplace is the race Adopt's first look cannot close: a file
// that appears between the look and the rename is kept.
func TestRenameNoReplace(t *testing.T) {
	dir := t.TempDir()
	tmp, dst := filepath.Join(dir, "t.tmp"), filepath.Join(dir, "f.json")
	for p, c := range map[string]string{tmp: "new", dst: "old"} {
		if err := os.WriteFile(p, []byte(c), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if res, err := renameNoReplace(tmp, dst); err != nil || res != Kept {
		t.Fatalf("renameNoReplace = %v, %v; want Kept", res, err)
	}
	if got, _ := os.ReadFile(dst); string(got) != "old" {
		t.Errorf("%s = %q, want it kept as %q", dst, got, "old")
	}
}

// TestAdoptErrorsNameTheFile: every failure says which file, and nothing is
// left under the fragment's name.
func TestAdoptErrorsNameTheFile(t *testing.T) {
	for _, tc := range []struct {
		name    string
		content []byte // nil: no source
		setup   func(t *testing.T, src, dst string)
		path    func(src, dst string) string // the file the error names
		is      error
	}{
		{name: "no cache", path: func(src, _ string) string { return src }, is: fs.ErrNotExist},
		{name: "not JSON", content: []byte("{not json"), path: func(src, _ string) string { return src }, is: ErrNotLoadable},
		{
			name: "unsupported spec", content: []byte(`{"ignition":{"version":"9.0.0"}}`),
			path: func(src, _ string) string { return src }, is: ErrNotLoadable,
		},
		{
			// Ignition 2.24's spec, with what 3.5.0 drops (desired.CacheSuffix).
			name: "experimental spec, setuid", content: []byte(strings.Replace(strings.Replace(cache, `"3.4.0"`, `"3.6.0-experimental"`, 1), `420`, `2541`, 1)),
			path: func(src, _ string) string { return src }, is: ErrNotLoadable,
		},
		{
			name: "cache is a directory", content: nil,
			setup: func(t *testing.T, src, _ string) {
				if err := os.MkdirAll(src, 0o755); err != nil {
					t.Fatal(err)
				}
			},
			path: func(src, _ string) string { return src },
		},
		{
			name: "desired.d is a file", content: []byte(cache),
			setup: func(t *testing.T, _, dst string) {
				if err := os.MkdirAll(filepath.Dir(filepath.Dir(dst)), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Dir(dst), nil, 0o644); err != nil {
					t.Fatal(err)
				}
			},
			path: func(_, dst string) string { return filepath.Dir(dst) },
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src, dst := paths(t, tc.content)
			if tc.setup != nil {
				tc.setup(t, src, dst)
			}
			_, err := Adopt(src, dst)
			var ae *Error
			if !errors.As(err, &ae) {
				t.Fatalf("Adopt = %v (%T), want an *Error", err, err)
			}
			if want := tc.path(src, dst); ae.Path != want || !strings.Contains(err.Error(), want) {
				t.Errorf("error %q names %q, want %q", err, ae.Path, want)
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("error %q is not %v", err, tc.is)
			}
			if strings.Contains(err.Error(), "secret") {
				t.Errorf("error %q shows the config's contents", err)
			}
			if _, err := os.Lstat(dst); !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR) {
				t.Errorf("after a failure, %s: %v; want it absent", dst, err)
			}
		})
	}
}

// TestAdoptUnwritableDirectory: a failure to write leaves no temporary file
// and names the directory.
func TestAdoptUnwritableDirectory(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root writes a 0500 directory anyway")
	}
	src, dst := paths(t, []byte(cache))
	if err := os.MkdirAll(filepath.Dir(dst), 0o500); err != nil {
		t.Fatal(err)
	}
	_, err := Adopt(src, dst)
	var ae *Error
	if !errors.As(err, &ae) || ae.Path != filepath.Dir(dst) || !errors.Is(err, fs.ErrPermission) {
		t.Fatalf("Adopt = %v, want a permission error naming %s", err, filepath.Dir(dst))
	}
}

func noTemporaries(t *testing.T, dir, want string) {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	if diff := cmp.Diff([]string{want}, names); diff != "" {
		t.Errorf("%s holds (-want +got):\n%s", dir, diff)
	}
}
