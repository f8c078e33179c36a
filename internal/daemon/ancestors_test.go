package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/drift-monitor/drift-monitor/internal/journal"
)

// records is a slog.Handler that keeps what the daemon records: MESSAGE_ID
// and the DRIFT_* fields of each.
type records struct {
	mu  sync.Mutex
	got []map[string]string
}

func (r *records) Enabled(context.Context, slog.Level) bool { return true }
func (r *records) WithAttrs([]slog.Attr) slog.Handler       { return r }
func (r *records) WithGroup(string) slog.Handler            { return r }
func (r *records) Handle(_ context.Context, rec slog.Record) error {
	m := map[string]string{"MESSAGE": rec.Message}
	rec.Attrs(func(a slog.Attr) bool { m[a.Key] = a.Value.String(); return true })
	r.mu.Lock()
	r.got = append(r.got, m)
	r.mu.Unlock()
	return nil
}

func (r *records) mark() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.got)
}

// wait waits (bounded) for a record after the first from with the MESSAGE_ID
// and fields.
func (r *records) wait(t *testing.T, from int, id string, fields map[string]string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		r.mu.Lock()
		var seen []string
		for _, m := range r.got[min(from, len(r.got)):] {
			ok := m["MESSAGE_ID"] == id
			for k, v := range fields {
				ok = ok && m[k] == v
			}
			if ok {
				r.mu.Unlock()
				return
			}
			seen = append(seen, fmt.Sprintf("%s %s %s: %s", m["MESSAGE_ID"], m["DRIFT_KIND"], m["DRIFT_PATH"], m["MESSAGE"]))
		}
		r.mu.Unlock()
		if time.Now().After(deadline) {
			t.Fatalf("no record %s %v within 20s; after record %d:\n%s", id, fields, from, strings.Join(seen, "\n"))
		}
		time.Sleep(10 * time.Millisecond) // a poll interval inside a bounded wait
	}
}

// Moving away a directory that holds only declared directories, and
// re-creating it with other content, is reported at once by a daemon with
// no periodic check: as missing, then as the content that is there now.
func TestAncestorMovedAndRecreated(t *testing.T) {
	root := t.TempDir()
	cfg := filepath.Join(t.TempDir(), "c.ign")
	os.WriteFile(cfg, []byte(`{"ignition":{"version":"3.4.0"},"storage":{"files":[
 {"path":"/etc/storm/d1/f","mode":420,"contents":{"source":"data:,one%0A"}},
 {"path":"/etc/storm/d2/f","mode":420,"contents":{"source":"data:,two%0A"}}]}}`), 0o644)
	write := func(p, content string) {
		t.Helper()
		os.MkdirAll(filepath.Dir(filepath.Join(root, p)), 0o755)
		if err := os.WriteFile(filepath.Join(root, p), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("/etc/storm/d1/f", "one\n")
	write("/etc/storm/d2/f", "two\n")

	rec := &records{}
	runDaemon(t, Options{Root: root, Configs: []string{cfg}, Log: slog.New(rec)}, &fakeNotifier{ready: make(chan struct{}, 1)})
	m := rec.mark()
	if err := os.Rename(filepath.Join(root, "/etc/storm"), filepath.Join(root, "/etc/storm.gone")); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/etc/storm/d1/f", "/etc/storm/d2/f"} {
		rec.wait(t, m, journal.MsgDriftDetected, map[string]string{"DRIFT_PATH": p, "DRIFT_KIND": "missing"})
	}
	m = rec.mark()
	write("/etc/storm/d1/f", "tampered\n")
	write("/etc/storm/d2/f", "two\n")
	rec.wait(t, m, journal.MsgDriftDetected, map[string]string{"DRIFT_PATH": "/etc/storm/d1/f", "DRIFT_KIND": "content"})
	rec.wait(t, m, journal.MsgDriftResolved, map[string]string{"DRIFT_PATH": "/etc/storm/d2/f", "DRIFT_KIND": "missing"})
	// The watches followed: a later change in the new tree is seen too.
	m = rec.mark()
	write("/etc/storm/d2/f", "tampered\n")
	rec.wait(t, m, journal.MsgDriftDetected, map[string]string{"DRIFT_PATH": "/etc/storm/d2/f", "DRIFT_KIND": "content"})
}
