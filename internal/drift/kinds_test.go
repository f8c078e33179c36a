package drift

import (
	"slices"
	"testing"

	"github.com/drift-monitor/drift-monitor/internal/constscan"
)

// TestKindsListed: every constant of type Kind declared in this package's
// sources is in Kinds, once, so that a kind added in any file cannot be
// left out of what counts kinds (the metrics' drift_monitor_drift_entries).
func TestKindsListed(t *testing.T) {
	consts, err := constscan.Strings(".", "*.go")
	if err != nil {
		t.Fatal(err)
	}
	var declared []Kind
	for _, c := range consts {
		if c.Type == "Kind" {
			declared = append(declared, Kind(c.Value))
		}
	}
	if len(declared) < 30 {
		t.Fatalf("found %d Kind constants; the scan is broken", len(declared))
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
