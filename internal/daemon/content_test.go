package daemon

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/drift-monitor/drift-monitor/internal/check"
	"github.com/drift-monitor/drift-monitor/internal/journal"
	"github.com/drift-monitor/drift-monitor/internal/model"
	"github.com/drift-monitor/drift-monitor/internal/ondisk"
)

// waitFor polls cond until it holds, within a bound generous for a loaded
// machine (what it waits for comes within milliseconds).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond) // a poll interval inside a bounded wait
	}
}

// gatedRead is a background read the test holds: the file is read (for
// real) when the worker takes the job, and the result is handed back only
// when the test releases it.
type gatedRead struct {
	path    string
	ctx     context.Context
	read    *check.ContentRead
	release chan struct{}
}

// largeFileDaemon runs a daemon on a root declaring /etc/big.bin (a remote
// source with a verification hash, too large for the loop to read: every
// comparison of it is a background read, handed to the test on reads) and
// /etc/small.conf, both as they should be.
type largeFileDaemon struct {
	*Daemon
	t      *testing.T
	root   string
	big    []byte
	log    *records
	notify *fakeNotifier
	reads  chan *gatedRead
}

func startLargeFileDaemon(t *testing.T) *largeFileDaemon {
	t.Helper()
	h, g := startLargeFileDaemonHeld(t, nil)
	// The first check deferred /etc/big.bin: it is clean.
	g.release <- struct{}{}
	h.waitIdle()
	if st := h.status(); st != "No drift: watching 2 paths, 0 units" {
		t.Fatalf("status after the first check: %q", st)
	}
	return h
}

// startLargeFileDaemonHeld is startLargeFileDaemon with /etc/big.bin holding
// onDisk (nil: what it should), returned as soon as the daemon is ready,
// with the first check's read of /etc/big.bin held.
func startLargeFileDaemonHeld(t *testing.T, onDisk []byte) (*largeFileDaemon, *gatedRead) {
	t.Helper()
	root := t.TempDir()
	big := bytes.Repeat([]byte("0123456789abcdef"), 2*inlineReadLimit/16)
	if onDisk == nil {
		onDisk = big
	}
	sum := sha256.Sum256(big)
	owner := fmt.Sprintf(`"user":{"id":%d},"group":{"id":%d}`, os.Getuid(), os.Getgid())
	cfg := filepath.Join(root, "c.ign")
	writeFile(t, cfg, []byte(`{"ignition":{"version":"3.4.0"},"storage":{"files":[
 {"path":"/etc/big.bin","mode":420,`+owner+`,"contents":{"source":"https://example.com/big.bin","verification":{"hash":"sha256-`+hex.EncodeToString(sum[:])+`"}}},
 {"path":"/etc/small.conf","mode":420,`+owner+`,"contents":{"source":"data:,small%0A"}}]}}`))
	writeFile(t, filepath.Join(root, "etc/big.bin"), onDisk)
	writeFile(t, filepath.Join(root, "etc/small.conf"), []byte("small\n"))

	h := &largeFileDaemon{t: t, root: root, big: big, log: &records{},
		notify: &fakeNotifier{ready: make(chan struct{}, 1), interval: 40 * time.Millisecond},
		reads:  make(chan *gatedRead)}
	d, err := New(Options{Root: root, Configs: []string{cfg}, Notify: h.notify, Log: slog.New(h.log)})
	if err != nil {
		t.Fatal(err)
	}
	h.Daemon = d
	stop := make(chan struct{})
	d.reads.read = func(ctx context.Context, o *ondisk.Observer, e *model.Entry) *check.ContentRead {
		g := &gatedRead{path: e.Path, ctx: ctx, read: d.checker.ReadContent(context.Background(), o, e), release: make(chan struct{})}
		select {
		case h.reads <- g:
		case <-stop:
			return nil
		}
		select {
		case <-g.release:
		case <-stop:
		}
		return g.read
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx, nil) }()
	t.Cleanup(func() { close(stop); cancel(); <-done; d.Close() })
	select {
	case <-h.notify.ready:
	case <-time.After(20 * time.Second):
		t.Fatal("not ready within 20s")
	}
	return h, h.next()
}

func writeFile(t *testing.T, p string, b []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// replace writes p as an editor saves it: a new file renamed over it (a new
// inode: another version of the file however coarse the clock).
func (h *largeFileDaemon) replace(p string, b []byte) {
	h.t.Helper()
	writeFile(h.t, filepath.Join(h.root, p+".tmp"), b)
	if err := os.Rename(filepath.Join(h.root, p+".tmp"), filepath.Join(h.root, p)); err != nil {
		h.t.Fatal(err)
	}
}

// next waits for the worker to take a read of /etc/big.bin.
func (h *largeFileDaemon) next() *gatedRead {
	h.t.Helper()
	select {
	case g := <-h.reads:
		if g.path != "/etc/big.bin" {
			h.t.Fatalf("a background read of %s", g.path)
		}
		return g
	case <-time.After(20 * time.Second):
		h.t.Fatal("no background read of /etc/big.bin within 20s")
	}
	return nil
}

// onLoop runs f on the event loop: whatever the loop received before, it
// has handled.
func (h *largeFileDaemon) onLoop(f func()) {
	h.t.Helper()
	if err := h.do(context.Background(), func(context.Context) error { f(); return nil }); err != nil {
		h.t.Fatal(err)
	}
}

func (h *largeFileDaemon) status() (s string) {
	h.onLoop(func() { s = h.Daemon.status() })
	return s
}

// waitIdle waits until no background read is under way.
func (h *largeFileDaemon) waitIdle() {
	h.t.Helper()
	waitFor(h.t, "no background read under way", func() bool {
		n := 0
		h.onLoop(func() { n = h.Daemon.reads.underWay() })
		return n == 0
	})
}

// TestLargeReadOffTheLoop: while a large file is read, the loop goes on —
// it answers the watchdog, reports another file's drift, and says in its
// status that a file is being read — and the read's drift is reported when
// it is done.
func TestLargeReadOffTheLoop(t *testing.T) {
	h := startLargeFileDaemon(t)
	other := bytes.Clone(h.big)
	other[len(other)/2] = 'X'
	h.replace("/etc/big.bin", other)
	g := h.next() // held: the read is under way

	writeFile(t, filepath.Join(h.root, "etc/small.conf"), []byte("tampered\n"))
	waitFor(t, "the drift of /etc/small.conf while /etc/big.bin is read", func() bool {
		return len(h.log.find(journal.RecordDriftDetected, "/etc/small.conf")) == 1
	})
	before := h.notify.count()
	waitFor(t, "watchdog pings while /etc/big.bin is read", func() bool { return h.notify.count() >= before+3 })
	if st, want := h.status(), "Drift: 1 path differs (/etc/small.conf: content); verifying 1 large file (/etc/big.bin)"; st != want {
		t.Errorf("status while reading: %q, want %q", st, want)
	}
	if got := h.log.find(journal.RecordDriftDetected, "/etc/big.bin"); len(got) != 0 {
		t.Errorf("drift of /etc/big.bin reported before it was read: %v", got)
	}

	close(g.release)
	waitFor(t, "the drift of /etc/big.bin once read", func() bool {
		return len(h.log.find(journal.RecordDriftDetected, "/etc/big.bin")) == 1
	})
	h.waitIdle()
	if st, want := h.status(), "Drift: 2 paths differ (/etc/big.bin: content; /etc/small.conf: content)"; st != want {
		t.Errorf("status once read: %q, want %q", st, want)
	}

	// A change of mode while the content is read again: the mode drift is
	// reported at once, and the content drift is neither resolved nor
	// reported again meanwhile.
	if err := os.Chmod(filepath.Join(h.root, "etc/big.bin"), 0o600); err != nil {
		t.Fatal(err)
	}
	g = h.next()
	waitFor(t, "the mode drift of /etc/big.bin while it is read", func() bool {
		rs := h.log.find(journal.RecordDriftDetected, "/etc/big.bin")
		return len(rs) == 2 && strings.HasPrefix(rs[1]["MESSAGE"], "mode mismatch")
	})
	if got := h.log.find(journal.MsgDriftResolved, "/etc/big.bin"); len(got) != 0 {
		t.Errorf("drift of /etc/big.bin resolved while it is read: %v", got)
	}
	close(g.release)
	h.waitIdle()
	if got := h.log.find(journal.MsgDriftResolved, "/etc/big.bin"); len(got) != 0 {
		t.Errorf("drift of /etc/big.bin resolved after it was read: %v", got)
	}
}

// TestStaleLargeReadDropped: a read overtaken by a change of the file, or by
// a reload, is cancelled and its result dropped; the read of what is there
// now decides.
func TestStaleLargeReadDropped(t *testing.T) {
	h := startLargeFileDaemon(t)
	other := bytes.Clone(h.big)
	other[0] = 'X'

	t.Run("the file changed again", func(t *testing.T) {
		h.t = t
		h.replace("/etc/big.bin", other)
		stale := h.next() // read other: differs
		if stale.read == nil || stale.read.Content.State != ondisk.Differs {
			t.Fatalf("the read of the drifted file: %+v", stale.read)
		}
		h.replace("/etc/big.bin", h.big) // restored while it was read
		waitFor(t, "the stale read cancelled", func() bool { return stale.ctx.Err() != nil })
		close(stale.release)
		fresh := h.next()
		close(fresh.release)
		h.waitIdle()
		if got := h.log.find(journal.RecordDriftDetected, "/etc/big.bin"); len(got) != 0 {
			t.Errorf("a stale read reported drift: %v", got)
		}
		if st := h.status(); st != "No drift: watching 2 paths, 0 units" {
			t.Errorf("status: %q", st)
		}
	})

	t.Run("a reload", func(t *testing.T) {
		h.t = t
		h.replace("/etc/big.bin", other)
		stale := h.next()
		reloaded := make(chan error, 1)
		go func() { reloaded <- h.ReloadNow(context.Background()) }()
		waitFor(t, "the read cancelled by the reload", func() bool { return stale.ctx.Err() != nil })
		if err := <-reloaded; err != nil {
			t.Fatal(err)
		}
		close(stale.release)
		fresh := h.next()   // the reload's full check read it again
		h.onLoop(func() {}) // the stale result, handed over before, is handled
		if got := h.log.find(journal.RecordDriftDetected, "/etc/big.bin"); len(got) != 0 {
			t.Errorf("the read cancelled by the reload reported drift: %v", got)
		}
		close(fresh.release)
		waitFor(t, "the drift found by the read after the reload", func() bool {
			return len(h.log.find(journal.RecordDriftDetected, "/etc/big.bin")) == 1
		})
	})
}
