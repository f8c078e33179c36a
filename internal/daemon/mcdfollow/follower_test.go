package mcdfollow

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
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

// fakeJournalctl writes a journalctl that knows two boots, the previous
// one and this one (the kernel's boot id), with the MCD lines given for
// each (at: how long ago), and follows nothing.
func fakeJournalctl(t *testing.T, prev, this map[time.Duration]string) string {
	t.Helper()
	boot, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		t.Fatal(err)
	}
	thisID := strings.ReplaceAll(strings.TrimSpace(string(boot)), "-", "")
	const prevID = "0123456789abcdef0123456789abcdef"
	dir := t.TempDir()
	lines := func(id string, ls map[time.Duration]string) string {
		var b strings.Builder
		agos := slices.Sorted(maps.Keys(ls))
		slices.Reverse(agos) // oldest first, as journalctl gives them
		for _, ago := range agos {
			l := ls[ago]
			fmt.Fprintf(&b, `{"__CURSOR":"c%d","__REALTIME_TIMESTAMP":"%d","_BOOT_ID":"%s","_UID":"0","MESSAGE":"machine-config-daemon[1]: %s"}`+"\n",
				ago, time.Now().Add(-ago).UnixMicro(), id, l)
		}
		name := filepath.Join(dir, id+".json")
		if err := os.WriteFile(name, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return name
	}
	p, th := lines(prevID, prev), lines(thisID, this)
	script := fmt.Sprintf(`#!/bin/sh
for a; do
	case "$a" in
	--list-boots) printf 'IDX BOOT ID FIRST ENTRY LAST ENTRY\n -1 %[1]s x\n  0 %[2]s x\n'; exit 0 ;;
	--follow) exec sleep 3600 ;;
	--boot=%[1]s) cat %[3]q; exit 0 ;;
	--boot=%[2]s) cat %[4]q; exit 0 ;;
	esac
done
exit 1
`, prevID, thisID, p, th)
	bin := filepath.Join(dir, "journalctl")
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return bin
}

// TestNotesOncePerBoot: the follower replays the journal at every start;
// what the machine says again of it is journaled once in a boot (the
// notes file, in the runtime directory, remembers), and what the previous
// boot's lines had to say is that boot's.
func TestNotesOncePerBoot(t *testing.T) {
	dir := t.TempDir()
	cc := filepath.Join(dir, "currentconfig")
	writeConfig(t, cc, "rendered-a")
	bin := fakeJournalctl(t,
		// The previous boot: an update that ran out (a later line sees it).
		map[time.Duration]string{5 * time.Hour: "Starting update from rendered-x to rendered-y: &{}", 3 * time.Hour: "Starting update from rendered-y to rendered-z: &{}"},
		// This boot: one started two hours ago, never finished.
		map[time.Duration]string{2 * time.Hour: "Starting update from rendered-a to rendered-b: &{}"})
	run := func(notes string) *parttest.Host {
		h := &parttest.Host{}
		f := New(Options{Path: cc, Journalctl: bin, NotesFile: notes})
		ctx, cancel := context.WithCancel(context.Background())
		h.OnLoop(func() { f.Start(ctx, h) })
		f.Stop()
		cancel()
		return h
	}
	timedOut := func(h *parttest.Host, pair string) int {
		n := 0
		for _, r := range h.Find(journal.MsgMCD) {
			if strings.Contains(r.Msg, "update "+pair+" did not reach its end") {
				n++
			}
		}
		return n
	}
	notes := filepath.Join(dir, "mcd-notes")
	first := run(notes)
	if n := timedOut(first, "rendered-a → rendered-b"); n != 1 {
		t.Fatalf("first start: %d records of the update's timeout, want 1: %v", n, first.Records())
	}
	if n := timedOut(first, "rendered-x → rendered-y"); n != 0 {
		t.Errorf("the previous boot's timeout journaled in this one: %v", first.Records())
	}
	for i := range 2 {
		if again := run(notes); timedOut(again, "rendered-a → rendered-b") != 0 {
			t.Errorf("restart %d: the timeout journaled again: %v", i+1, again.Records())
		}
	}
	// Without the file (no runtime directory) every start says it.
	if n := timedOut(run(""), "rendered-a → rendered-b"); n != 1 {
		t.Errorf("without a notes file: %d records of the timeout, want 1", n)
	}
}
