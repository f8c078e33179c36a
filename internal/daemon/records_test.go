package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/drift-monitor/drift-monitor/internal/journal"
	"github.com/drift-monitor/drift-monitor/internal/model"
	"github.com/drift-monitor/drift-monitor/internal/statecache"
	"github.com/drift-monitor/drift-monitor/internal/watch"
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

// countingStore counts the declared contents read back (for a diff).
type countingStore struct {
	model.ContentStore
	reads atomic.Int32
}

func (s *countingStore) ReadStored(st *model.Stored) ([]byte, error) {
	s.reads.Add(1)
	return s.ContentStore.ReadStored(st)
}

// TestKnownContentDriftNotDiffedAgain: a content drift's record carries
// its diff when the drift appears; while it persists, later events (a
// write storm on the drifted file) neither read the declared content back
// nor make a diff no record would show, and once resolved, the next
// drift has its diff again. The daemon keeps declared contents as digests
// (desired.Stored) when it has its state cache, as here.
func TestKnownContentDriftNotDiffedAgain(t *testing.T) {
	ctx := context.Background()
	d, _, log := syntheticDaemon(t, Options{Cache: &statecache.Cache{Dir: t.TempDir(), Mode: statecache.ModeLazy}})
	store := &countingStore{ContentStore: d.checker.Store}
	d.checker.Store = store
	d.fullCheck(ctx, "first check")
	file := filepath.Join(d.o.Root, "etc/a.conf")
	write := func(content string) {
		t.Helper()
		writeFile(t, file, []byte(content))
		d.handle(ctx, []watch.Event{{Path: "/etc/a.conf", Op: watch.Write}})
	}
	diffs := func() (n int) {
		for _, r := range log.find(journal.RecordDriftDetected, "/etc/a.conf") {
			if strings.Contains(r[journal.FieldDriftDiff], "+changed") {
				n++
			}
		}
		return n
	}
	write("changed\n")
	if diffs() != 1 || store.reads.Load() != 1 {
		t.Fatalf("drift appeared: %d records with the diff, %d reads of the declared content; want 1 and 1", diffs(), store.reads.Load())
	}
	for i := range 20 {
		write(fmt.Sprintf("changed %d times\n", i+2))
	}
	if store.reads.Load() != 1 {
		t.Errorf("20 writes to the drifted file read the declared content back %d more times, want none", store.reads.Load()-1)
	}
	for _, dr := range d.track.byEntry["file:/etc/a.conf"] {
		if dr.Diff != "" {
			t.Errorf("the tracker keeps a diff no record shows: %q", dr.Diff)
		}
	}
	write("a\n")
	write("changed\n")
	if diffs() != 2 || store.reads.Load() != 2 {
		t.Errorf("drift appeared again: %d records with the diff, %d reads; want 2 and 2", diffs(), store.reads.Load())
	}
}
