package watch

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/drift-monitor/drift-monitor/internal/ondisk"
)

// harness runs a watcher on a temp root and collects its events.
type harness struct {
	t    *testing.T
	dir  string
	w    *Watcher
	evs  chan Event
	errs chan error
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	dir := t.TempDir()
	r, err := ondisk.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	w, err := New(r)
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, dir: dir, w: w, evs: make(chan Event, 1024), errs: make(chan error, 16)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, ReadBufferSize)
		for {
			evs, err := w.Read(buf)
			if errors.Is(err, os.ErrClosed) {
				return
			}
			if err != nil {
				h.errs <- err
			}
			for _, e := range evs {
				h.evs <- e
			}
		}
	}()
	t.Cleanup(func() { w.Close(); <-done })
	return h
}

func (h *harness) host(p string) string { return filepath.Join(h.dir, p) }

// expect waits (bounded) for an event on path p with all bits of op.
func (h *harness) expect(p string, op Op) Event {
	h.t.Helper()
	deadline := time.After(5 * time.Second)
	var seen []Event
	for {
		select {
		case e := <-h.evs:
			if e.Path == p && e.Op&op == op {
				return e
			}
			seen = append(seen, e)
		case err := <-h.errs:
			h.t.Fatalf("watch error: %v", err)
		case <-deadline:
			h.t.Fatalf("no event %v on %s within 5s; saw %+v", op, p, seen)
		}
	}
}

func TestCloseWriteAfterWrite(t *testing.T) {
	h := newHarness(t)
	os.MkdirAll(h.host("/etc"), 0o755)
	if err := h.w.Watch([]string{"/etc"}); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(h.host("/etc/a.conf"))
	if err != nil {
		t.Fatal(err)
	}
	h.expect("/etc/a.conf", Create)
	f.WriteString("partial")
	h.expect("/etc/a.conf", Modify)
	f.Close()
	h.expect("/etc/a.conf", Write)
}

func TestRenameIntoPlaceAndRemove(t *testing.T) {
	h := newHarness(t)
	os.MkdirAll(h.host("/etc"), 0o755)
	if err := h.w.Watch([]string{"/etc"}); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(h.host("/etc/.tmp"), []byte("x"), 0o644)
	os.Rename(h.host("/etc/.tmp"), h.host("/etc/a.conf"))
	h.expect("/etc/a.conf", MovedTo)
	os.Remove(h.host("/etc/a.conf"))
	h.expect("/etc/a.conf", Remove)
	os.WriteFile(h.host("/etc/b"), nil, 0o644)
	os.Chmod(h.host("/etc/b"), 0o600)
	h.expect("/etc/b", Attrib)
}

// A directory that does not exist yet is covered by its nearest ancestor,
// and the watch moves down as the directories appear.
func TestWatchMovesDownAndBackUp(t *testing.T) {
	h := newHarness(t)
	if err := h.w.Watch([]string{"/etc/app/conf.d"}); err != nil {
		t.Fatal(err)
	}
	os.Mkdir(h.host("/etc"), 0o755)
	h.expect("/etc", Create|Rewatched)
	os.Mkdir(h.host("/etc/app"), 0o755)
	h.expect("/etc/app", Create|Rewatched)
	os.Mkdir(h.host("/etc/app/conf.d"), 0o755)
	h.expect("/etc/app/conf.d", Create|Rewatched)
	os.WriteFile(h.host("/etc/app/conf.d/x.conf"), []byte("x"), 0o644)
	h.expect("/etc/app/conf.d/x.conf", Write)

	// Deleted and re-created: the watch comes back.
	os.RemoveAll(h.host("/etc/app"))
	h.expect("/etc/app", Remove)
	os.MkdirAll(h.host("/etc/app/conf.d"), 0o755)
	// mkdir -p may race our re-watch: either the leaf is seen created, or
	// the watch lands directly on it. Both must lead to seeing the write.
	deadline := time.Now().Add(5 * time.Second)
	for {
		os.WriteFile(h.host("/etc/app/conf.d/y.conf"), []byte("y"), 0o644)
		select {
		case e := <-h.evs:
			if e.Path == "/etc/app/conf.d/y.conf" && e.Op&Write != 0 {
				return
			}
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatal("no write seen in the re-created directory")
		}
	}
}

func TestDirectoryReplacedByFile(t *testing.T) {
	for _, tc := range []struct {
		name  string
		dirs  []string
		write Op // what the file's write shows as on /etc/d
	}{
		// Only the paths under /etc/d are declared: the file's content
		// does not matter, its appearance does.
		{"nothing declared in its parent", []string{"/etc/d"}, Create | Rewatched},
		// /etc/d may itself be declared: the write is delivered.
		{"its parent holds declared paths", []string{"/etc", "/etc/d"}, Write},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			os.MkdirAll(h.host("/etc/d"), 0o755)
			if err := h.w.Watch(tc.dirs); err != nil {
				t.Fatal(err)
			}
			os.Remove(h.host("/etc/d"))
			h.expect("/etc/d", Remove|Rewatched)
			os.WriteFile(h.host("/etc/d"), []byte("now a file"), 0o644)
			h.expect("/etc/d", tc.write)
		})
	}
}

func TestSymlinkedParentResolvesInsideRoot(t *testing.T) {
	h := newHarness(t)
	os.MkdirAll(h.host("/var/home/core"), 0o755)
	// An absolute symlink, as on Fedora CoreOS: /home -> /var/home. It must
	// resolve inside the root, not on the host.
	os.Symlink("/var/home", h.host("/home"))
	if err := h.w.Watch([]string{"/home/core"}); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(h.host("/var/home/core/k"), []byte("x"), 0o600)
	h.expect("/home/core/k", Write)
}

// A directory created right after the attempt to watch it failed makes an
// event on its parent, which is watched first: the watch follows it down.
func TestDirectoryCreatedWhileMovingTheWatch(t *testing.T) {
	h := newHarness(t)
	os.MkdirAll(h.host("/etc"), 0o755)
	h.w.onMissing = func(dir string) {
		if dir == "/etc/app" {
			os.Mkdir(h.host("/etc/app"), 0o755) // the concurrent mkdir
		}
	}
	if err := h.w.Watch([]string{"/etc/app"}); err != nil {
		t.Fatal(err)
	}
	h.expect("/etc/app", Create|Rewatched)
	os.WriteFile(h.host("/etc/app/x.conf"), []byte("x"), 0o644)
	h.expect("/etc/app/x.conf", Write)
}

// TestWantedDirectoryOwnAttributes: a change to a watched directory's own
// attributes is delivered on its path, from its own watch: where it is a
// mount point, its parent's watch never hears of it (fsnotify_parent stops
// at a mount's root), and a declared directory that is one (a package's
// /etc/drift-monitor, bound in) had its chmod go unseen.
func TestWantedDirectoryOwnAttributes(t *testing.T) {
	h := newHarness(t)
	if err := os.MkdirAll(h.host("/etc/d"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := h.w.Watch([]string{"/etc/d"}); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(h.host("/etc/d"), 0o700); err != nil {
		t.Fatal(err)
	}
	if e := h.expect("/etc/d", Attrib); !e.IsDir {
		t.Errorf("event %+v: want a directory's", e)
	}
}
