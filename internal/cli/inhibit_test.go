package cli

import (
	"os"
	"strings"
	"testing"

	"github.com/drift-monitor/drift-monitor/internal/dbusapi"
	"github.com/drift-monitor/drift-monitor/internal/escape"
	"github.com/drift-monitor/drift-monitor/internal/inhibit"
)

// TestInhibitAcknowledgedByPID: inhibit knows its lock among those the
// daemon lists by its PID, whatever becomes of its --who on the way: the
// daemon reads it from the lock file (trimmed, newlines made spaces) and
// the bus escapes control characters. A WHO compared byte for byte made
// inhibit wait its whole bound and warn that the daemon had not seen a lock
// it had.
func TestInhibitAcknowledgedByPID(t *testing.T) {
	for _, who := range []string{"update-tool", " update-tool ", "update\ntool", "update\ttool"} {
		dir := t.TempDir()
		lock, err := inhibit.Take(dir, who, "test", os.Getpid())
		if err != nil {
			t.Fatal(err)
		}
		m, err := inhibit.Watch(dir) // what the daemon follows
		if err != nil {
			t.Fatal(err)
		}
		held := m.Held()
		m.Close()
		lock.Release()
		if len(held) != 1 {
			t.Fatalf("--who %q: the daemon's monitor holds %v, want the one lock", who, held)
		}
		// As the bus carries it (dbusapi's busString).
		shown := escape.Cut(strings.ToValidUTF8(held[0].Who, "\uFFFD"), dbusapi.MaxField)
		st := &dbusapi.Status{Inhibitors: []dbusapi.Inhibitor{
			{Who: "someone-else", PID: uint32(os.Getpid() + 1)},
			{Who: shown, Why: "test", PID: uint32(held[0].PID)},
		}}
		if !listsPID(st, os.Getpid()) {
			t.Errorf("--who %q, listed as %q: not taken for this process's lock", who, shown)
		}
		if listsPID(&dbusapi.Status{Inhibitors: st.Inhibitors[:1]}, os.Getpid()) {
			t.Errorf("another process's inhibitor taken for this one's")
		}
	}
}
