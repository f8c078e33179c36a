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

	"github.com/drift-monitor/drift-monitor/internal/desired/discover"
	"github.com/drift-monitor/drift-monitor/internal/ondisk"
)

// cache is shaped as Ignition's config cache is (every object written out,
// no indentation), in a spec drift-monitor loads.
const cache = `{"ignition":{"config":{"replace":{"verification":{}}},"proxy":{},"security":{"tls":{}},"timeouts":{},"version":"3.4.0"},"kernelArguments":{},"passwd":{},"storage":{"files":[{"group":{},"path":"/etc/x","user":{},"contents":{"source":"data:,secret","verification":{}},"mode":420}]},"systemd":{}}`

// paths returns a source holding content (unless content is nil) and a
// destination in a desired.d that does not exist yet, both under a new
// root: the paths on this machine, which adopt takes apart (adoptAt).
func paths(t *testing.T, content []byte) (src, dst string) {
	t.Helper()
	root := t.TempDir()
	roots[root+DefaultSource] = root
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

// roots maps a source paths returned to its root.
var roots = map[string]string{}

// adoptAt is Adopt of src to dst, paths on this machine under the root
// paths made for src.
func adoptAt(t *testing.T, src, dst string) (Result, error) {
	t.Helper()
	dir, ok := roots[src]
	if !ok {
		t.Fatalf("%s: not a source paths made", src)
	}
	r, err := ondisk.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	return Adopt(r, strings.TrimPrefix(src, dir), strings.TrimPrefix(dst, dir))
}

func TestAdoptWritesTheCacheOnce(t *testing.T) {
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	src, dst := paths(t, []byte(cache))
	// t.TempDir makes the root 0777 less the umask: any user could
	// replace its run/, and the cache would be refused as theirs.
	if err := os.Chmod(roots[src], 0o755); err != nil {
		t.Fatal(err)
	}

	res, err := adoptAt(t, src, dst)
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
	if res, err := adoptAt(t, src, dst); err != nil || res != Kept {
		t.Fatalf("second Adopt = %v, %v; want Kept", res, err)
	}
	if got2, _ := os.ReadFile(dst); string(got2) != cache {
		t.Errorf("second Adopt changed the fragment to %q", got2)
	}
	noTemporaries(t, filepath.Dir(dst), filepath.Base(dst))
}

// TestAdoptExperimental: the cache in an experimental spec, as Ignition 2.27,
// 2.24 and 2.14 write it, is adopted when the fragment's name says it is a cache;
// under another name (--to), the loader would refuse its version, and so
// does Adopt.
func TestAdoptExperimental(t *testing.T) {
	for _, v := range []string{"3.7.0-experimental", "3.6.0-experimental", "3.4.0-experimental"} {
		content := []byte(strings.Replace(cache, `"3.4.0"`, `"`+v+`"`, 1))
		t.Run(v, func(t *testing.T) {
			src, dst := paths(t, content)
			if res, err := adoptAt(t, src, dst); err != nil || res != Adopted {
				t.Fatalf("Adopt = %v, %v; want Adopted", res, err)
			}
			plain := filepath.Join(filepath.Dir(dst), "10-firstboot.json")
			_, err := adoptAt(t, src, plain)
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
			if res, err := adoptAt(t, src, dst); err != nil || res != Kept {
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

// TestAdoptErrorsNameTheFile: every failure says which file, and nothing is
// left under the fragment's name; a cache refused leaves nothing at all
// (not even the fragment's directory): everything is checked before
// anything is written.
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
			// Ignition 2.24's spec, with a key 3.6.0 lacks (discover.CacheSuffix).
			name: "experimental spec, a key 3.6.0 lacks", content: []byte(strings.Replace(strings.Replace(cache, `"3.4.0"`, `"3.6.0-experimental"`, 1), `"mode"`, `"mdoe"`, 1)),
			path: func(src, _ string) string { return src }, is: ErrNotLoadable,
		},
		{
			name: "a cache others may write", content: []byte(cache),
			setup: func(t *testing.T, src, _ string) {
				if err := os.Chmod(src, 0o666); err != nil {
					t.Fatal(err)
				}
			},
			path: func(src, _ string) string { return src }, is: discover.ErrOthersMayWrite,
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
			_, err := adoptAt(t, src, dst)
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
			if etc := filepath.Join(roots[src], "etc"); tc.path(src, dst) == src {
				if _, err := os.Lstat(etc); !errors.Is(err, fs.ErrNotExist) {
					t.Errorf("the cache refused, %s was made: %v", etc, err)
				}
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
	_, err := adoptAt(t, src, dst)
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

// TestAdoptInsideTheRoot: the root's /run and /etc are absolute symbolic
// links, as on a host whose tree is mounted elsewhere. They lead where they
// would if the root were /: the cache is read from the root's copy and the
// fragment written into it, never to (or from) the machine's own paths of
// those names.
func TestAdoptInsideTheRoot(t *testing.T) {
	root := t.TempDir()
	// Names that exist nowhere on this machine: a lexical join would
	// create the fragment there, or fail to find the cache.
	away := "/drift-monitor-adopt-" + filepath.Base(root)
	for p, target := range map[string]string{"run": away + "/run", "etc": away + "/etc"} {
		if err := os.Symlink(target, filepath.Join(root, p)); err != nil {
			t.Fatal(err)
		}
	}
	inside := filepath.Join(root, away)
	for _, d := range []string{"run", "etc"} {
		if err := os.MkdirAll(filepath.Join(inside, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(inside, "run/ignition.json"), []byte(cache), 0o640); err != nil {
		t.Fatal(err)
	}
	r, err := ondisk.OpenRoot(root)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if res, err := Adopt(r, DefaultSource, DefaultDest); err != nil || res != Adopted {
		t.Fatalf("Adopt = %v, %v; want Adopted", res, err)
	}
	got, err := os.ReadFile(filepath.Join(inside, DefaultDest))
	if err != nil || string(got) != cache {
		t.Errorf("the fragment inside the root: %q, %v; want the cache", got, err)
	}
	if _, err := os.Lstat(away); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("%s on this machine: %v; want it never created", away, err)
	}
}

// TestAdoptParsesUnderTheFragmentsName: the cache is refused when the
// daemon would refuse it under the fragment's name (--to), whatever the
// source is named, and a name the daemon loads nothing from is refused
// before anything is written.
func TestAdoptParsesUnderTheFragmentsName(t *testing.T) {
	experimental := []byte(strings.Replace(cache, `"3.4.0"`, `"3.7.0-experimental"`, 1))
	for _, tc := range []struct {
		name    string
		content []byte
		from    string // under the root; "" is DefaultSource
		to      string // base name in desired.d
		is      error
	}{
		{name: "JSON config as YAML", content: []byte(cache), to: "10-firstboot.yaml", is: ErrNotLoadable},
		{name: "a cache's name, a plain fragment", content: experimental, from: "/run/x" + discover.CacheSuffix, to: "10-firstboot.json", is: ErrNotLoadable},
		{name: "not a fragment name", content: []byte(cache), to: "10-firstboot.conf"},
		{name: "hidden", content: []byte(cache), to: ".10-firstboot.json"},
		{name: "a child's copy", content: []byte(cache), to: "10-firstboot.child"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src, dst := paths(t, tc.content)
			if tc.from != "" {
				root := roots[src]
				moved := filepath.Join(root, tc.from)
				if err := os.Rename(src, moved); err != nil {
					t.Fatal(err)
				}
				roots[moved] = root
				src = moved
			}
			dst = filepath.Join(filepath.Dir(dst), tc.to)
			res, err := adoptAt(t, src, dst)
			if err == nil {
				t.Fatalf("Adopt to %s = %v, want it refused", tc.to, res)
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("Adopt to %s = %v, want %v", tc.to, err, tc.is)
			}
			if _, err := os.Lstat(dst); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("after the refusal, %s: %v; want it absent", dst, err)
			}
		})
	}
}
