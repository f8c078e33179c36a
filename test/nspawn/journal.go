package nspawn

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"testing"
)

// Journal returns the container's journal entries for unit, oldest first, as
// `journalctl -u UNIT -o json --all --no-pager` prints them; an empty unit
// means the whole journal. extra is appended to that command line, for
// example "-b", "-n", "20", or a match such as "MESSAGE_ID=...".
//
// Each entry maps a field name to a string, or to a []string for a field the
// entry carries more than once. journalctl prints values that are not
// printable UTF-8 as arrays of bytes; Journal turns them back into strings of
// those bytes, so callers need not care.
//
// Journal first asks journald to write out what it has received
// (`journalctl --sync`). A message a service is still writing can arrive
// later: to wait for one, poll with WaitFor and Run (see JournalEntries).
// Journal fails the test if journalctl fails or prints something that is not
// a journal entry.
func (m *Machine) Journal(t testing.TB, unit string, extra ...string) []map[string]any {
	t.Helper()
	m.MustRun(t, "journalctl", "--sync")
	out := m.MustRun(t, journalArgs(unit, extra)...)
	entries, err := JournalEntries(out)
	if err != nil {
		t.Fatalf("%s: %v\n--- journalctl output ---\n%s", m.Name, err, out)
	}
	return entries
}

// journalArgs is the journalctl command line Journal runs.
func journalArgs(unit string, extra []string) []string {
	// -q: no "-- No entries --" line on standard output.
	// --all: values over 4096 bytes are printed, not replaced by null.
	args := []string{"journalctl", "-o", "json", "--all", "--no-pager", "-q"}
	if unit != "" {
		args = append(args, "-u", unit)
	}
	return append(args, extra...)
}

// JournalEntries parses the output of `journalctl -o json` (one JSON object
// per line) as Journal does, for a caller that runs journalctl itself, for
// example inside a WaitFor condition.
func JournalEntries(out string) ([]map[string]any, error) {
	dec := json.NewDecoder(strings.NewReader(out))
	var entries []map[string]any
	for {
		var raw map[string]any
		err := dec.Decode(&raw)
		if errors.Is(err, io.EOF) {
			return entries, nil
		}
		if err != nil {
			return nil, fmt.Errorf("journal entry %d: %w", len(entries)+1, err)
		}
		entry := make(map[string]any, len(raw))
		for k, v := range raw {
			dv, err := journalValue(v)
			if err != nil {
				return nil, fmt.Errorf("journal entry %d, field %s: %w", len(entries)+1, k, err)
			}
			entry[k] = dv
		}
		entries = append(entries, entry)
	}
}

// journalValue decodes one field value of journalctl's JSON output: a string;
// an array of numbers (the bytes of a value that is not printable UTF-8); an
// array of those two (a field present more than once); or null (a value
// journalctl left out, which --all prevents).
func journalValue(v any) (any, error) {
	switch v := v.(type) {
	case nil, string:
		return v, nil
	case []any:
		if s, ok := journalBytes(v); ok {
			return s, nil
		}
		values := make([]string, len(v))
		for i, e := range v {
			switch e := e.(type) {
			case string:
				values[i] = e
			case []any:
				s, ok := journalBytes(e)
				if !ok {
					return nil, fmt.Errorf("value %d is an array but not of bytes: %v", i+1, e)
				}
				values[i] = s
			default:
				return nil, fmt.Errorf("value %d is a %T, not a string or bytes", i+1, e)
			}
		}
		return values, nil
	default:
		return nil, fmt.Errorf("value is a %T, not a string, bytes or an array of values", v)
	}
}

// journalBytes returns the string of the bytes in a, if a is a non-empty
// array of integers from 0 to 255.
func journalBytes(a []any) (string, bool) {
	if len(a) == 0 {
		return "", false
	}
	b := make([]byte, len(a))
	for i, e := range a {
		f, ok := e.(float64)
		if !ok || f < 0 || f > 255 || f != math.Trunc(f) {
			return "", false
		}
		b[i] = byte(f)
	}
	return string(b), true
}
