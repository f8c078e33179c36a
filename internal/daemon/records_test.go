package daemon

import (
	"context"
	"fmt"
	"log/slog"
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
			ok := is(m, id)
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

// is reports whether the record m has the MESSAGE_ID id, or id is its type
// (journal.RecordDriftDetected: the drift of any kind of entry).
func is(m map[string]string, id string) bool {
	return m["MESSAGE_ID"] == id || m[journal.FieldRecord] == id
}

// find returns the records with the MESSAGE_ID (or of the type) about path
// (DRIFT_PATH).
func (r *records) find(id, path string) []map[string]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []map[string]string
	for _, m := range r.got {
		if is(m, id) && m["DRIFT_PATH"] == path {
			out = append(out, m)
		}
	}
	return out
}
