package watch

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"
)

// kernelWatches maps every directory in the temp root that the kernel says
// the watcher watches (/proc/self/fdinfo of its inotify descriptor, matched
// by inode) to what the watch delivers: "all" (writes too: a directory that
// holds declared paths) or "names" (names appearing and vanishing only: a
// directory on the way). A watch on an inode not in the tree shows as
// "?ino". It reads the kernel's view, not the watcher's bookkeeping, so that
// a watch left on a moved-away directory, or missing on a new one, shows.
func (h *harness) kernelWatches() (map[string]string, error) {
	info, err := os.ReadFile(fmt.Sprintf("/proc/self/fdinfo/%d", h.w.fd))
	if err != nil {
		return nil, err
	}
	masks := map[uint64]uint64{}
	for _, line := range strings.Split(string(info), "\n") {
		if !strings.HasPrefix(line, "inotify ") {
			continue
		}
		// inotify wd:1 ino:1a2b sdev:800001 mask:fce ... (hexadecimal)
		var ino, mask uint64
		for _, f := range strings.Fields(line) {
			if k, v, ok := strings.Cut(f, ":"); ok && (k == "ino" || k == "mask") {
				n, err := strconv.ParseUint(v, 16, 64)
				if err != nil {
					return nil, fmt.Errorf("fdinfo line %q: %w", line, err)
				}
				if k == "ino" {
					ino = n
				} else {
					mask = n
				}
			}
		}
		masks[ino] = mask
	}
	got := map[string]string{}
	err = filepath.WalkDir(h.dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		ino := fi.Sys().(*syscall.Stat_t).Ino
		mask, ok := masks[ino]
		if !ok {
			return nil
		}
		delete(masks, ino)
		kind := "names"
		if mask&unix.IN_MODIFY != 0 {
			kind = "all"
		}
		rel, _ := filepath.Rel(h.dir, p)
		got[filepath.Join("/", rel)] = kind
		return nil
	})
	for ino := range masks {
		got[fmt.Sprintf("?%d", ino)] = "stale"
	}
	return got, err
}

// waitWatches waits (bounded) until the kernel's watches are want: the
// watcher moves them as the events of a change arrive.
func (h *harness) waitWatches(want map[string]string) {
	h.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		got, err := h.kernelWatches()
		if err == nil && cmp.Diff(want, got) == "" {
			return
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("watches (-want +got): %v\n%s", err, cmp.Diff(want, got))
		}
		time.Sleep(10 * time.Millisecond) // a poll interval inside a bounded wait
	}
}

func (h *harness) mkdirs(dirs ...string) {
	h.t.Helper()
	for _, d := range dirs {
		if err := os.MkdirAll(h.host(d), 0o755); err != nil {
			h.t.Fatal(err)
		}
	}
}

func (h *harness) rename(from, to string) {
	h.t.Helper()
	if err := os.Rename(h.host(from), h.host(to)); err != nil {
		h.t.Fatal(err)
	}
}

// A directory on the way to declared paths that is moved away, replaced or
// re-created at any depth is seen where it happens, in its parent, as a
// Rewatched event on its path; the watches below are placed again on what
// now stands there, and only the directories that hold declared paths get
// writes delivered.
func TestAncestorChanges(t *testing.T) {
	// After the setup of every case: /etc/storm holds only the declared
	// directories d1 and d2; /etc itself holds no declared path.
	storm := map[string]string{"/": "names", "/etc": "names", "/etc/storm": "names", "/etc/storm/d1": "all", "/etc/storm/d2": "all"}
	above := map[string]string{"/": "names", "/etc": "names"}
	type step struct {
		name    string
		do      func(h *harness)
		path    string // an event on it...
		op      Op     // ...with these bits
		watches map[string]string
	}
	tests := []struct {
		name   string
		extra  []string // directories made besides the storm tree...
		wanted []string // ...and declared besides d1 and d2
		steps  []step
	}{{
		name: "moved away and re-created",
		steps: []step{
			{"moved away", func(h *harness) { h.rename("/etc/storm", "/etc/storm.gone") }, "/etc/storm", Rewatched | Remove, above},
			{"re-created", func(h *harness) { h.mkdirs("/etc/storm/d1", "/etc/storm/d2") }, "/etc/storm", Rewatched | Create, storm},
			{"written in the new tree", func(h *harness) { os.WriteFile(h.host("/etc/storm/d1/f"), []byte("x"), 0o644) }, "/etc/storm/d1/f", Write, storm},
			{"the old tree moved back", func(h *harness) {
				os.RemoveAll(h.host("/etc/storm"))
				h.rename("/etc/storm.gone", "/etc/storm")
			}, "/etc/storm", Rewatched | MovedTo, storm},
		},
	}, {
		name: "the top-level directory moved",
		steps: []step{
			{"moved", func(h *harness) { h.rename("/etc", "/etc.gone") }, "/etc", Rewatched | Remove, map[string]string{"/": "names"}},
			{"moved back", func(h *harness) { h.rename("/etc.gone", "/etc") }, "/etc", Rewatched | MovedTo, storm},
		},
	}, {
		name:  "replaced by another directory",
		extra: []string{"/srv/storm/d1", "/srv/storm/d2"},
		steps: []step{{"replaced", func(h *harness) {
			h.rename("/etc/storm", "/srv/storm.old")
			h.rename("/srv/storm", "/etc/storm")
		}, "/etc/storm", Rewatched | MovedTo, storm}},
	}, {
		name: "replaced by a file",
		steps: []step{{"replaced", func(h *harness) {
			h.rename("/etc/storm", "/etc/storm.gone")
			os.WriteFile(h.host("/etc/storm"), []byte("a file\n"), 0o644)
		}, "/etc/storm", Rewatched | Create, above}},
	}, {
		name:  "replaced by a symlink to elsewhere",
		extra: []string{"/srv/other/d1", "/srv/other/d2"},
		steps: []step{
			{"replaced", func(h *harness) {
				h.rename("/etc/storm", "/etc/storm.gone")
				os.Symlink("/srv/other", h.host("/etc/storm")) // resolved inside the root
			}, "/etc/storm", Rewatched | Create,
				map[string]string{"/": "names", "/etc": "names", "/srv/other": "names", "/srv/other/d1": "all", "/srv/other/d2": "all"}},
			{"written through the link", func(h *harness) { os.WriteFile(h.host("/srv/other/d2/f"), []byte("x"), 0o644) }, "/etc/storm/d2/f", Write, nil},
			// The watch through the link is on the target: its own move
			// is seen there.
			{"its target moved away", func(h *harness) { h.rename("/srv/other", "/srv/moved") }, "/etc/storm", Rewatched | Remove, above},
			{"the link retargeted", func(h *harness) {
				os.Symlink("/srv/moved", h.host("/etc/storm.new"))
				h.rename("/etc/storm.new", "/etc/storm")
			}, "/etc/storm", Rewatched | MovedTo,
				map[string]string{"/": "names", "/etc": "names", "/srv/moved": "names", "/srv/moved/d1": "all", "/srv/moved/d2": "all"}},
		},
	}, {
		name:   "a deep ancestor moved",
		extra:  []string{"/a/b/c/d"},
		wanted: []string{"/a/b/c/d"},
		steps: []step{{"moved", func(h *harness) { h.rename("/a/b", "/a/b.gone") }, "/a/b", Rewatched | Remove,
			map[string]string{"/": "names", "/a": "names", "/etc": "names", "/etc/storm": "names", "/etc/storm/d1": "all", "/etc/storm/d2": "all"}}},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			h.mkdirs(append([]string{"/etc/storm/d1", "/etc/storm/d2"}, tc.extra...)...)
			if err := h.w.Watch(append([]string{"/etc/storm/d1", "/etc/storm/d2"}, tc.wanted...)); err != nil {
				t.Fatal(err)
			}
			for _, s := range tc.steps {
				s.do(h)
				if s.path != "" {
					h.expect(s.path, s.op)
				}
				if s.watches != nil {
					h.waitWatches(s.watches)
				}
			}
		})
	}
}

// Writes to undeclared files in a directory that is only on the way to
// declared paths do not reach the reader: the kernel does not even deliver
// them (a busy /var/log on the way to /var/log/app would otherwise fill the
// queue, whose overflow costs a full check).
func TestWritesOnTheWayAreNotDelivered(t *testing.T) {
	h := newHarness(t)
	h.mkdirs("/etc/storm/d1")
	if err := h.w.Watch([]string{"/etc/storm/d1"}); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(h.host("/etc/undeclared.log"))
	if err != nil {
		t.Fatal(err)
	}
	for range 100 {
		f.WriteString("line\n")
	}
	f.Close()
	os.Chmod(h.host("/etc/undeclared.log"), 0o600)
	os.Rename(h.host("/etc/undeclared.log"), h.host("/etc/undeclared.log.1"))
	os.WriteFile(h.host("/etc/storm/d1/f"), []byte("x"), 0o644)
	// Events arrive in order: the first is the declared directory's.
	select {
	case e := <-h.evs:
		if e.Path != "/etc/storm/d1/f" {
			t.Errorf("first event %+v, want one on /etc/storm/d1/f", e)
		}
	case err := <-h.errs:
		t.Fatal(err)
	case <-time.After(5 * time.Second):
		t.Fatal("no event on /etc/storm/d1/f within 5s")
	}
}

// When watches run out on the way to declared directories, every declared
// directory below the one that could not be watched is polled (its moves
// would go unseen), and a retry once watches are free covers them again.
func TestExhaustedOnTheWay(t *testing.T) {
	h := newHarness(t)
	h.mkdirs("/etc/storm/d1", "/etc/storm/d2", "/etc/other")
	h.w.mu.Lock()
	h.w.limit = 3 // "/", "/etc", "/etc/other": nothing left for /etc/storm
	h.w.mu.Unlock()
	err := h.w.Watch([]string{"/etc/other", "/etc/storm/d1", "/etc/storm/d2"})
	if !errors.Is(err, ErrExhausted) {
		t.Fatalf("Watch: %v, want ErrExhausted", err)
	}
	if diff := cmp.Diff([]string{"/etc/storm/d1", "/etc/storm/d2"}, h.w.Polled()); diff != "" {
		t.Errorf("Polled (-want +got):\n%s", diff)
	}
	h.waitWatches(map[string]string{"/": "names", "/etc": "names", "/etc/other": "all"})

	h.w.mu.Lock()
	h.w.limit = 0
	h.w.mu.Unlock()
	if err := h.w.Retry(); err != nil {
		t.Fatalf("Retry with watches free: %v", err)
	}
	if got := h.w.Polled(); len(got) > 0 {
		t.Errorf("Polled after the retry: %v", got)
	}
	h.waitWatches(map[string]string{"/": "names", "/etc": "names", "/etc/other": "all",
		"/etc/storm": "names", "/etc/storm/d1": "all", "/etc/storm/d2": "all"})
	h.rename("/etc/storm", "/etc/storm.gone")
	h.expect("/etc/storm", Rewatched|Remove)
}

func TestOpString(t *testing.T) {
	for op, want := range map[Op]string{
		Create | Rewatched: "Create|Rewatched",
		Write:              "Write",
		0:                  "0x0",
		Remove | 1<<20:     "Remove|0x100000",
	} {
		if got := op.String(); got != want {
			t.Errorf("Op(%d).String() = %q, want %q", uint32(op), got, want)
		}
	}
}
