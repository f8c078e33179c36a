package metrics

import (
	"strings"
	"testing"
)

func TestAttributionState(t *testing.T) {
	off, err := Text(Snapshot{State: "clean"}, "v")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(off), "attribution_state") {
		t.Errorf("attribution off, yet a metric:\n%s", off)
	}
	on, err := Text(Snapshot{State: "clean", Attribution: "never-task"}, "v")
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range AttributionStates {
		want := `drift_monitor_attribution_state{state="` + st + `"} 0`
		if st == "never-task" {
			want = `drift_monitor_attribution_state{state="never-task"} 1`
		}
		if !strings.Contains(string(on), want+"\n") {
			t.Errorf("lacks %s:\n%s", want, on)
		}
	}
}
