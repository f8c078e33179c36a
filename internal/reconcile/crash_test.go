package reconcile

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/drift-monitor/drift-monitor/internal/check"
	"github.com/drift-monitor/drift-monitor/internal/fsx/fsxtest"
	"github.com/drift-monitor/drift-monitor/internal/model"
	"github.com/drift-monitor/drift-monitor/internal/ondisk"
	"golang.org/x/sys/unix"
)

var errCrash = fsxtest.ErrCrash

// newCrashFS is fsx's crash injector (package fsxtest) failing at step
// failAt and calling hook before every step; removing a temporary node
// after a failure is the cleanup a crash would not do: not a step of its
// own.
func newCrashFS(failAt int, hook func(step int, op string)) *fsxtest.Crash {
	return &fsxtest.Crash{FailAt: failAt, Hook: hook, Cleanup: func(name string) bool {
		return strings.HasPrefix(name, tempPrefix)
	}}
}

// version is one acceptable state of a declared file.
type version struct {
	content string
	mode    uint32
}

// crashRoot writes a drifted root: a file with other content and mode, a
// file whose directory is missing, a file that became an empty directory,
// and a hard link that became a copy.
func crashRoot(t *testing.T) (root string, entries []model.Entry, versions map[string][]version) {
	t.Helper()
	root = t.TempDir()
	uid, gid := os.Getuid(), os.Getgid()
	for _, d := range []string{"etc", "etc/over"} {
		if err := os.Mkdir(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(p, content string, mode os.FileMode) {
		if err := os.WriteFile(filepath.Join(root, p), []byte(content), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(filepath.Join(root, p), mode); err != nil {
			t.Fatal(err)
		}
	}
	write("etc/a.conf", "old content, longer than the new one\n", 0o600)
	write("etc/h", "new a\n", 0o644)
	mode := uint32(0o644)
	file := func(p, content string) model.Entry {
		return model.Entry{Kind: model.KindFile, Path: p, Type: model.TypeRegular, Mode: &mode, UID: &uid, GID: &gid,
			Content: &model.Content{Exact: []byte(content)}}
	}
	entries = []model.Entry{
		file("/etc/a.conf", "new a\n"),
		file("/etc/new/b.conf", "new b\n"),
		file("/etc/over", "was a directory\n"),
		{Kind: model.KindHardLink, Path: "/etc/h", Type: model.TypeHardLink, Target: "/etc/a.conf"},
	}
	versions = map[string][]version{
		"/etc/a.conf":     {{"old content, longer than the new one\n", 0o600}, {"new a\n", 0o644}},
		"/etc/new/b.conf": {{"", 0}, {"new b\n", 0o644}},
		"/etc/over":       {{"", 0}, {"was a directory\n", 0o644}},
		"/etc/h":          {{"new a\n", 0o644}},
	}
	return root, entries, versions
}

// state reads a declared file: its content and mode, "" and 0 when it is
// not a regular file (missing, or still the directory).
func state(root, p string) (version, error) {
	var st unix.Stat_t
	if err := unix.Lstat(filepath.Join(root, p), &st); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return version{}, nil
		}
		return version{}, err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return version{}, nil
	}
	b, err := os.ReadFile(filepath.Join(root, p))
	return version{string(b), st.Mode & 0o7777}, err
}

func repairWith(t *testing.T, root string, entries []model.Entry, fs FS) Result {
	t.Helper()
	return repairDry(t, root, entries, fs, false)
}

// repairDry checks root and repairs what differs, or with dry, plans it.
func repairDry(t *testing.T, root string, entries []model.Entry, fs FS, dry bool) Result {
	t.Helper()
	r, err := ondisk.OpenRoot(root)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	c := &check.Checker{Root: r}
	res := c.All(context.Background(), entries)
	drifted, kinds := Group(entries, res.Drift)
	rec := &Reconciler{Root: r, Declared: ondisk.Declare(entries), Entries: entries, FS: fs, DryRun: dry}
	return rec.Repair(context.Background(), drifted, kinds)
}

// TestCrashAtEveryStep: whatever step a reconcile stops at, every declared
// file holds its old content and mode or its new ones, never a part of
// either; a failed step leaves no temporary node behind; and running
// reconcile again after the crash repairs everything.
func TestCrashAtEveryStep(t *testing.T) {
	// Count the steps of a whole run first.
	root, entries, _ := crashRoot(t)
	counter := newCrashFS(0, nil)
	if res := repairWith(t, root, entries, counter); !res.Clean() {
		t.Fatalf("reconcile without faults refused %+v", res.Refused)
	}
	total := counter.Steps
	if total < 10 {
		t.Fatalf("a whole run took %d steps; the test proves nothing", total)
	}
	for failAt := 1; failAt <= total; failAt++ {
		t.Run(fmt.Sprintf("step %d", failAt), func(t *testing.T) {
			root, entries, versions := crashRoot(t)
			checkVersions := func(when string) {
				for p, vs := range versions {
					got, err := state(root, p)
					if err != nil {
						t.Fatalf("%s: %v", when, err)
					}
					ok := false
					for _, v := range vs {
						ok = ok || got == v
					}
					if !ok {
						t.Errorf("%s: %s holds %q mode %04o, neither version %+v", when, p, got.content, got.mode, vs)
					}
				}
			}
			fs := newCrashFS(failAt, func(step int, op string) {
				checkVersions(fmt.Sprintf("before step %d (%s)", step, op))
			})
			res := repairWith(t, root, entries, fs)
			if res.Clean() {
				t.Errorf("the run crashed at step %d and reported no problem", failAt)
			}
			for _, a := range res.Refused {
				// A hard link is not linked to a target whose repair failed.
				if !strings.Contains(a.Problem, errCrash.Error()) && !strings.Contains(a.Problem, "was not repaired") {
					t.Errorf("%s refused for another reason than the crash: %s", a.Path, a.Problem)
				}
			}
			checkVersions("after the crash")
			leftovers(t, root)

			// Run again, without faults: everything is repaired.
			if res := repairWith(t, root, entries, SysFS{}); !res.Clean() {
				t.Errorf("second run refused %+v", res.Refused)
			}
			for p, vs := range versions {
				if got, _ := state(root, p); got != vs[len(vs)-1] {
					t.Errorf("after the second run %s holds %q mode %04o, want %+v", p, got.content, got.mode, vs[len(vs)-1])
				}
			}
			var a, h unix.Stat_t
			if unix.Lstat(filepath.Join(root, "etc/a.conf"), &a) != nil || unix.Lstat(filepath.Join(root, "etc/h"), &h) != nil || a.Ino != h.Ino {
				t.Errorf("/etc/h is not a hard link of /etc/a.conf after the second run")
			}
		})
	}
}

// leftovers fails on any temporary node left in root.
func leftovers(t *testing.T, root string) {
	t.Helper()
	filepath.Walk(root, func(p string, _ os.FileInfo, err error) error {
		if err == nil && strings.HasPrefix(filepath.Base(p), tempPrefix) {
			t.Errorf("temporary node %s left behind", p)
		}
		return nil
	})
}

// TestRefusesNonEmptyDirectory: a file that became a directory holding
// files is not repaired, and what the directory holds is untouched.
func TestRefusesNonEmptyDirectory(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "etc/x.conf"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "etc/x.conf/keep"), []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	mode := uint32(0o644)
	entries := []model.Entry{{Kind: model.KindFile, Path: "/etc/x.conf", Type: model.TypeRegular, Mode: &mode,
		Content: &model.Content{Exact: []byte("x\n")}}}
	res := repairWith(t, root, entries, SysFS{})
	if len(res.Refused) != 1 || !strings.Contains(res.Refused[0].Problem, "not empty") {
		t.Fatalf("refused %+v, want /etc/x.conf refused as a directory that is not empty", res.Refused)
	}
	if b, err := os.ReadFile(filepath.Join(root, "etc/x.conf/keep")); err != nil || !bytes.Equal(b, []byte("mine")) {
		t.Errorf("the directory's file: %q, %v", b, err)
	}
}
