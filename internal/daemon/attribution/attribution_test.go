package attribution

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/drift-monitor/drift-monitor/internal/audit"
	"github.com/drift-monitor/drift-monitor/internal/constscan"
	"github.com/drift-monitor/drift-monitor/internal/daemon/part"
	"github.com/drift-monitor/drift-monitor/internal/daemon/part/parttest"
	"github.com/drift-monitor/drift-monitor/internal/dbusapi"
	"github.com/drift-monitor/drift-monitor/internal/drift"
	"github.com/drift-monitor/drift-monitor/internal/journal"
	"github.com/drift-monitor/drift-monitor/internal/metrics"
	"github.com/drift-monitor/drift-monitor/internal/ondisk"
)

func TestDescribeWriter(t *testing.T) {
	login := audit.Writer{PID: 4242, UID: 1000, AUID: 1000, Session: 3, Comm: "sed", Syscall: "rename"}
	tests := []struct {
		name         string
		w            audit.Writer
		user, remote string
		want         string
	}{
		{"login user from a remote host", login, "alice", "192.0.2.7",
			"alice (auid 1000, session 3 from 192.0.2.7) running sed (pid 4242) with rename"},
		{"no name in passwd", login, "", "",
			"auid 1000 (session 3) running sed (pid 4242) with rename"},
		{"dropped to another uid", audit.Writer{PID: 7, UID: 65534, AUID: 1000, Session: audit.Unset, Comm: "sh", Syscall: "openat"}, "alice", "",
			"alice (auid 1000, as uid 65534) running sh (pid 7) with openat"},
		{"no login", audit.Writer{PID: 9, UID: 0, AUID: audit.Unset, Session: audit.Unset, Comm: "rpm", Syscall: "rename"}, "", "",
			"uid 0 (no login) running rpm (pid 9) with rename"},
		{"control characters escaped", audit.Writer{PID: 1, AUID: 5, Session: audit.Unset, Comm: "x\x1b[2Jy", Syscall: "openat"}, "bob\n", "h\x07",
			`bob\n (auid 5, as uid 0) running x\x1b[2Jy (pid 1) with openat`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := describeWriter(tt.w, tt.user, tt.remote); got != tt.want {
				t.Errorf("describeWriter = %q, want %q", got, tt.want)
			}
		})
	}
}

// A write of drift-monitor itself (a reconcile, the canary) is said to be
// its own, not an admin's.
func TestOwnWritesMarked(t *testing.T) {
	a := &Attributor{self: 42, exe: "/usr/bin/drift-monitor"}
	for _, w := range []audit.Writer{{PID: 42}, {PID: 7, Exe: "/usr/bin/drift-monitor"}} {
		if got := a.selfMark(w); got != " [drift-monitor's own write: reconcile]" {
			t.Errorf("self(%+v) = %q", w, got)
		}
	}
	if got := a.selfMark(audit.Writer{PID: 7, Exe: "/usr/bin/sed"}); got != "" {
		t.Errorf("sed marked as drift-monitor's own: %q", got)
	}
}

// attributorOn is an Attributor in the state ok on a temporary root with a
// passwd naming uid 1000 alice, its records kept by a fake host; no audit
// connection: what it knows of writes is what a test adds to its ring.
func attributorOn(t *testing.T) (*Attributor, *parttest.Host, string) {
	t.Helper()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "etc"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "etc/passwd"), []byte("root:x:0:0::/root:/bin/sh\nalice:x:1000:1000::/home/alice:/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	root, err := ondisk.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { root.Close() })
	a := New(Options{Root: root, Sessions: fakeSessions{3: {User: "alice", RemoteHost: "192.0.2.7"}}})
	h := &parttest.Host{}
	a.h = h
	a.setState(StateOK, "")
	return a, h, dir
}

type fakeSessions map[uint32]Session

func (f fakeSessions) Session(_ context.Context, id uint32) (Session, error) {
	if s, ok := f[id]; ok {
		return s, nil
	}
	return Session{}, fmt.Errorf("no session %d", id)
}

// TestAttribute: the part alone names a drift's writers, newest first, in
// the message, the DRIFT_WRITER_* fields and as fields for the bus; and
// says why when it cannot.
func TestAttribute(t *testing.T) {
	a, _, dir := attributorOn(t)
	p := filepath.Join(dir, "etc/a.conf")
	if err := os.WriteFile(p, []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sed := audit.Writer{PID: 4242, UID: 1000, AUID: 1000, Session: 3, Comm: "sed", Exe: "/usr/bin/sed", Syscall: "rename", Success: true}
	rpm := audit.Writer{PID: 9, UID: 0, AUID: audit.Unset, Session: audit.Unset, Comm: "rpm", Exe: "/usr/bin/rpm", Syscall: "openat", Success: true}
	for i, w := range []audit.Writer{rpm, sed} {
		a.ring.Add(audit.Event{Stamp: audit.Stamp{Sec: int64(i + 1), Serial: uint64(i + 1)}, Writer: w, Key: audit.Key,
			Paths: []audit.PathItem{{Name: p, Path: p, NameType: "NORMAL"}}})
	}
	ds := []drift.Drift{
		{Kind: drift.Content, Path: "/etc/a.conf", Message: "content mismatch"},
		{Kind: drift.Mode, Path: "/etc/never-written", Message: "mode mismatch"},
	}
	ws := a.Attribute(context.Background(), ds, part.Report{Ready: true, LastCheck: time.Now()})
	if len(ws) != 2 {
		t.Fatalf("%d answers for 2 drifts", len(ws))
	}
	wantSuffix := " changed by alice (auid 1000, session 3 from 192.0.2.7) running sed (pid 4242) with rename; before that by uid 0 (no login) running rpm (pid 9) with openat"
	if ws[0].Suffix != wantSuffix {
		t.Errorf("suffix\n %q, want\n %q", ws[0].Suffix, wantSuffix)
	}
	auid, ses := uint32(1000), uint32(3)
	want := []dbusapi.Writer{
		{LoginUser: "alice", AUID: &auid, Session: &ses, UID: 1000, PID: 4242, Comm: "sed", Exe: "/usr/bin/sed", Syscall: "rename", RemoteHost: "192.0.2.7", SessionUser: "alice"},
		{PID: 9, Comm: "rpm", Exe: "/usr/bin/rpm", Syscall: "openat"},
	}
	if diff := cmp.Diff(want, ws[0].Writers); diff != "" {
		t.Errorf("writers (-want +got):\n%s", diff)
	}
	fields := map[string]string{}
	for _, at := range ws[0].Attrs {
		fields[at.Key] = at.Value.String()
	}
	for k, v := range map[string]string{journal.FieldWriterPID: "4242", journal.FieldWriterUser: "alice", journal.FieldWriterSyscall: "rename",
		journal.FieldWriterRemote: "192.0.2.7", journal.FieldWriterAUID: "1000"} {
		if fields[k] != v {
			t.Errorf("%s=%q, want %q (fields %v)", k, fields[k], v, fields)
		}
	}
	if ws[1].Unknown == "" || len(ws[1].Writers) != 0 || !strings.HasPrefix(ws[1].Suffix, " (writer unknown: not covered by audit") {
		t.Errorf("a drift without a record: %+v, want unknown, saying why", ws[1])
	}
	// Before the first check is done, nothing is waited for, and the
	// drift is older than the daemon.
	ws = a.Attribute(context.Background(), ds[1:], part.Report{})
	if ws[0].Unknown != "changed before drift-monitor started" {
		t.Errorf("first check's drift: unknown %q", ws[0].Unknown)
	}
	a.setState(StateNeverTask, "a rule")
	ws = a.Attribute(context.Background(), ds[:1], part.Report{Ready: true})
	if ws[0].Unknown != "attribution never-task" || len(ws[0].Writers) != 0 {
		t.Errorf("attribution not ok: %+v, want unknown by its state", ws[0])
	}
	if got := a.Caveat(); got != "writers unknown: attribution never-task" {
		t.Errorf("Caveat() = %q", got)
	}
}

// TestDeniedAttempt: a denied write is a notice naming the path (as the
// host sees it) and the writer, never drift.
func TestDeniedAttempt(t *testing.T) {
	a, h, dir := attributorOn(t)
	p := filepath.Join(dir, "etc/shadow")
	a.handle(context.Background(), audit.Event{Writer: audit.Writer{PID: 7, UID: 1000, AUID: 1000, Session: audit.Unset, Comm: "vi", Syscall: "openat"},
		Paths: []audit.PathItem{{Name: filepath.Dir(p), Path: filepath.Dir(p), NameType: "PARENT"}, {Name: p, Path: p, NameType: "NORMAL"}}})
	rs := h.Find(journal.MsgChangeDenied)
	if len(rs) != 1 || rs[0].Fields[journal.FieldDriftPath] != "/etc/shadow" ||
		rs[0].Msg != "Attempted change denied: /etc/shadow alice (auid 1000) running vi (pid 7) with openat" {
		t.Fatalf("records %+v, want one denied-change notice for /etc/shadow", h.Records())
	}
}

// TestStatesListed: every state the part declares is a value of the
// metric's label, and no other.
func TestStatesListed(t *testing.T) {
	consts, err := constscan.Strings(".", "attribution.go")
	if err != nil {
		t.Fatal(err)
	}
	var states []string
	for _, c := range consts {
		if strings.HasPrefix(c.Name, "State") {
			states = append(states, c.Value)
		}
	}
	if diff := cmp.Diff(metrics.AttributionStates, states); diff != "" {
		t.Errorf("metrics.AttributionStates against the State constants (-want +got):\n%s", diff)
	}
}
