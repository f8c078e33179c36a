package digestkey_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/drift-monitor/drift-monitor/internal/digestkey"
)

func TestLoadMakesOneKey(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	const n = 8
	keys := make([][]byte, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			keys[i], errs[i] = digestkey.Load(dir)
		}()
	}
	wg.Wait()
	for i := range keys {
		if errs[i] != nil {
			t.Fatalf("Load %d: %v", i, errs[i])
		}
		if len(keys[i]) != digestkey.Size || !bytes.Equal(keys[i], keys[0]) {
			t.Fatalf("Load %d gave another key than Load 0: first users must agree on one", i)
		}
	}
	again, err := digestkey.Load(dir)
	if err != nil || !bytes.Equal(again, keys[0]) {
		t.Errorf("Load again = %x, %v; want the key made first", again, err)
	}
	for p, want := range map[string]os.FileMode{dir: 0o700 | os.ModeDir, filepath.Join(dir, digestkey.FileName): 0o600} {
		if fi, err := os.Stat(p); err != nil || fi.Mode() != want {
			t.Errorf("%s: %v, %v; want mode %v", p, fi.Mode(), err, want)
		}
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("%s holds %d files, want the key alone (no temporary file left)", dir, len(ents))
	}
}

func TestLoadRefuses(t *testing.T) {
	good := strings.Repeat("ab", digestkey.Size) + "\n"
	tests := []struct {
		name  string
		setup func(t *testing.T, p string)
		want  string
	}{
		{"readable by others", func(t *testing.T, p string) { write(t, p, good, 0o644) }, "lets others at it"},
		{"writable by the group", func(t *testing.T, p string) { write(t, p, good, 0o620) }, "lets others at it"},
		{"not hex", func(t *testing.T, p string) { write(t, p, strings.Repeat("zz", digestkey.Size), 0o600) }, "not 32 hex-encoded bytes"},
		{"too short", func(t *testing.T, p string) { write(t, p, "abcd\n", 0o600) }, "not 32 hex-encoded bytes"},
		{"a symlink to a key", func(t *testing.T, p string) {
			other := filepath.Join(filepath.Dir(p), "other")
			write(t, other, good, 0o600)
			if err := os.Symlink(other, p); err != nil {
				t.Fatal(err)
			}
		}, "too many levels of symbolic links"},
		{"a directory", func(t *testing.T, p string) {
			if err := os.Mkdir(p, 0o700); err != nil {
				t.Fatal(err)
			}
		}, "not a regular file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			p := filepath.Join(dir, digestkey.FileName)
			tt.setup(t, p)
			k, err := digestkey.Load(dir)
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), p) {
				t.Errorf("Load = %x, %v; want an error naming %s: %s", k, err, p, tt.want)
			}
		})
	}
}

func TestLoadWithoutAWritableDirectory(t *testing.T) {
	// Where nothing can be made, even by root: no key, and an error.
	if k, err := digestkey.Load("/proc/self/drift-monitor"); err == nil {
		t.Errorf("Load in /proc = %x, want an error", k)
	}
	if os.Geteuid() == 0 {
		return // root writes into a directory without write permission
	}
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o500); err != nil {
		t.Fatal(err)
	}
	if k, err := digestkey.Load(dir); err == nil {
		t.Errorf("Load in a read-only directory = %x, want an error", k)
	}
}

func TestDir(t *testing.T) {
	t.Setenv("STATE_DIRECTORY", "/var/lib/drift-monitor:/var/lib/other")
	if got := digestkey.Dir(); got != "/var/lib/drift-monitor" {
		t.Errorf("Dir with $STATE_DIRECTORY = %q, want its first directory", got)
	}
	t.Setenv("STATE_DIRECTORY", "")
	want := ""
	if os.Geteuid() == 0 {
		want = digestkey.DefaultDir
	}
	if got := digestkey.Dir(); got != want {
		t.Errorf("Dir = %q, want %q", got, want)
	}
}

func write(t *testing.T, p, content string, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
}
