package prometheus

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/drift-monitor/drift-monitor/test/harness"
)

// TestRules: the shipped rules are valid and pass their unit tests
// (packaging/prometheus/drift-monitor.rules_test.yml), each alert both
// firing and staying quiet where it should.
func TestRules(t *testing.T) {
	harness.RequireTools(t, "promtool")
	dir := filepath.Dir(rulesFile(t))
	for _, args := range [][]string{
		{"check", "rules", "drift-monitor.rules.yml"},
		{"test", "rules", "drift-monitor.rules_test.yml"},
	} {
		cmd := exec.Command("promtool", args...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "SUCCESS") {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}
