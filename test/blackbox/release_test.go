package blackbox

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/drift-monitor/drift-monitor/test/harness"
)

// TestBinaryLinksNoTestHelpers: the binary every tier runs is the release
// build (tools/release-goenv.sh): the modules its build info lists hold
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

// TestBinaryNamesItsModules: the release binary's build info names every
// module it links by its path and the version go.mod requires, as go
// version -m, SBOM generators and vulnerability scanners read it: no
// module replaced by a directory (which they see as "(devel)", with the
// path of the checkout that built it).
func TestBinaryNamesItsModules(t *testing.T) {
	out, err := exec.Command("go", "version", "-m", harness.Binary(t)).Output()
	if err != nil {
		t.Fatalf("go version -m: %v", err)
	}
	list := exec.Command("go", "list", "-m", "-f", "{{.Path}} {{.Version}}", "all")
	list.Dir = harness.Repo(t, "")
	list.Env = append(list.Environ(), "GOWORK=off")
	mods, err := list.Output()
	if err != nil {
		t.Fatalf("go list -m all: %v", err)
	}
	required := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(string(mods)), "\n") {
		if f := strings.Fields(l); len(f) == 2 {
			required[f[0]] = f[1]
		}
	}
	deps := 0
	for _, l := range strings.Split(string(out), "\n") {
		f := strings.Fields(l)
		switch {
		case len(f) > 0 && f[0] == "=>":
			t.Errorf("a module is replaced: %s", strings.TrimSpace(l))
		case len(f) >= 3 && f[0] == "dep":
			deps++
			if want, ok := required[f[1]]; !ok || f[2] != want {
				t.Errorf("dep %s %s: go.mod requires %q", f[1], f[2], want)
			}
		}
	}
	if deps == 0 || !strings.Contains(string(out), "\tgithub.com/coreos/ignition/v2\t") {
		t.Errorf("the build info lists no module (or not Ignition's); nothing is proven:\n%s", out)
	}
}
