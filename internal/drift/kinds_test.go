package drift

import (
	"slices"
	"testing"

	"github.com/drift-monitor/drift-monitor/internal/accountdb"
	"github.com/drift-monitor/drift-monitor/internal/constscan"
	"github.com/drift-monitor/drift-monitor/internal/model"
)

// TestKindsListed: every constant of type Kind declared in this package's
// sources is in Kinds, once, so that a kind added in any file cannot be
// left out of what counts kinds (the metrics' drift_monitor_drift_entries).
func TestKindsListed(t *testing.T) {
	var declared []Kind
	for _, v := range constscan.OfType(t, ".", "Kind", 30) {
		declared = append(declared, Kind(v))
	}
	for _, k := range declared {
		if !slices.Contains(Kinds, k) {
			t.Errorf("Kind %q is declared but not in Kinds", k)
		}
	}
	for i, k := range Kinds {
		if slices.Contains(Kinds[:i], k) {
			t.Errorf("Kind %q is in Kinds twice", k)
		}
		if !slices.Contains(declared, k) {
			t.Errorf("Kinds has %q, which no constant declares", k)
		}
	}
}

// TestKindsInRows: the kinds of drift each kind of entry reports (its row
// of model.Kinds: the series drift_monitor_drift_entries has for a state
// declaring it) are Kinds, and every Kind is reported by some kind of
// entry: none is left without a series.
func TestKindsInRows(t *testing.T) {
	reported := map[Kind]bool{}
	for _, m := range model.Kinds {
		for _, d := range m.Drift {
			if !slices.Contains(Kinds, Kind(d)) {
				t.Errorf("model.Kinds: %s entries report %q, which is no Kind", m.Kind, d)
			}
			reported[Kind(d)] = true
		}
	}
	for _, k := range Kinds {
		if !reported[k] {
			t.Errorf("no row of model.Kinds reports %q", k)
		}
	}
}

// TestValueFilesAreAccountFiles: the files a row says hold an entry's
// values (where the rulebook looks for an exclusion of its drift) are
// account files as accountdb names them.
func TestValueFilesAreAccountFiles(t *testing.T) {
	n := 0
	for _, m := range model.Kinds {
		for _, f := range m.ValueFiles {
			n++
			if !slices.Contains(accountdb.Files[:], f) {
				t.Errorf("model.Kinds: %s values in %s, which is no account file", m.Kind, f)
			}
		}
	}
	if n == 0 {
		t.Fatal("no row names the files of its values; the test proves nothing")
	}
}
