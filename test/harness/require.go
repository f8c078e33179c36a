package harness

import (
	"fmt"
	"os"
	"os/exec"
	"testing"
)

// OnCI reports whether the tests run under CI (CI=true), where no tier may
// be skipped.
func OnCI() bool { return os.Getenv("CI") == "true" }

// Unavailable ends the test because this machine cannot run it: skipped with
// the reason, or failed when CI=true.
func Unavailable(t testing.TB, format string, args ...any) {
	t.Helper()
	why := fmt.Sprintf(format, args...)
	if OnCI() {
		t.Fatalf("%s (CI=true does not allow skipping)", why)
	}
	t.Skipf("skipping: %s (with CI=true this fails instead)", why)
}

// RequireTools calls Unavailable unless every tool is on PATH.
func RequireTools(t testing.TB, tools ...string) {
	t.Helper()
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			Unavailable(t, "%s is not on PATH (.ci/run installs what every tier needs)", tool)
		}
	}
}

// RequireRoot calls Unavailable unless the test runs as root; why says what
// needs it.
func RequireRoot(t testing.TB, why string) {
	t.Helper()
	if uid := os.Geteuid(); uid != 0 {
		Unavailable(t, "%s needs root, and this runs as uid %d", why, uid)
	}
}
