package prometheus

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/drift-monitor/drift-monitor/internal/drift"
)

// TestNoticesAreTheRulesExclusions: ConfigDriftDetected leaves out exactly
// the kinds drift-monitor treats as notices (drift.Notices). A new notice
// kind missing from the rule would page every fleet where it appears; a
// kind left in the rule's exclusions that became drift would hide it.
func TestNoticesAreTheRulesExclusions(t *testing.T) {
	b, err := os.ReadFile(rulesFile(t))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`drift_monitor_drift_entries\{kind!~"([^"]*)"\}`).FindAllStringSubmatch(string(b), -1)
	if len(m) != 1 {
		t.Fatalf("%s: want one kind!~ exclusion on drift_monitor_drift_entries, found %d", rulesFile(t), len(m))
	}
	got := strings.Split(m[0][1], "|")
	want := make([]string, len(drift.Notices))
	for i, k := range drift.Notices {
		want[i] = string(k)
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("ConfigDriftDetected excludes %v; drift.Notices is %v", got, want)
	}
	for _, k := range drift.Notices {
		if !slices.Contains(drift.Kinds, k) {
			t.Errorf("notice %q is not in drift.Kinds: no series would carry it", k)
		}
	}
}
