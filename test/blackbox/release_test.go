package blackbox

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/drift-monitor/drift-monitor/test/harness"
)

// TestBinaryLinksNoTestHelpers: the binary every tier runs is the release
// build (tools/release-goflags.sh): the modules its build info lists hold
// Butane's translator but no test framework.
func TestBinaryLinksNoTestHelpers(t *testing.T) {
	out, err := exec.Command("go", "version", "-m", harness.Binary(t)).Output()
	if err != nil {
		t.Fatalf("go version -m: %v", err)
	}
	if !strings.Contains(string(out), "github.com/coreos/ignition/v2") {
		t.Fatalf("the build info lists no Ignition module; nothing is proven:\n%s", out)
	}
	if strings.Contains(string(out), "github.com/stretchr/testify") {
		t.Errorf("the binary links testify:\n%s", out)
	}
}
