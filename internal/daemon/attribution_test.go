package daemon

import (
	"testing"

	"github.com/drift-monitor/drift-monitor/internal/audit"
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
	a := &attributor{self: 42, exe: "/usr/bin/drift-monitor"}
	for _, w := range []audit.Writer{{PID: 42}, {PID: 7, Exe: "/usr/bin/drift-monitor"}} {
		if got := a.selfMark(w); got != " [drift-monitor's own write: reconcile]" {
			t.Errorf("self(%+v) = %q", w, got)
		}
	}
	if got := a.selfMark(audit.Writer{PID: 7, Exe: "/usr/bin/sed"}); got != "" {
		t.Errorf("sed marked as drift-monitor's own: %q", got)
	}
}
