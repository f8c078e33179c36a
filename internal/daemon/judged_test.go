package daemon

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/drift-monitor/drift-monitor/internal/dbusapi"
	"github.com/drift-monitor/drift-monitor/internal/drift"
	"github.com/drift-monitor/drift-monitor/internal/ondisk"
)

// state is the State the bus and the metrics show now.
func (h *largeFileDaemon) state() (s string) {
	h.onLoop(func() { s = h.snapshotState() })
	return s
}

// notJudged asserts that nothing says clean while /etc/big.bin is not
// judged: the state (bus, metrics) is want, the status line status, the
// bus's Check is not clean, and the metrics say want.
func (h *largeFileDaemon) notJudged(want, status string) {
	h.t.Helper()
	if got := h.state(); got != want {
		h.t.Errorf("state %q, want %q", got, want)
	}
	if got := h.status(); got != status {
		h.t.Errorf("status line:\nwant %q\ngot  %q", status, got)
	}
	clean, n, err := h.CheckNow(context.Background())
	if err != nil || clean || n != 0 {
		h.t.Errorf("Check() = %v, %d, %v; want not clean, 0 drift known", clean, n, err)
	}
	m, err := h.MetricsText(context.Background())
	if err != nil || !strings.Contains(string(m), `drift_monitor_state{state="`+want+`"} 1`+"\n") {
		h.t.Errorf("metrics (%v), want state %s:\n%s", err, want, m)
	}
	// Check's own full check did not judge it either.
	if got := h.state(); got != want {
		h.t.Errorf("state after Check %q, want %q", got, want)
	}
}

// TestFirstCheckNotDoneUntilJudged: READY=1 comes after the first check,
// but while the content of a large file that check left to the background
// reader is not judged, the first check is not done: the state is
// starting, never clean; the read decides (a large file with a
// mismatching verification hash was once called clean while it was hashed).
func TestFirstCheckNotDoneUntilJudged(t *testing.T) {
	for _, c := range []struct {
		name         string
		onDisk       []byte
		state, after string
	}{
		{"as declared", nil, dbusapi.StateClean, "No drift: watching 2 paths, 0 units"},
		{"its hash differs", bytes.Repeat([]byte("x"), 2*inlineReadLimit), dbusapi.StateDrifted,
			"Drift: 1 path differs (/etc/big.bin: content)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			h, g := startLargeFileDaemonHeld(t, c.onDisk)
			h.notJudged(dbusapi.StateStarting, "Starting: first check of 2 paths, 0 units; verifying 1 large file (/etc/big.bin)")
			close(g.release)
			h.waitIdle()
			if got := h.state(); got != c.state {
				t.Errorf("state once read: %q, want %q", got, c.state)
			}
			if got := h.status(); got != c.after {
				t.Errorf("status once read: %q, want %q", got, c.after)
			}
		})
	}
}

// TestChangedLargeFileNotCleanUntilJudged: after the first check, a large
// file that changed is not judged until its read is done: the state is
// checking, and the status line names it; a read of a version already
// judged (a periodic check's) leaves the state clean.
func TestChangedLargeFileNotCleanUntilJudged(t *testing.T) {
	h := startLargeFileDaemon(t)
	other := bytes.Clone(h.big)
	other[len(other)/2] = 'X'

	h.replace("/etc/big.bin", other)
	g := h.next()
	h.notJudged(dbusapi.StateChecking, "Checking: watching 2 paths, 0 units; verifying 1 large file (/etc/big.bin)")
	close(g.release)
	h.waitIdle()
	if got := h.state(); got != dbusapi.StateDrifted {
		t.Errorf("state once read: %q, want drifted", got)
	}

	h.replace("/etc/big.bin", h.big)
	g = h.next()
	// Drift known meanwhile: drifted, and the file is still being verified.
	if got, want := h.status(), "Drift: 1 path differs (/etc/big.bin: content); verifying 1 large file (/etc/big.bin)"; got != want {
		t.Errorf("status while put back:\nwant %q\ngot  %q", want, got)
	}
	close(g.release)
	h.waitIdle()
	if got := h.state(); got != dbusapi.StateClean {
		t.Fatalf("state once read: %q, want clean", got)
	}

	// A full check reads the same version again: what was judged holds.
	clean, _, err := h.CheckNow(context.Background())
	if err != nil || !clean {
		t.Errorf("Check() on a judged version: clean %v, %v", clean, err)
	}
	g = h.next()
	if got, want := h.status(), "No drift: watching 2 paths, 0 units; reading 1 large file"; got != want {
		t.Errorf("status while a judged version is read again:\nwant %q\ngot  %q", want, got)
	}
	if got := h.state(); got != dbusapi.StateClean {
		t.Errorf("state while a judged version is read again: %q, want clean", got)
	}
	close(g.release)
	h.waitIdle()

	// A reload forgets what was judged: the new state has not judged it.
	reloaded := make(chan error, 1)
	go func() { reloaded <- h.ReloadNow(context.Background()) }()
	g = h.next()
	if err := <-reloaded; err != nil {
		t.Fatal(err)
	}
	if got := h.state(); got != dbusapi.StateChecking {
		t.Errorf("state after a reload, before the read: %q, want checking", got)
	}
	close(g.release)
	h.waitIdle()
	if got := h.state(); got != dbusapi.StateClean {
		t.Errorf("state after a reload, once read: %q, want clean", got)
	}
}

func TestStatusLinePending(t *testing.T) {
	for _, c := range []struct {
		name string
		in   statusInput
		want string
	}{
		{"first check", statusInput{paths: 2, pending: 1, reading: 1, firstCheck: true, pendingPaths: []string{"/var/big.img"}},
			"Starting: first check of 2 paths, 0 units; verifying 1 large file (/var/big.img)"},
		{"later", statusInput{paths: 2, pending: 1, reading: 1, pendingPaths: []string{"/var/big.img"}},
			"Checking: watching 2 paths, 0 units; verifying 1 large file (/var/big.img)"},
		{"more than named", statusInput{paths: 9, pending: 4, reading: 5, pendingPaths: []string{"/a", "/b", "/c"}},
			"Checking: watching 9 paths, 0 units; verifying 4 large files (/a, /b, /c, …)"},
		{"drift known", statusInput{drift: []drift.Drift{dr("file:/etc/chrony.conf", "/etc/chrony.conf", drift.Content)}, pending: 1, reading: 1, pendingPaths: []string{"/var/big.img"}},
			"Drift: 1 path differs (/etc/chrony.conf: content); verifying 1 large file (/var/big.img)"},
		{"long path", statusInput{paths: 1, pending: 1, reading: 1, pendingPaths: []string{"/" + strings.Repeat("d", 200)}},
			"Checking: watching 1 path, 0 units; verifying 1 large file (/" + strings.Repeat("d", 24) + "…" + strings.Repeat("d", 52) + ")"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := statusLine(c.in); got != c.want {
				t.Errorf("statusLine:\nwant %q\ngot  %q", c.want, got)
			}
		})
	}
}

// TestSetAsideReadStaysPending: a background read whose result is set
// aside because a writer has the file open (its close, or its quiet time,
// checks it again) did not judge the entry: until that check the first
// check is still not done — starting, never clean.
func TestSetAsideReadStaysPending(t *testing.T) {
	h, g := startLargeFileDaemonHeld(t, nil)
	const id = "file:/etc/big.bin"
	var held ondisk.Stamp
	h.onLoop(func() { held = h.Daemon.reads.jobs[id].stamp })

	// A writer opens the file and writes to it, and keeps it open.
	f, err := os.OpenFile(filepath.Join(h.root, "etc/big.bin"), os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(h.big[:1], 0); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the write in progress seen by the loop", func() (in bool) {
		h.onLoop(func() { in = h.Daemon.writes.inProgress("/etc/big.bin") })
		return in
	})
	close(g.release)
	waitFor(t, "the held read's result taken", func() (taken bool) {
		h.onLoop(func() { j := h.Daemon.reads.jobs[id]; taken = j == nil || j.stamp != held })
		return taken
	})
	if got := h.state(); got != dbusapi.StateStarting {
		t.Errorf("state with the read set aside: %q, want starting", got)
	}
	if got, want := h.status(), "Starting: first check of 2 paths, 0 units; verifying 1 large file (/etc/big.bin)"; got != want {
		t.Errorf("status with the read set aside:\nwant %q\ngot  %q", want, got)
	}

	// The writer is done: the file is read again, and judged.
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	close(h.next().release)
	h.waitIdle()
	if got := h.state(); got != dbusapi.StateClean {
		t.Errorf("state once the writer is done and the file read: %q, want clean", got)
	}
}
