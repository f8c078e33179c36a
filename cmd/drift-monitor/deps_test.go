package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/drift-monitor/drift-monitor/test/harness"
)

var update = flag.Bool("update", false, "rewrite depaware.txt from what the release build links")

// pkg is what go list -json says of a package.
type pkg struct {
	ImportPath string
	Standard   bool
	Module     *struct{ Path string }
}

// deps lists the packages the packages pkgs link, with the go command's
// environment given added to this process's (go list -deps), run in the
// module's root.
func deps(t *testing.T, env []string, pkgs ...string) []pkg {
	t.Helper()
	return goList[pkg](t, env, append([]string{"-deps", "-json=ImportPath,Standard,Module"}, pkgs...)...)
}

// goList runs go list with args in the module's root, the go command's
// environment env added to this process's, and decodes the packages it
// lists as T; listing none fails the test.
func goList[T any](t *testing.T, env []string, args ...string) []T {
	t.Helper()
	args = append([]string{"list"}, args...)
	cmd := exec.Command("go", args...)
	cmd.Dir = "../.."
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			err = fmt.Errorf("%w: %s", err, ee.Stderr)
		}
		t.Fatalf("go %s: %v", strings.Join(args, " "), err)
	}
	var ps []T
	for dec := json.NewDecoder(bytes.NewReader(out)); ; {
		var p T
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("reading go list's output: %v", err)
		}
		ps = append(ps, p)
	}
	if len(ps) == 0 {
		t.Fatalf("go %s listed nothing", strings.Join(args, " "))
	}
	return ps
}

// releaseEnv is the go command's environment in the release build
// (tools/release-goenv.sh).
func releaseEnv(t *testing.T) []string {
	t.Helper()
	env, err := harness.ReleaseEnv(harness.Repo(t, ""))
	if err != nil {
		t.Fatal(err)
	}
	return env
}

const self = "github.com/drift-monitor/drift-monitor"

// depaware renders the packages the binary links beyond the standard
// library, as depaware.txt holds them: third-party first, then ours.
func depaware(ps []pkg) string {
	var third, ours []string
	for _, p := range ps {
		switch {
		case p.Standard:
		case strings.HasPrefix(p.ImportPath, self+"/") || p.ImportPath == self:
			ours = append(ours, p.ImportPath)
		default:
			third = append(third, p.ImportPath)
		}
	}
	slices.Sort(third)
	slices.Sort(ours)
	var b strings.Builder
	b.WriteString("# What the release build of drift-monitor links beyond Go's standard library\n")
	b.WriteString("# (go list -deps in tools/release-goenv.sh's environment). Generated: go test\n")
	b.WriteString("# ./cmd/drift-monitor -run TestReleaseDeps -update. Review what a change adds.\n")
	fmt.Fprintf(&b, "\n# third-party: %d packages\n", len(third))
	for _, p := range third {
		b.WriteString(p + "\n")
	}
	fmt.Fprintf(&b, "\n# drift-monitor: %d packages\n", len(ours))
	for _, p := range ours {
		b.WriteString(p + "\n")
	}
	return b.String()
}

// testHelpers are packages no production binary links: test frameworks
// and the standard library's test support. Butane's module links them
// into its translator (tools/release-goenv.sh says how the release build
// leaves them out).
var testHelpers = []string{"testing", "net/http/httptest", "github.com/stretchr/testify"}

func isTestHelper(path string) bool {
	for _, h := range testHelpers {
		if path == h || strings.HasPrefix(path, h+"/") {
			return true
		}
	}
	return false
}

// TestReleaseDeps: the release binary links no test helper, and exactly
// the packages depaware.txt lists (tailscale's depaware is the model): a
// change that adds a dependency shows it in review.
func TestReleaseDeps(t *testing.T) {
	ps := deps(t, releaseEnv(t), "./cmd/drift-monitor")
	for _, p := range ps {
		if isTestHelper(p.ImportPath) {
			t.Errorf("the release binary links %s", p.ImportPath)
		}
	}
	got := depaware(ps)
	if *update {
		if err := os.WriteFile("depaware.txt", []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile("depaware.txt")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("the release binary's dependencies differ from depaware.txt (-want +got); if that is meant, run go test ./cmd/drift-monitor -run TestReleaseDeps -update:\n%s", diff)
	}
}

// TestHelpersOnlyOutOfRelease: outside the release environment the binary
// does link the test helpers (through Butane's translator): the release
// environment is what keeps them out, and TestReleaseDeps would pass for
// nothing if the tree no longer linked them at all. When Butane moves its
// helpers to a _test.go file, this fails: drop tools/release-goenv.sh then.
func TestHelpersOnlyOutOfRelease(t *testing.T) {
	if _, err := os.Stat("../../vendor"); err == nil {
		t.Skip("a vendored tree (the RPM's build): the release flags removed the helpers from vendor/ itself")
	}
	linked := slices.ContainsFunc(deps(t, []string{"GOWORK=off"}, "./cmd/drift-monitor"), func(p pkg) bool { return isTestHelper(p.ImportPath) })
	if !linked {
		t.Errorf("the binary links no test helper without tools/release-goenv.sh: it is no longer needed")
	}
}

// leaves are the packages that observe, compare, watch and report entries:
// they must not link a loader of configs (package desired, Ignition,
// Butane), so that what they need stays small and none of a loader's
// process-wide settings reach them.
var leaves = []string{
	"./internal/model", "./internal/accountdb", "./internal/ondisk", "./internal/watch",
	"./internal/enablement", "./internal/drift", "./internal/audit",
}

// loaders are the packages the leaves must not link.
var loaders = []string{
	"github.com/coreos/ignition/", "github.com/coreos/butane/",
	self + "/internal/desired", self + "/internal/ignspec",
}

func TestLeavesLinkNoLoader(t *testing.T) {
	for _, leaf := range leaves {
		for _, p := range deps(t, nil, leaf) {
			for _, l := range loaders {
				if p.ImportPath == strings.TrimSuffix(l, "/") || strings.HasPrefix(p.ImportPath, l) {
					t.Errorf("%s links %s", leaf, p.ImportPath)
				}
			}
		}
	}
	// The model is the leaf of leaves: the standard library only.
	for _, p := range deps(t, nil, "./internal/model") {
		if !p.Standard && p.ImportPath != self+"/internal/model" {
			t.Errorf("internal/model links %s", p.ImportPath)
		}
	}
}

// TestLoaderSetsNoProcessSetting: no package of the loader (desired and
// its stages) links memlimit or sets a runtime setting itself: the memory
// limit a load runs under is its caller's to choose (the command, the
// daemon), handed to the load as a desired.Bound, and memlimit alone sets
// it.
func TestLoaderSetsNoProcessSetting(t *testing.T) {
	for _, p := range deps(t, nil, "./internal/desired/...") {
		if p.ImportPath == self+"/internal/memlimit" {
			t.Errorf("the loader links %s", p.ImportPath)
		}
	}
	cmd := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, "./internal/desired/...")
	cmd.Dir = "../.."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		imports := strings.Fields(line)
		if slices.Contains(imports[1:], "runtime/debug") {
			t.Errorf("%s imports runtime/debug", imports[0])
		}
	}
}
