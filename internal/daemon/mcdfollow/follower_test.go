package mcdfollow

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/drift-monitor/drift-monitor/internal/daemon/part/parttest"
	"github.com/drift-monitor/drift-monitor/internal/journal"
	"github.com/drift-monitor/drift-monitor/internal/mcd"
)

func TestPath(t *testing.T) {
	for _, tc := range []struct {
		mode    string
		configs []string
		want    string
	}{
		{"auto", []string{"/etc/machine-config-daemon//currentconfig"}, CurrentConfig},
		{"", []string{"/etc/x.ign", HypershiftConfig}, HypershiftConfig},
		{"auto", []string{"/etc/drift-monitor/desired.d"}, ""},
		{"auto", nil, ""},
		{"on", nil, CurrentConfig},
		{"off", []string{CurrentConfig}, ""},
	} {
		if got := Path(tc.configs, tc.mode); got != tc.want {
			t.Errorf("Path(%q, %q) = %q, want %q", tc.configs, tc.mode, got, tc.want)
		}
	}
}

func TestReadConfigName(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name, content, want, err string
	}{
		{"as the MCD writes it", `{"metadata":{"name":"rendered-worker-1","uid":"u"},"spec":{"config":{}}}`, "rendered-worker-1", ""},
		{"metadata after spec", `{"spec":{"config":{"storage":{"files":[]}}},"metadata":{"name":"rendered-x"}}`, "rendered-x", ""},
		{"control characters", `{"metadata":{"name":"a\u001b[2Jb"}}`, `a\x1b[2Jb`, ""},
		{"no name", `{"metadata":{},"spec":{}}`, "", "no metadata.name"},
		{"not an object", `[1]`, "", "not a JSON object"},
		{"truncated", `{"metadata":{"name":"x"`, "", "metadata"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-"))
			if err := os.WriteFile(p, []byte(tc.content), 0o644); err != nil {
				t.Fatal(err)
			}
			got, _, ino, err := readConfigName(p)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), p) {
					t.Fatalf("err %v, want one naming %s with %q", err, p, tc.err)
				}
				return
			}
			if err != nil || got != tc.want || ino == 0 {
				t.Fatalf("readConfigName = %q (ino %d), %v; want %q", got, ino, err, tc.want)
			}
		})
	}
}

// writeConfig renames a MachineConfig named name into place at p, as the
// MCD writes currentconfig (a temporary file in the same directory).
func writeConfig(t *testing.T, p, name string) {
	t.Helper()
	tmp := p + ".tmp"
	if err := os.WriteFile(tmp, []byte(`{"metadata":{"name":"`+name+`"},"spec":{"config":{}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, p); err != nil {
		t.Fatal(err)
	}
}

// line feeds the follower one MCD line as its journal follower would.
func line(t *testing.T, f *Follower, h *parttest.Host, text string) {
	t.Helper()
	l, ok := mcd.Parse(text)
	if !ok {
		t.Fatalf("not an MCD line: %q", text)
	}
	h.OnLoop(func() { f.line(context.Background(), mcd.Record{Line: l, At: time.Now()}) })
}

// TestFollowerHolds: the follower alone, with a fake host: a start line
// holds, as the inhibitor "machine-config-daemon", and asks the host to
// take the hold; the rename of currentconfig and the MCD's rebootless line
// release it.
func TestFollowerHolds(t *testing.T) {
	p := filepath.Join(t.TempDir(), "currentconfig")
	writeConfig(t, p, "rendered-a")
	h := &parttest.Host{}
	f := New(Options{Path: p})
	f.h = h
	t.Cleanup(f.Stop)
	h.OnLoop(func() { f.ConfigChanged(context.Background()) })
	if in, on := f.Held(); on {
		t.Fatalf("held before any MCD line: %+v", in)
	}
	line(t, f, h, "machine-config-daemon[1]: Starting update from rendered-a to rendered-b: &{}")
	in, on := f.Held()
	if !on || in.Who != "machine-config-daemon" || !strings.Contains(in.Why, "rendered-a → rendered-b") {
		t.Fatalf("after the start line: held %v, %+v; want the MCD's inhibitor for rendered-a → rendered-b", on, in)
	}
	changes := h.HoldChanges()
	if changes == 0 {
		t.Fatal("the host was not asked to take the hold")
	}
	writeConfig(t, p, "rendered-b")
	h.OnLoop(func() { f.ConfigChanged(context.Background()) })
	if _, on := f.Held(); !on || f.m.Phase() != mcd.Written {
		t.Fatalf("after the rename: held %v in %v, want held in %v", on, f.m.Phase(), mcd.Written)
	}
	line(t, f, h, `machine-config-daemon[1]: "Node has Desired Config rendered-b, skipping reboot"`)
	if in, on := f.Held(); on {
		t.Fatalf("still held after the rebootless line: %+v", in)
	}
	if h.HoldChanges() <= changes {
		t.Error("the host was not asked to drop the hold")
	}
}

// TestFollowerHoldDown: in rename-only mode a drift that appears between
// full checks is held for the hold-down (an update's first write, whose
// rename follows), the status line says the mode, and the hold's timer
// releases it through the host's loop.
func TestFollowerHoldDown(t *testing.T) {
	h := &parttest.Host{}
	f := New(Options{Path: filepath.Join(t.TempDir(), "currentconfig"), Timeouts: mcd.Timeouts{HoldDown: 50 * time.Millisecond}})
	f.h = h
	f.m.RenameOnly, f.renameOnly = true, "test"
	t.Cleanup(f.Stop)
	var held bool
	h.OnLoop(func() { held = f.HoldDrift(context.Background()) })
	if _, on := f.Held(); !held || !on {
		t.Fatalf("a new drift in rename-only mode: HoldDrift %v, held %v; want held", held, on)
	}
	h.OnLoop(func() { held = f.HoldDrift(context.Background()) })
	if !held {
		t.Error("a second drift in the same hold-down not held")
	}
	if got := f.Caveat(); !strings.Contains(got, "renames of currentconfig only (test)") {
		t.Errorf("Caveat() = %q, want the rename-only mode and why", got)
	}
	h.Wait(t, 10*time.Second, "the hold-down released by its timer", func() bool { _, on := f.Held(); return !on })
	// With the journal, a drift is never held by the follower: the start
	// line says when an update begins.
	g := New(Options{Path: f.o.Path})
	g.h = h
	if g.HoldDrift(context.Background()) {
		t.Error("a drift held while the journal is followed")
	}
}

// TestFollowerRenameOnlyStart: started where the journal cannot be read,
// the follower says so (a record and the status line) and follows the
// renames of currentconfig through its own watch, each held for the
// hold-down.
func TestFollowerRenameOnlyStart(t *testing.T) {
	p := filepath.Join(t.TempDir(), "currentconfig")
	writeConfig(t, p, "rendered-a")
	h := &parttest.Host{}
	f := New(Options{Path: p, Journalctl: filepath.Join(t.TempDir(), "no-journalctl")})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	h.OnLoop(func() { f.Start(ctx, h) })
	t.Cleanup(f.Stop)
	if !h.Has(journal.MsgMCD, "by its renames only") {
		t.Fatalf("no record of the rename-only mode: %v", h.Records())
	}
	if f.Caveat() == "" {
		t.Error("rename-only mode, yet no caveat for the status line")
	}
	before := h.HoldChanges()
	writeConfig(t, p, "rendered-b")
	h.Wait(t, 10*time.Second, "the rename of currentconfig held", func() bool {
		_, on := f.Held()
		return on && f.m.Phase() == mcd.HoldDown && h.HoldChanges() > before
	})
}
