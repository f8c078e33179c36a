package fsx_test

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/drift-monitor/drift-monitor/internal/fsx"
	"github.com/drift-monitor/drift-monitor/internal/fsx/fsxtest"
)

func openDir(t *testing.T, dir string) int {
	t.Helper()
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	return fd
}

// names lists dir's entries.
func names(t *testing.T, dir string) []string {
	t.Helper()
	d, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	n, err := d.Readdirnames(-1)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestTempName(t *testing.T) {
	for pattern, want := range map[string][2]string{
		".f.json.*.tmp":              {".f.json.", ".tmp"},
		".drift-monitor-reconcile-*": {".drift-monitor-reconcile-", ""},
		"x":                          {"x", ""},
	} {
		got := fsx.TempName(pattern)
		if !strings.HasPrefix(got, want[0]) || !strings.HasSuffix(got, want[1]) ||
			len(got) != len(want[0])+16+len(want[1]) {
			t.Errorf("TempName(%q) = %q, want %s + 16 hex digits + %s", pattern, got, want[0], want[1])
		}
	}
	if a, b := fsx.TempName("*"), fsx.TempName("*"); a == b {
		t.Errorf("two temporary names are the same: %s", a)
	}
}

// TestWriteFile: each way of placing gives the name the new content with
// the mode asked for whatever the umask, and leaves no temporary file; a
// taken name under NoReplace and LinkOnce is EEXIST and the old file stays.
func TestWriteFile(t *testing.T) {
	old := syscall.Umask(0o077)
	defer syscall.Umask(old)
	for _, tc := range []struct {
		how     fsx.How
		exists  bool
		want    string
		wantErr error
	}{
		{fsx.Replace, false, "new", nil},
		{fsx.Replace, true, "new", nil},
		{fsx.NoReplace, false, "new", nil},
		{fsx.NoReplace, true, "old", fs.ErrExist},
		{fsx.LinkOnce, false, "new", nil},
		{fsx.LinkOnce, true, "old", fs.ErrExist},
	} {
		t.Run(fmt.Sprintf("how %d exists %v", tc.how, tc.exists), func(t *testing.T) {
			dir := t.TempDir()
			p := filepath.Join(dir, "f")
			if tc.exists {
				if err := os.WriteFile(p, []byte("old"), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			err := fsx.WriteFile(fsx.Sys{}, openDir(t, dir), fsx.File{Name: "f", Pattern: ".f.*.tmp", Mode: 0o644, How: tc.how}, fsx.Bytes([]byte("new")))
			if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil) != (err == nil) {
				t.Fatalf("WriteFile = %v, want %v", err, tc.wantErr)
			}
			got, err := os.ReadFile(p)
			if err != nil || string(got) != tc.want {
				t.Fatalf("%s = %q, %v; want %q", p, got, err, tc.want)
			}
			if fi, _ := os.Stat(p); !tc.exists && fi.Mode().Perm() != 0o644 {
				t.Errorf("%s has mode %04o, want 0644 whatever the umask", p, fi.Mode().Perm())
			}
			if n := names(t, dir); len(n) != 1 {
				t.Errorf("%s holds %q, want only f", dir, n)
			}
		})
	}
}

// TestRenameNoReplace is the race a writer's first look cannot close: a
// file that appears between the look and the rename is kept.
func TestRenameNoReplace(t *testing.T) {
	for _, fallback := range []bool{false, true} {
		t.Run(fmt.Sprintf("link fallback %v", fallback), func(t *testing.T) {
			if fallback {
				defer fsx.SetRenameat2(func(int, string, int, string, uint) error { return unix.EINVAL })()
			}
			dir := t.TempDir()
			for name, c := range map[string]string{"t.tmp": "new", "f.json": "old", "u.tmp": "other"} {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(c), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			dirfd := openDir(t, dir)
			if err := fsx.RenameNoReplace(dirfd, "t.tmp", "f.json"); !errors.Is(err, unix.EEXIST) {
				t.Fatalf("RenameNoReplace over a file = %v, want EEXIST", err)
			}
			if got, _ := os.ReadFile(filepath.Join(dir, "f.json")); string(got) != "old" {
				t.Errorf("f.json = %q, want it kept as %q", got, "old")
			}
			if err := fsx.RenameNoReplace(dirfd, "u.tmp", "g.json"); err != nil {
				t.Fatalf("RenameNoReplace to a free name: %v", err)
			}
			if got, _ := os.ReadFile(filepath.Join(dir, "g.json")); string(got) != "other" {
				t.Errorf("g.json = %q, want %q", got, "other")
			}
			if _, err := os.Lstat(filepath.Join(dir, "u.tmp")); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("u.tmp is still there after its rename (%v)", err)
			}
		})
	}
}

// TestWriteFileCrashAtEveryStep: whatever step WriteFile stops at, the
// name holds the old content or all of the new one, the failure is
// reported, and no temporary file is left behind.
func TestWriteFileCrashAtEveryStep(t *testing.T) {
	for _, how := range []fsx.How{fsx.Replace, fsx.NoReplace, fsx.LinkOnce} {
		write := func(t *testing.T, f fsx.FS) (string, error) {
			dir := t.TempDir()
			if how == fsx.Replace {
				if err := os.WriteFile(filepath.Join(dir, "f"), []byte("old content"), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			err := fsx.WriteFile(f, openDir(t, dir), fsx.File{Name: "f", Pattern: ".f.*.tmp", Mode: 0o600, How: how}, fsx.Bytes([]byte("new content")))
			return dir, err
		}
		cleanup := func(name string) bool { return strings.HasSuffix(name, ".tmp") }
		counter := &fsxtest.Crash{Cleanup: cleanup}
		if _, err := write(t, counter); err != nil {
			t.Fatal(err)
		}
		if counter.Steps < 5 {
			t.Fatalf("how %d: a whole write took %d steps; the test proves nothing", how, counter.Steps)
		}
		for failAt := 1; failAt <= counter.Steps; failAt++ {
			t.Run(fmt.Sprintf("how %d step %d", how, failAt), func(t *testing.T) {
				var dir string
				check := func(when string) {
					got, err := os.ReadFile(filepath.Join(dir, "f"))
					if errors.Is(err, fs.ErrNotExist) && how != fsx.Replace {
						return
					}
					if s := string(got); s != "old content" && s != "new content" {
						t.Errorf("%s: f holds %q (%v), neither version", when, s, err)
					}
				}
				crash := &fsxtest.Crash{FailAt: failAt, Hook: func(step int, op string) {
					if dir != "" {
						check(fmt.Sprintf("before step %d (%s)", step, op))
					}
				}, Cleanup: cleanup}
				var err error
				dir, err = write(t, crash)
				if !errors.Is(err, fsxtest.ErrCrash) {
					t.Errorf("the write crashed at step %d and reported %v", failAt, err)
				}
				check("after the crash")
				for _, n := range names(t, dir) {
					if n != "f" {
						t.Errorf("after a failed step, %s is left behind", n)
					}
				}
			})
		}
	}
}

// TestMkdirAll: missing directories are made with their modes whatever
// the umask, an existing one keeps its own, and a file in the way is named.
func TestMkdirAll(t *testing.T) {
	base := t.TempDir()
	open := func(dir string) (int, error) {
		return unix.Open(filepath.Join(base, dir), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	}
	if err := os.Mkdir(filepath.Join(base, "kept"), 0o750); err != nil {
		t.Fatal(err)
	}
	old := syscall.Umask(0o777)
	defer syscall.Umask(old)
	fd, err := fsx.MkdirAll(open, "/kept/a/b", 0o700, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	unix.Close(fd)
	for dir, want := range map[string]os.FileMode{"kept": 0o750, "kept/a": 0o755, "kept/a/b": 0o700} {
		if fi, err := os.Stat(filepath.Join(base, dir)); err != nil || fi.Mode().Perm() != want {
			t.Errorf("%s: %v, %v; want mode %04o", dir, fi.Mode(), err, want)
		}
	}
	if err := os.WriteFile(filepath.Join(base, "file"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = fsx.MkdirAll(open, "/file/x", 0o700, 0o755)
	var fe *fsx.Error
	if !errors.As(err, &fe) || fe.Name != "/file/x" || !strings.Contains(err.Error(), "not a directory") {
		t.Errorf("MkdirAll through a file = %v, want an error naming /file/x, not a directory", err)
	}
}
