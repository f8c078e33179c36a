package imagewatch

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/drift-monitor/drift-monitor/internal/daemon/part/parttest"
	"github.com/drift-monitor/drift-monitor/internal/drift"
	"github.com/drift-monitor/drift-monitor/internal/image"
	"github.com/drift-monitor/drift-monitor/internal/journal"
	"github.com/drift-monitor/drift-monitor/internal/model"
	"github.com/drift-monitor/drift-monitor/internal/ondisk"
)

// within bounds every wait for what the part owes after an inotify
// event: it comes within milliseconds; the margin is a loaded machine's.
const within = 20 * time.Second

func write(t *testing.T, root, p, s string, mode os.FileMode) {
	t.Helper()
	full := filepath.Join(root, p)
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(full, []byte(s), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(full, mode); err != nil {
		t.Fatal(err)
	}
}

// place writes p anew and renames it into place, as an editor saves.
func place(t *testing.T, root, p, s string, mode os.FileMode) {
	t.Helper()
	write(t, root, p+".new", s, mode)
	if err := os.Rename(filepath.Join(root, p+".new"), filepath.Join(root, p)); err != nil {
		t.Fatal(err)
	}
}

// ostreeRoot is a root booted through ostree whose /etc is its /usr/etc.
func ostreeRoot(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	os.Chmod(root, 0o755)
	for _, d := range []string{"usr/etc", "etc"} {
		write(t, root, d+"/motd", "image\n", 0o644)
		write(t, root, d+"/ssh/sshd_config", "PermitRootLogin no\n", 0o600)
	}
	write(t, root, "run/ostree-booted", "", 0o644)
	return root
}

// started is the part on root, started on a fake host, the entries
// loaded and a first full check done, as the daemon does at start.
type started struct {
	p *Part
	h *parttest.Host
	r *ondisk.Root
}

func start(t *testing.T, root string, o Options) *started {
	t.Helper()
	r, err := ondisk.OpenRoot(root)
	if err != nil {
		t.Fatal(err)
	}
	o.Root = r
	if o.Trust == nil {
		o.Trust = func(string, *os.File) error { return nil }
	}
	if !o.Key.Valid() {
		o.Key = model.NewKey([]byte("0123456789abcdef0123456789abcdef"))
	}
	s := &started{p: New(o), h: &parttest.Host{}, r: r}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() { cancel(); s.p.Stop(); r.Close() })
	s.h.OnLoop(func() {
		s.p.Start(ctx, s.h)
		s.p.Loaded(ctx, nil)
		s.p.FullCheck(ctx)
	})
	return s
}

// fullCheck runs the part's full check on the loop.
func (s *started) fullCheck() (ds, ns []drift.Drift) {
	s.h.OnLoop(func() { ds, ns = s.p.FullCheck(context.Background()) })
	return ds, ns
}

func (s *started) caveat() (c string) {
	s.h.OnLoop(func() { c = s.p.Caveat() })
	return c
}

// has waits for a record of type id about host path p.
func (s *started) has(t *testing.T, id, p string) {
	t.Helper()
	s.h.Wait(t, within, id+" of "+p, func() bool {
		for _, r := range s.h.Find(id) {
			if r.Fields["DRIFT_PATH"] == p {
				return true
			}
		}
		return false
	})
}

func (s *started) count(id, p string) int {
	n := 0
	for _, r := range s.h.Find(id) {
		if r.Fields["DRIFT_PATH"] == p {
			n++
		}
	}
	return n
}

// TestNotices: an undeclared edit is one notice, counted by the caveat
// and the metrics, and one notice that it is gone when put back.
func TestNotices(t *testing.T) {
	root := ostreeRoot(t)
	s := start(t, root, Options{})
	write(t, root, "etc/motd", "edited\n", 0o644)
	s.has(t, journal.MsgUndeclared, "/etc/motd")
	if c := s.caveat(); c != "1 undeclared change to the image's /etc" {
		t.Errorf("caveat %q", c)
	}
	kinds := map[drift.Kind]int{}
	s.h.OnLoop(func() { s.p.Count(kinds) })
	if kinds[drift.Undeclared] != 1 || !slices.Equal(s.p.Kinds(), []model.Kind{model.KindUndeclared}) {
		t.Errorf("counted %v, kinds %v", kinds, s.p.Kinds())
	}
	write(t, root, "etc/motd", "image\n", 0o644)
	s.has(t, journal.MsgUndeclaredGone, "/etc/motd")
	if n := s.count(journal.MsgUndeclared, "/etc/motd"); n != 1 {
		t.Errorf("%d notices of /etc/motd, want 1", n)
	}
}

// TestSettingsFile: the mode follows the settings file while the part
// runs: drift mode makes the undeclared changes the full check's drift
// (and reports a new one through the tracker), and a file others could
// have written is refused, keeping the last good mode, said in the status
// line.
func TestSettingsFile(t *testing.T) {
	root := ostreeRoot(t)
	write(t, root, "etc/motd", "edited before the start\n", 0o644)
	trusted := true
	s := start(t, root, Options{Trust: func(p string, f *os.File) error {
		if !trusted {
			return &os.PathError{Op: "trust", Path: p, Err: os.ErrPermission}
		}
		return nil
	}})
	s.has(t, journal.MsgUndeclared, "/etc/motd")

	place(t, root, image.SettingsFile, "# what drift-monitor makes of the image\nmode = drift\n", 0o644)
	s.h.Wait(t, within, "a full check for the new mode", func() bool { return slices.Contains(s.h.FullChecks(), "the image's settings changed") })
	ds, _ := s.fullCheck()
	if len(ds) != 1 || ds[0].Path != "/etc/motd" || ds[0].EntryID != "undeclared:/etc/motd" {
		t.Fatalf("drift mode's full check: %v, want /etc/motd's undeclared drift", ds)
	}
	if c := s.caveat(); c != "" {
		t.Errorf("caveat %q in drift mode: the drift is the tracker's to say", c)
	}
	write(t, root, "etc/ssh/sshd_config", "PermitRootLogin yes\n", 0o600)
	s.h.Wait(t, within, "sshd_config's drift reported", func() bool { return len(s.h.Known()["undeclared:/etc/ssh/sshd_config"]) == 1 })

	trusted = false
	place(t, root, image.SettingsFile, "mode = off\n", 0o666)
	s.h.Wait(t, within, "the refused settings said", func() bool { return s.h.Has(journal.MsgImage, "Refusing the image's settings, keeping mode drift") })
	if c := s.caveat(); c != "image settings refused, keeping mode drift" {
		t.Errorf("caveat %q", c)
	}
	if ds, _ := s.fullCheck(); len(ds) != 2 {
		t.Errorf("with the settings refused, the full check's drift is %v, want the last good mode's two", ds)
	}

	trusted = true
	place(t, root, image.SettingsFile, "mode = loud\n", 0o644)
	s.h.Wait(t, within, "a bad mode refused by its line", func() bool {
		return s.h.Has(journal.MsgImage, image.SettingsFile+`:1: mode "loud": want notice, drift or off`)
	})
	place(t, root, image.SettingsFile, "mode = off\n", 0o644)
	s.h.Wait(t, within, "mode off", func() bool { return s.h.Has(journal.MsgImage, "The image's mode is off (was drift)") })
	if ds, ns := s.fullCheck(); len(ds)+len(ns) != 0 || s.p.Kinds() != nil || s.caveat() != "" {
		t.Errorf("mode off: drift %v, notices %v, kinds %v, caveat %q; want nothing", ds, ns, s.p.Kinds(), s.caveat())
	}
}

// TestFollowsFirstBootRecord: the first boot's leftovers are undeclared
// until drift-monitor adopt --image records them, which the part sees
// without a reload: each is gone, and the caveat counts none; a later
// edit of a recorded path is undeclared again.
func TestFollowsFirstBootRecord(t *testing.T) {
	root := ostreeRoot(t)
	write(t, root, "etc/hostname", "node-1\n", 0o644)
	write(t, root, "etc/motd", "first boot\n", 0o644)
	key := model.NewKey([]byte("0123456789abcdef0123456789abcdef"))
	s := start(t, root, Options{Key: key})
	s.has(t, journal.MsgUndeclared, "/etc/hostname")
	s.has(t, journal.MsgUndeclared, "/etc/motd")

	b, err := image.Find(context.Background(), s.r)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if n, err := image.RecordNow(context.Background(), s.r, b, &image.Recorder{Root: s.r, Key: key}, image.RecordPath); err != nil || n != 2 {
		t.Fatalf("RecordNow = %d, %v", n, err)
	}
	s.has(t, journal.MsgUndeclaredGone, "/etc/hostname")
	s.has(t, journal.MsgUndeclaredGone, "/etc/motd")
	if c := s.caveat(); c != "" {
		t.Errorf("caveat %q after the record", c)
	}
	write(t, root, "etc/motd", "edited after the first boot\n", 0o644)
	s.h.Wait(t, within, "a second notice of /etc/motd (the first boot's, then the later edit)", func() bool { return s.count(journal.MsgUndeclared, "/etc/motd") == 2 })
}

// TestUnavailable: an image host whose baseline cannot be read is said:
// a not-checked notice at every full check and a caveat, never a clean
// /etc.
func TestUnavailable(t *testing.T) {
	root := t.TempDir()
	write(t, root, "run/ostree-booted", "", 0o644)
	write(t, root, "etc/motd", "x\n", 0o644)
	s := start(t, root, Options{})
	_, ns := s.fullCheck()
	if len(ns) != 1 || ns[0].Kind != drift.NotChecked || ns[0].Path != image.EtcDir || !strings.Contains(ns[0].Message, "the booted deployment has no /usr/etc") {
		t.Errorf("notices %v, want /etc not checked, saying why", ns)
	}
	if c := s.caveat(); !strings.Contains(c, "the image's /etc not compared") {
		t.Errorf("caveat %q", c)
	}
	if !s.h.Has(journal.MsgImage, "The OS image's /etc is not compared: the booted deployment has no /usr/etc") {
		t.Errorf("records %v", s.h.Records())
	}
}

// TestHeldActivity: while reports are held (an inhibitor), events are not
// compared; the release's full check compares everything.
func TestHeldActivity(t *testing.T) {
	root := ostreeRoot(t)
	s := start(t, root, Options{})
	s.h.OnLoop(func() { s.h.Inactive = true })
	write(t, root, "etc/motd", "during an update\n", 0o644)
	// A sentinel event after it (settings refused, which the part says
	// even while held), seen once the part looked at both.
	place(t, root, image.SettingsFile, "sentinel\n", 0o644)
	s.h.Wait(t, within, "the sentinel's record", func() bool { return s.h.Has(journal.MsgImage, "not a setting") })
	if n := s.count(journal.MsgUndeclared, "/etc/motd"); n != 0 {
		t.Fatalf("compared while held: %v", s.h.Records())
	}
	s.h.OnLoop(func() { s.h.Inactive = false })
	s.fullCheck()
	s.has(t, journal.MsgUndeclared, "/etc/motd")
}

func TestTopmost(t *testing.T) {
	got := topmost([]string{"/etc/a/b", "/etc/a", "/etc/ab", "/etc/c/d/e", "/etc/c/d"})
	if want := []string{"/etc/a", "/etc/ab", "/etc/c/d"}; !slices.Equal(got, want) {
		t.Errorf("topmost = %v, want %v", got, want)
	}
}
