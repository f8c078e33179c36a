package mcd

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestParse(t *testing.T) {
	const diff = `&{osUpdate:false kargs:false fips:false passwd:false files:true units:true kernelType:false extensions:false}`
	for _, tc := range []struct {
		name, msg string
		want      Line
		ok        bool
	}{
		{"start plain", `machine-config-daemon[70704]: Starting update from rendered-worker-a to rendered-worker-b: ` + diff, Line{Kind: Start, From: "rendered-worker-a", To: "rendered-worker-b"}, true},
		{"start quoted", `machine-config-daemon[70704]: "Starting update from rendered-worker-a to rendered-worker-b: ` + diff + `"`, Line{Kind: Start, From: "rendered-worker-a", To: "rendered-worker-b"}, true},
		{"start before 4.4", `machine-config-daemon[1]: Starting update from rendered-a to rendered-b`, Line{Kind: Start, From: "rendered-a", To: "rendered-b"}, true},
		{"first boot", `machine-config-daemon[1]: "Starting update from mco-empty-mc to rendered-b: ` + diff + `"`, Line{Kind: Start, From: "mco-empty-mc", To: "rendered-b"}, true},
		{"reboot", `machine-config-daemon[1]: "initiating reboot: Node will reboot into config rendered-b"`, Line{Kind: Reboot, Config: "rendered-b"}, true},
		{"rebooting", `machine-config-daemon[1]: Rebooting node`, Line{Kind: Reboot}, true},
		{"rebootless", `machine-config-daemon[1]: "Node has Desired Config rendered-b, skipping reboot"`, Line{Kind: Rebootless, Config: "rendered-b"}, true},
		{"crio reloaded", `machine-config-daemon[1]: crio config reloaded successfully! Desired config rendered-b has been applied, skipping reboot`, Line{Kind: Rebootless, Config: "rendered-b"}, true},
		{"done", `machine-config-daemon[1]: "Update completed for config rendered-b and node has been successfully uncordoned"`, Line{Kind: Done, Config: "rendered-b"}, true},
		{"validated", `machine-config-daemon[1]: "Validated on-disk state"`, Line{Kind: Validated}, true},
		{"managing", `machine-config-daemon[1]: Starting to manage node: n1`, Line{Kind: Managing}, true},
		{"reboot failed", `machine-config-daemon[1]: "failed to run reboot: exit status 1"`, Line{Kind: RebootFailed}, true},
		{"trailing newline", "machine-config-daemon[1]: Validated on-disk state\n", Line{Kind: Validated}, true},
		{"no prefix", `Starting update from rendered-a to rendered-b`, Line{}, false},
		{"prefix not at start", `x machine-config-daemon[1]: Starting update from rendered-a to rendered-b`, Line{}, false},
		{"other MCD line", `machine-config-daemon[1]: "drain complete"`, Line{}, false},
		{"bad quoting", `machine-config-daemon[1]: "Validated on-disk state`, Line{}, false},
		{"quoted inside", `machine-config-daemon[1]: "\"Validated on-disk state\""`, Line{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := Parse(tc.msg)
			if ok != tc.ok {
				t.Fatalf("Parse(%q) ok = %v, want %v", tc.msg, ok, tc.ok)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Parse(%q) (-want +got):\n%s", tc.msg, diff)
			}
		})
	}
}

func TestParseRecord(t *testing.T) {
	for _, tc := range []struct {
		name, json string
		ok         bool
	}{
		{"root", `{"__CURSOR":"c1","__REALTIME_TIMESTAMP":"1700000000000000","_BOOT_ID":"b","_UID":"0","MESSAGE":"machine-config-daemon[1]: Validated on-disk state"}`, true},
		{"forged by another uid", `{"__CURSOR":"c2","__REALTIME_TIMESTAMP":"1700000000000000","_UID":"65534","SYSLOG_IDENTIFIER":"root","MESSAGE":"machine-config-daemon[1]: Validated on-disk state"}`, false},
		{"no uid", `{"__CURSOR":"c3","__REALTIME_TIMESTAMP":"1700000000000000","MESSAGE":"machine-config-daemon[1]: Validated on-disk state"}`, false},
		{"binary message", `{"__CURSOR":"c4","__REALTIME_TIMESTAMP":"1700000000000000","_UID":"0","MESSAGE":[109,99,100]}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec, cursor, ok, err := ParseRecord([]byte(tc.json))
			if err != nil {
				t.Fatal(err)
			}
			if ok != tc.ok || cursor == "" {
				t.Fatalf("ok = %v (want %v), cursor %q", ok, tc.ok, cursor)
			}
			if ok && (rec.Line.Kind != Validated || !rec.At.Equal(time.UnixMicro(1700000000000000))) {
				t.Errorf("record %+v", rec)
			}
		})
	}
}

// step is one input of a machine test; the want fields are checked after it.
type step struct {
	at       time.Duration // since t0
	line     string        // an MCD message (without the prefix), or
	current  string        // currentconfig's name (rewritten: rew)
	rew      bool
	boot     bool // NewBoot
	activity bool
	drift    bool // NewDrift
	tick     bool
	want     Phase
	note     string // a substring of a note said at this step
}

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func run(t *testing.T, m *Machine, steps []step) {
	t.Helper()
	for i, s := range steps {
		at := t0.Add(s.at)
		switch {
		case s.line != "":
			l, ok := Parse("machine-config-daemon[7]: " + s.line)
			if !ok {
				t.Fatalf("step %d: %q does not parse", i, s.line)
			}
			m.Line(l, at)
		case s.current != "":
			m.CurrentConfig(s.current, s.rew, at)
		case s.boot:
			m.NewBoot(at)
		case s.activity:
			m.Activity(at)
		case s.drift:
			m.NewDrift(at)
		case s.tick:
			m.Tick(at)
		}
		if m.Phase() != s.want {
			t.Fatalf("step %d (%+v): phase %s, want %s", i, s, m.Phase(), s.want)
		}
		held, why := m.Held()
		if held != (s.want != Idle) || held && why == "" {
			t.Fatalf("step %d: held %v %q in phase %s", i, held, why, m.Phase())
		}
		notes := m.Notes()
		if s.note != "" {
			found := false
			for _, n := range notes {
				found = found || strings.Contains(n.Text, s.note)
			}
			if !found {
				t.Fatalf("step %d: no note with %q in %+v", i, s.note, notes)
			}
		}
	}
}

func TestMachine(t *testing.T) {
	const start = "Starting update from rendered-a to rendered-b: &{files:true}"
	sec := time.Second
	min := time.Minute
	for _, tc := range []struct {
		name       string
		renameOnly bool
		steps      []step
	}{
		{"rebootless", false, []step{
			{current: "rendered-a", want: Idle},
			{at: 1 * sec, line: start, want: Updating},
			{at: 60 * min, current: "rendered-a", want: Updating}, // a write elsewhere in the directory
			{at: 61 * min, current: "rendered-b", rew: true, want: Written},
			{at: 61*min + sec, line: "Node has Desired Config rendered-b, skipping reboot", want: Idle},
		}},
		{"reboot", false, []step{
			{current: "rendered-a", want: Idle},
			{at: sec, line: start, want: Updating},
			{at: 2 * sec, current: "rendered-b", rew: true, want: Written},
			{at: 3 * sec, line: "Rebooting node", want: Rebooting},
			{at: 3 * sec, line: "initiating reboot: Node will reboot into config rendered-b", want: Rebooting},
			{at: 20 * min, boot: true, want: Settling}, // a slow reboot is no timeout
			{at: 21 * min, line: "Starting to manage node: n1", want: Settling},
			{at: 22 * min, line: "Validated on-disk state", want: Idle},
		}},
		{"reboot, done after boot", false, []step{
			{current: "rendered-a", want: Idle},
			{at: sec, line: start, want: Updating},
			{at: 3 * sec, line: "initiating reboot: Node will reboot into config rendered-b", want: Rebooting},
			{at: min, boot: true, want: Settling},
			{at: 2 * min, line: "Update completed for config rendered-b and node has been successfully uncordoned", want: Idle},
		}},
		{"failure before the rename: retries share one budget", false, []step{
			{current: "rendered-a", want: Idle},
			{at: 0, line: start, want: Updating},
			{at: 80 * min, line: start, want: Updating},
			{at: 89 * min, line: start, want: Updating},
			{at: 90 * min, tick: true, want: Idle, note: "did not reach its end within 1h30m0s"},
			{at: 91 * min, line: start, want: Idle}, // a retry of the expired pair
			{at: 92 * min, current: "rendered-c", want: RollingBack},
		}},
		{"rollback after the rename", false, []step{
			{current: "rendered-a", want: Idle},
			{at: 0, line: start, want: Updating},
			{at: sec, current: "rendered-b", rew: true, want: Written},
			{at: 2 * sec, current: "rendered-a", rew: true, want: RollingBack, note: "rollback"},
			{at: 30 * sec, activity: true, want: RollingBack},
			{at: 89 * sec, tick: true, want: RollingBack},
			{at: 90 * sec, tick: true, want: Idle, note: "quiet"},
			{at: 100 * sec, line: start, want: Updating}, // the MCD retries: a fresh budget
		}},
		{"flip and flip back seen as one rewrite", false, []step{
			{current: "rendered-a", want: Idle},
			{at: 0, line: start, want: Updating},
			{at: sec, current: "rendered-a", want: Updating}, // the same file: not a write
			{at: 2 * sec, current: "rendered-a", rew: true, want: RollingBack},
		}},
		{"rebootless line with currentconfig back to A", false, []step{
			{current: "rendered-a", want: Idle},
			{at: 0, line: start, want: Updating},
			{at: sec, line: "Node has Desired Config rendered-b, skipping reboot", want: RollingBack},
		}},
		{"MCD restart mid-update", false, []step{
			{current: "rendered-a", want: Idle},
			{at: 0, line: start, want: Updating},
			{at: sec, line: "Starting to manage node: n1", want: Settling},
			{at: 2 * sec, line: "Validated on-disk state", want: Idle},
		}},
		{"re-apply of the same config ends on the rewrite", false, []step{
			{current: "rendered-a", want: Idle},
			{at: 0, line: "Starting update from rendered-a to rendered-a: &{}", want: Updating},
			{at: sec, current: "rendered-a", want: Updating},
			{at: 2 * sec, current: "rendered-a", rew: true, want: Written},
			{at: 3 * sec, line: "Node has Desired Config rendered-a, skipping reboot", want: Idle},
		}},
		{"written times out", false, []step{
			{current: "rendered-a", want: Idle},
			{at: 0, line: start, want: Updating},
			{at: sec, current: "rendered-b", rew: true, want: Written},
			{at: 15*min + sec, tick: true, want: Idle, note: "neither that it reboots"},
		}},
		{"reboot that never comes", false, []step{
			{current: "rendered-a", want: Idle},
			{at: 0, line: start, want: Updating},
			{at: sec, line: "initiating reboot: Node will reboot into config rendered-b", want: Rebooting},
			{at: 15*min + sec, tick: true, want: Idle, note: "none came"},
		}},
		{"reboot failed", false, []step{
			{at: 0, line: start, want: Updating},
			{at: sec, line: "initiating reboot: Node will reboot into config rendered-b", want: Rebooting},
			{at: 2 * sec, line: "failed to run reboot: exit status 1", want: Idle, note: "could not reboot"},
		}},
		{"settling times out", false, []step{
			{at: 0, line: start, want: Updating},
			{at: sec, line: "initiating reboot: Node will reboot into config rendered-b", want: Rebooting},
			{at: min, boot: true, want: Settling},
			{at: 16 * min, tick: true, want: Idle, note: "did not validate"},
		}},
		{"steady MCD restart is not held", false, []step{
			{current: "rendered-a", want: Idle},
			{at: sec, line: "Starting to manage node: n1", want: Idle},
			{at: 2 * sec, line: "Validated on-disk state", want: Idle},
			{at: 3 * sec, line: "Update completed for config rendered-a and node has been successfully uncordoned", want: Idle},
			{at: 4 * sec, drift: true, want: Idle},
		}},
		{"a reboot into a config whose start was missed", false, []step{
			{current: "rendered-b", want: Idle},
			{at: sec, line: "initiating reboot: Node will reboot into config rendered-b", want: Rebooting},
		}},
		{"unannounced change", false, []step{
			{current: "rendered-a", want: Idle},
			{at: sec, current: "rendered-b", rew: true, want: RollingBack, note: "without a start line"},
			{at: sec + min, tick: true, want: Idle},
		}},
		{"rename only", true, []step{
			{current: "rendered-a", want: Idle},
			{at: sec, drift: true, want: HoldDown},
			{at: 5 * sec, current: "rendered-b", rew: true, want: HoldDown},
			{at: 14 * sec, tick: true, want: HoldDown},
			{at: 15 * sec, tick: true, want: Idle},
			{at: 16 * sec, current: "rendered-b", rew: true, want: HoldDown},
			{at: 26 * sec, tick: true, want: Idle},
			// The reboot unit, seen without the journal.
			{at: 27 * sec, line: "initiating reboot: Node will reboot into config rendered-b", want: Rebooting},
			{at: 28 * sec, current: "rendered-b", rew: true, want: Rebooting},
			{at: 29 * sec, current: "rendered-a", rew: true, want: HoldDown},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run(t, &Machine{T: DefaultTimeouts, RenameOnly: tc.renameOnly}, tc.steps)
		})
	}
}

// TestReplay: the state a restart recovers from the journal is the one the
// live run reached.
func TestReplay(t *testing.T) {
	m := &Machine{T: DefaultTimeouts}
	for _, s := range []string{
		"Starting update from rendered-a to rendered-b: &{}",
		"Rebooting node",
		"initiating reboot: Node will reboot into config rendered-b",
	} {
		l, _ := Parse("machine-config-daemon[7]: " + s)
		m.Line(l, t0)
	}
	m.NewBoot(t0.Add(time.Minute))
	m.CurrentConfig("rendered-b", false, t0.Add(2*time.Minute))
	if m.Phase() != Settling {
		t.Fatalf("after a boot that followed the reboot line: %s, want settling", m.Phase())
	}
	// The same journal, read once the boot's validation is in it.
	l, _ := Parse(`machine-config-daemon[8]: "Validated on-disk state"`)
	m.Line(l, t0.Add(3*time.Minute))
	if m.Phase() != Idle {
		t.Fatalf("after the validation: %s", m.Phase())
	}
}

// TestNoteKeys: a phase's timeout has the same key in the live run that
// saw it and in every replay that finds it again later, whenever it is
// noticed and whatever currentconfig was read; another update's, another.
func TestNoteKeys(t *testing.T) {
	start, _ := Parse("machine-config-daemon[7]: Starting update from rendered-a to rendered-b: &{}")
	timeout := func(m *Machine, now time.Time) string {
		t.Helper()
		m.Tick(now)
		ns := m.Notes()
		if len(ns) != 1 || !ns[0].Warn || ns[0].Key == "" {
			t.Fatalf("notes %+v, want the timeout's, keyed", ns)
		}
		return ns[0].Key
	}
	live := &Machine{T: DefaultTimeouts}
	live.CurrentConfig("rendered-a", false, t0)
	live.Line(start, t0.Add(time.Second))
	key := timeout(live, t0.Add(DefaultTimeouts.Update+2*time.Second))
	replay := &Machine{T: DefaultTimeouts}
	replay.Line(start, t0.Add(time.Second))
	replay.CurrentConfig("rendered-a", false, t0.Add(3*time.Hour))
	if got := timeout(replay, t0.Add(3*time.Hour)); got != key {
		t.Errorf("the replay's timeout key %q, the live run's %q", got, key)
	}
	other := &Machine{T: DefaultTimeouts}
	other.Line(start, t0.Add(time.Hour))
	if got := timeout(other, t0.Add(3*time.Hour)); got == key {
		t.Errorf("a later update of the same pair has the same key %q", got)
	}
}

func TestParseRebootUnit(t *testing.T) {
	unit := "# This is a transient unit file, created programmatically via the systemd API. Do not edit.\n[Unit]\nDescription=machine-config-daemon: Node will reboot into config rendered-worker-b\n\n[Service]\nExecStart=\n"
	if l, ok := ParseRebootUnit([]byte(unit)); !ok || l != (Line{Kind: Reboot, Config: "rendered-worker-b"}) {
		t.Errorf("ParseRebootUnit = %+v, %v", l, ok)
	}
	if _, ok := ParseRebootUnit([]byte("[Unit]\nDescription=something else\n")); ok {
		t.Error("another unit read as the MCD's reboot")
	}
}

// fakeJournalctl is a journalctl that prints out for any arguments.
func fakeJournalctl(t *testing.T, out string) Journal {
	t.Helper()
	p := filepath.Join(t.TempDir(), "journalctl")
	if err := os.WriteFile(p, []byte("#!/bin/sh\ncat <<'EOF'\n"+out+"\nEOF\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return Journal{Journalctl: p}
}

func TestBoots(t *testing.T) {
	const list = `IDX BOOT ID                          FIRST ENTRY                 LAST ENTRY
 -2 11111111111111111111111111111111 Thu 2026-12-03 13:20:53 UTC Thu 2026-12-03 13:21:26 UTC
 -1 22222222222222222222222222222222 Thu 2026-12-03 13:22:53 UTC Thu 2026-12-03 13:23:26 UTC
  0 33333333333333333333333333333333 Thu 2026-12-03 13:24:53 UTC Thu 2026-12-03 13:25:26 UTC`
	ctx := context.Background()
	for _, tc := range []struct {
		name, out, kernel, this, prev, err string
	}{
		{"the kernel's boot is the newest", list, "33333333-3333-3333-3333-333333333333\n", "33333333333333333333333333333333", "22222222222222222222222222222222", ""},
		{"the kernel's boot is older (a clock set back)", list, "22222222-2222-2222-2222-222222222222", "22222222222222222222222222222222", "11111111111111111111111111111111", ""},
		{"the kernel's boot is unknown (a container's own id)", list, "44444444-4444-4444-4444-444444444444", "33333333333333333333333333333333", "22222222222222222222222222222222", ""},
		{"one boot", "IDX BOOT ID FIRST ENTRY LAST ENTRY\n  0 33333333333333333333333333333333 Thu", "33333333-3333-3333-3333-333333333333", "33333333333333333333333333333333", "", ""},
		{"no boot visible", "", "x", "", "", "no boot is visible"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			this, prev, err := fakeJournalctl(t, tc.out).Boots(ctx, tc.kernel)
			if tc.err != "" {
				if !errors.Is(err, ErrNoJournal) || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want ErrNoJournal with %q", err, tc.err)
				}
				return
			}
			if err != nil || this != tc.this || prev != tc.prev {
				t.Errorf("Boots = %q, %q, %v; want %q, %q", this, prev, err, tc.this, tc.prev)
			}
		})
	}
}

func TestRead(t *testing.T) {
	j := fakeJournalctl(t, `{"__CURSOR":"c1","__REALTIME_TIMESTAMP":"1700000000000000","_UID":"0","MESSAGE":"machine-config-daemon[1]: Starting update from rendered-a to rendered-b: &{}"}
{"__CURSOR":"c2","__REALTIME_TIMESTAMP":"1700000001000000","_UID":"0","MESSAGE":"sudo: session opened"}
{"__CURSOR":"c3","__REALTIME_TIMESTAMP":"1700000002000000","_UID":"1000","MESSAGE":"machine-config-daemon[1]: Validated on-disk state"}`)
	recs, cursor, err := j.Read(context.Background(), "33333333333333333333333333333333")
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 1 || recs[0].Line.Kind != Start || recs[0].Cursor != "c1" || cursor != "c3" {
		t.Errorf("Read = %+v, cursor %q; want the start line only, and the last cursor c3", recs, cursor)
	}
}
