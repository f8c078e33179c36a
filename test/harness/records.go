package harness

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/drift-monitor/drift-monitor/internal/journal"
)

// Record is one record of the daemon, field name to value, read from the
// journal (JournalRecord) or from a plain line of its standard error
// (PlainRecord). A field the journal holds several times has its values
// joined by newlines.
type Record map[string]string

// PlainLevel is the field under which PlainRecord keeps the level word of a
// plain line (INFO, WARN...). It is no journal field: in the journal the
// level is PRIORITY.
const PlainLevel = "PLAIN_LEVEL"

// JournalRecord turns an entry of test/nspawn's Journal or JournalEntries
// (a field's value a string, or a []string for a field present more than
// once) into a Record.
func JournalRecord(e map[string]any) Record {
	r := make(Record, len(e))
	for k, v := range e {
		switch v := v.(type) {
		case string:
			r[k] = v
		case []string:
			r[k] = strings.Join(v, "\n")
		}
	}
	return r
}

// Matches reports whether r has the MESSAGE_ID id ("" matches only a record
// without one), or id is its type (DRIFT_MONITOR_RECORD: DriftDetected, the
// drift of any kind of entry), and every field of fields with its value.
func (r Record) Matches(id string, fields map[string]string) bool {
	if r["MESSAGE_ID"] != id && (id == "" || r["DRIFT_MONITOR_RECORD"] != id) {
		return false
	}
	for k, v := range fields {
		if r[k] != v {
			return false
		}
	}
	return true
}

// String is the record for failure messages: its MESSAGE, then its
// MESSAGE_ID, PRIORITY and DRIFT_* fields.
func (r Record) String() string {
	var b strings.Builder
	b.WriteString(r["MESSAGE"])
	keys := []string{"MESSAGE_ID", "PRIORITY", PlainLevel}
	for _, k := range slices.Sorted(maps.Keys(r)) {
		if strings.HasPrefix(k, "DRIFT_") && k != "DRIFT_DIFF" {
			keys = append(keys, k)
		}
	}
	for _, k := range keys {
		if v := r[k]; v != "" {
			fmt.Fprintf(&b, " %s=%s", k, v)
		}
	}
	return b.String()
}

// Select returns the records with index in [from, to) that match id and
// fields (see Record.Matches).
func Select(rs []Record, from, to int, id string, fields map[string]string) []Record {
	var out []Record
	for i := max(from, 0); i < to && i < len(rs); i++ {
		if rs[i].Matches(id, fields) {
			out = append(out, rs[i])
		}
	}
	return out
}

// Records is where a test reads a daemon's records, oldest first: its
// standard error as the test collects it, or its journal.
type Records interface {
	Records() ([]Record, error)
}

// Waiting says how WaitRecord and Poll wait: for at most Timeout (a bound
// for a loaded machine, not an expectation); looking again whenever Wake
// receives, and otherwise after an interval that grows from 10ms to 250ms
// (nil Wake: intervals only); and giving up at once when Stop closes (the
// process or container that would bring the state is gone), after a last
// look. Describe, if set, adds to the failure message (a log's tail).
type Waiting struct {
	Timeout  time.Duration
	Wake     <-chan struct{}
	Stop     <-chan struct{}
	Describe func() string
}

// Poll intervals: short at first, because most awaited states come within
// milliseconds, then backing off so that a slow one does not run hundreds
// of commands.
const (
	firstPollInterval = 10 * time.Millisecond
	maxPollInterval   = 250 * time.Millisecond
)

// Outcome says how Await ended.
type Outcome int

const (
	Held     Outcome = iota // cond held
	TimedOut                // w.Timeout passed
	Stopped                 // w.Stop closed first
)

// Await calls cond until it holds, w.Timeout passes, or w.Stop closes, and
// returns how it ended with cond's last observation. cond is always called
// at least once, once more after the deadline, so that a state that came
// during the last interval is no timeout, and once more when Stop closes,
// since the state may have come just before the end. For callers with
// failure messages of their own (test/nspawn); others call Poll.
func Await(w Waiting, cond func() (bool, string)) (Outcome, string) {
	deadline := time.Now().Add(w.Timeout)
	interval := firstPollInterval
	for {
		ok, obs := cond()
		if ok {
			return Held, obs
		}
		left := time.Until(deadline)
		if left <= 0 {
			return TimedOut, obs
		}
		timer := time.NewTimer(min(interval, left))
		select {
		case <-w.Stop:
			timer.Stop()
			if ok, obs := cond(); ok {
				return Held, obs
			}
			return Stopped, obs
		case <-w.Wake:
			timer.Stop()
		case <-timer.C:
			interval = min(2*interval, maxPollInterval)
		}
	}
}

// Poll waits as Await does and fails the test unless cond held. cond
// returns whether the awaited state is there and what it observed; the
// failure names what and the last observation, and adds w.Describe's text.
// cond should report errors as observations, not end the test: the next
// look may succeed.
func Poll(t testing.TB, w Waiting, what string, cond func() (bool, string)) {
	t.Helper()
	switch res, obs := Await(w, cond); res {
	case TimedOut:
		t.Fatalf("timed out after %v waiting for %s; last observation: %s%s", w.Timeout, what, obs, w.more())
	case Stopped:
		t.Fatalf("stopped while waiting for %s; last observation: %s%s", what, obs, w.more())
	}
}

func (w Waiting) more() string {
	if w.Describe == nil {
		return ""
	}
	return "\n" + w.Describe()
}

// WaitRecord waits, as w says, for a record after the first from records
// of src that matches id and fields, and returns it with its index. The
// failure shows the records after from that were there.
func WaitRecord(t testing.TB, w Waiting, src Records, from int, id string, fields map[string]string) (Record, int) {
	t.Helper()
	var got Record
	at := -1
	Poll(t, w, fmt.Sprintf("a record %s %v after record %d", id, fields, from), func() (bool, string) {
		rs, err := src.Records()
		if err != nil {
			return false, err.Error()
		}
		for i := max(from, 0); i < len(rs); i++ {
			if rs[i].Matches(id, fields) {
				got, at = rs[i], i
				return true, ""
			}
		}
		var last []string
		for _, r := range rs[min(max(from, 0), len(rs)):] {
			last = append(last, r.String())
		}
		return false, fmt.Sprintf("%d records after %d:\n%s", len(last), from, strings.Join(last, "\n"))
	})
	return got, at
}

// PlainRecord reads one plain line of the daemon's standard error (LEVEL
// message MESSAGE_ID=... FIELD=value...; internal/journal.ParsePlain) into a
// Record: its fields, MESSAGE (as written: escaped) and PlainLevel.
func PlainRecord(line string) Record {
	p := journal.ParsePlain(line)
	r := make(Record, len(p.Fields)+2)
	maps.Copy(r, p.Fields)
	r["MESSAGE"] = p.Message
	r[PlainLevel] = p.Level
	return r
}
