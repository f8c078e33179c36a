package dbusapi

import (
	"go/ast"
	"go/parser"
	"go/token"
	"slices"
	"strconv"
	"testing"
)

// TestStatesListed: every State constant but StateUnknown (never
// published) is in States, once, so that a state added to the API cannot be
// left out of what shows every state (the metrics' drift_monitor_state).
func TestStatesListed(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "client.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var declared []string
	ast.Inspect(f, func(n ast.Node) bool {
		v, ok := n.(*ast.ValueSpec)
		if !ok {
			return true
		}
		for i, id := range v.Names {
			if len(id.Name) > len("State") && id.Name[:len("State")] == "State" && id.Name != "StateUnknown" && i < len(v.Values) {
				if lit, ok := v.Values[i].(*ast.BasicLit); ok {
					s, _ := strconv.Unquote(lit.Value)
					declared = append(declared, s)
				}
			}
		}
		return true
	})
	if len(declared) < 7 {
		t.Fatalf("found %d State constants in client.go; the scan is broken", len(declared))
	}
	if d := slices.Compare(slices.Sorted(slices.Values(declared)), slices.Sorted(slices.Values(States))); d != 0 {
		t.Errorf("States %v, want the published State constants %v", States, declared)
	}
}
