package dbusapi

import (
	"slices"
	"strings"
	"testing"

	"github.com/drift-monitor/drift-monitor/internal/constscan"
)

// TestStatesListed: every State constant but StateUnknown (never
// published) is in States, once, so that a state added to the API cannot be
// left out of what shows every state (the metrics' drift_monitor_state).
func TestStatesListed(t *testing.T) {
	consts, err := constscan.Strings(".", "*.go")
	if err != nil {
		t.Fatal(err)
	}
	var declared []string
	for _, c := range consts {
		if strings.HasPrefix(c.Name, "State") && c.Name != "StateUnknown" {
			declared = append(declared, c.Value)
		}
	}
	if len(declared) < 7 {
		t.Fatalf("found %d State constants; the scan is broken", len(declared))
	}
	if d := slices.Compare(slices.Sorted(slices.Values(declared)), slices.Sorted(slices.Values(States))); d != 0 {
		t.Errorf("States %v, want the published State constants %v", States, declared)
	}
}
