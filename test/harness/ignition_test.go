package harness

import (
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// TestPinnedIgnition: the version the tools are built at is go.mod's, read
// by the go command (not a constant that could lag a bump).
func TestPinnedIgnition(t *testing.T) {
	gomod, err := os.ReadFile(Repo(t, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^\s*` + regexp.QuoteMeta(IgnitionModule) + `\s+(v\S+)`).FindSubmatch(gomod)
	if m == nil {
		t.Fatalf("go.mod does not require %s", IgnitionModule)
	}
	if got := PinnedIgnition(t); got != string(m[1]) {
		t.Errorf("PinnedIgnition = %q, go.mod says %q", got, m[1])
	}
}

// TestIgnitionBinary: the pinned Ignition builds, runs and calls itself by
// its version; a second call is the same binary (built once).
func TestIgnitionBinary(t *testing.T) {
	v := PinnedIgnition(t)
	bin := IgnitionBinary(t, v)
	out, err := exec.Command(bin, "-version").CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "Ignition "+v {
		t.Fatalf("%s -version: %v, %q; want \"Ignition %s\"", bin, err, out, v)
	}
	if again := IgnitionBinary(t, v); again != bin {
		t.Errorf("second call: %s, want the first build %s", again, bin)
	}
}
