package harness

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// work holds what the harness makes for one test binary: the built binary
// and the state directory. Run removes it.
var work = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "dm-harness-")
	if err != nil {
		return "", fmt.Errorf("making the harness's directory: %w", err)
	}
	// Unprivileged runs of the binary reach it, too.
	if err := os.Chmod(dir, 0o755); err != nil {
		return "", fmt.Errorf("chmod %s: %w", dir, err)
	}
	return dir, nil
})

// Run runs the tests of m and returns their exit code for os.Exit, after
// removing what the harness made. Before the tests it sets STATE_DIRECTORY
// to a temporary directory: the digest key the binary makes and shares
// (internal/digestkey) must not be the host's.
func Run(m *testing.M) int {
	dir, err := work()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	os.Setenv("STATE_DIRECTORY", filepath.Join(dir, "state"))
	code := m.Run()
	os.RemoveAll(dir)
	return code
}

var build = sync.OnceValues(func() (string, error) { return goBuild("drift-monitor") })

// goBuild builds ./cmd/drift-monitor into the harness's directory as name,
// as it is released (ReleaseEnv) and with the go build flags given.
func goBuild(name string, flags ...string) (string, error) {
	dir, err := work()
	if err != nil {
		return "", err
	}
	root, err := repoRoot()
	if err != nil {
		return "", err
	}
	release, err := ReleaseEnv(root)
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, name)
	// -trimpath as make build: the binary's file names are the release's,
	// and the packages compiled do not depend on where the release
	// environment's workspace is (a new one for new imports).
	args := append(append([]string{"build", "-trimpath"}, flags...), "-o", bin, "./cmd/drift-monitor")
	cmd := exec.Command("go", args...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), release...)
	if slices.Contains(flags, "-race") {
		cmd.Env = append(cmd.Env, "CGO_ENABLED=1")
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go %s in %s: %w\n%s", strings.Join(args, " "), root, err, out)
	}
	return bin, nil
}

// ReleaseEnv is the environment (NAME=VALUE, added to the process's) of
// the go command in the release build of the tree at root: what
// tools/release-goenv.sh prints (the one place that says how drift-monitor
// is built as released; make build, the RPM and the tiers all use it).
func ReleaseEnv(root string) ([]string, error) {
	cmd := exec.Command("./tools/release-goenv.sh")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			err = fmt.Errorf("%w: %s", err, ee.Stderr)
		}
		return nil, fmt.Errorf("tools/release-goenv.sh in %s: %w", root, err)
	}
	env := strings.Fields(string(out))
	for _, v := range env {
		if !strings.Contains(v, "=") {
			return nil, fmt.Errorf("tools/release-goenv.sh in %s printed %q: not NAME=VALUE", root, v)
		}
	}
	return env, nil
}

// Binary returns the path of drift-monitor built from this tree, building it
// at the first call of the test binary. A failed build fails the test (and
// every later caller's).
func Binary(t testing.TB) string {
	t.Helper()
	bin, err := build()
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// Repo returns the absolute path of rel in the repository (the directory of
// go.mod above the test's working directory).
func Repo(t testing.TB, rel string) string {
	t.Helper()
	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(root, rel)
}

var repoRoot = sync.OnceValues(func() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("finding the repository: %w", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "drift-monitor.spec")); err == nil {
			if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
				return dir, nil
			}
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no drift-monitor repository (go.mod and drift-monitor.spec) above the working directory")
		}
		dir = parent
	}
})

// raceBuild is build's twin with the race detector: the systemd tier runs
// it under a real systemd, where no unit test reaches the daemon's loop.
var raceBuild = sync.OnceValues(func() (string, error) { return goBuild("drift-monitor.race", "-race") })

// RaceBinary returns the path of drift-monitor built from this tree with
// -race (cgo: it needs a C compiler), building it at the first call.
func RaceBinary(t testing.TB) string {
	t.Helper()
	bin, err := raceBuild()
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// TestBinary compiles the tests of the package pkg (a path relative to the
// repository, "./internal/systemd") with -race into a binary of its own
// and returns its path: a tier that can give those tests what they need (a
// booted systemd, journald) runs them there. Each call builds afresh.
func TestBinary(t testing.TB, pkg string) string {
	t.Helper()
	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir, err := work()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, filepath.Base(pkg)+".test")
	cmd := exec.Command("go", "test", "-c", "-race", "-o", bin, pkg)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go test -c -race %s in %s: %v\n%s", pkg, root, err, out)
	}
	return bin
}
