package ostree

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/drift-monitor/drift-monitor/test/harness"
)

// InstallRPMs builds an empty noarch package of each name (BuildRPMs) and
// records it in the rpm database of root at dbpath (a host path:
// /usr/share/rpm on rpm-ostree hosts) with `rpm --root --justdb`, the
// database alone, as an installed package. Without rpm and rpmbuild the
// test is skipped, or fails when CI=true.
func InstallRPMs(t testing.TB, root, dbpath string, names ...string) {
	t.Helper()
	rpms := BuildRPMs(t, names...)
	if _, err := os.Stat(filepath.Join(root, dbpath)); err != nil {
		run(t, "rpm", "--root", root, "--dbpath", dbpath, "--initdb")
	}
	if len(rpms) > 0 {
		run(t, "rpm", append([]string{"--root", root, "--dbpath", dbpath, "-i", "--justdb", "--nodeps", "--noscripts"}, rpms...)...)
	}
}

// BuildRPMs builds an empty noarch package of each name with rpmbuild and
// returns their files.
func BuildRPMs(t testing.TB, names ...string) []string {
	t.Helper()
	harness.RequireTools(t, "rpm", "rpmbuild")
	top := t.TempDir()
	var rpms []string
	for _, n := range names {
		spec := filepath.Join(top, n+".spec")
		text := fmt.Sprintf("Name: %s\nVersion: 1.0\nRelease: 1\nSummary: dummy\nLicense: MIT\nBuildArch: noarch\n%%description\ndummy\n%%files\n", n)
		if err := os.WriteFile(spec, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		run(t, "rpmbuild", "-bb", "--quiet", "--define", "_topdir "+top, spec)
		rpms = append(rpms, filepath.Join(top, "RPMS/noarch", n+"-1.0-1.noarch.rpm"))
	}
	return rpms
}

func run(t testing.TB, name string, args ...string) {
	t.Helper()
	if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
}
