package harness

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// IgnitionModule is the Go module that holds Ignition and, since v2.27.0,
// Butane.
const IgnitionModule = "github.com/coreos/ignition/v2"

// tool is one command built from IgnitionModule.
type tool struct {
	name string // the binary's name: "ignition", "butane"
	pkg  string // its main package, relative to the module
	// versionVar is the variable its -version prints, set with -X as the
	// module's own build scripts do (build, butane/build_for_container).
	versionVar string
	cgo        bool
}

var (
	ignitionTool = tool{"ignition", "./internal", IgnitionModule + "/internal/version.Raw", true}
	butaneTool   = tool{"butane", "./butane/internal", IgnitionModule + "/butane/internal/version.Raw", false}
)

// PinnedIgnition returns the version of IgnitionModule that go.mod pins
// (for example "v2.27.0"), as `go list -m` reads it: the Ignition whose
// config packages drift-monitor is built with, and so the one a host that
// drift-monitor supports is written by.
func PinnedIgnition(t testing.TB) string {
	t.Helper()
	v, err := pinnedIgnition()
	if err != nil {
		t.Fatal(err)
	}
	return v
}

var pinnedIgnition = sync.OnceValues(func() (string, error) {
	root, err := repoRoot()
	if err != nil {
		return "", err
	}
	out, err := goCmd(root, nil, "list", "-m", "-f", "{{.Version}}", IgnitionModule)
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(out), nil
})

// IgnitionBinary returns the path of the real Ignition of version (a
// module version such as "v2.27.0"; PinnedIgnition for the one go.mod
// pins), built from the Go module cache with cgo, as the recipe in
// e2e-recipe.md does. It needs gcc and libblkid's headers
// (libblkid-dev): without them it calls Unavailable. A failed build fails
// the test.
//
// A version is built once per machine: the binary is kept in the user's
// cache directory (~/.cache/drift-monitor-tests), keyed by the module
// version and the Go toolchain, and checked with its -version before use;
// a later test binary, or another package's test binary running at the
// same time, waits for the build and takes it.
func IgnitionBinary(t testing.TB, version string) string {
	t.Helper()
	if _, err := exec.LookPath("gcc"); err != nil {
		Unavailable(t, "building Ignition %s needs cgo: gcc is not on PATH (apt-get install gcc)", version)
	}
	if _, err := os.Stat("/usr/include/blkid/blkid.h"); err != nil {
		Unavailable(t, "building Ignition %s needs libblkid's headers (apt-get install libblkid-dev)", version)
	}
	return toolBinary(t, ignitionTool, version)
}

// ButaneBinary returns the path of Butane of version, built from the Go
// module cache like IgnitionBinary (Butane lives in the Ignition module
// since v2.27.0: an older version fails the test).
func ButaneBinary(t testing.TB, version string) string {
	t.Helper()
	return toolBinary(t, butaneTool, version)
}

var (
	toolMu     sync.Mutex
	toolBuilds = map[string]func() (string, error){}
)

func toolBinary(t testing.TB, tl tool, version string) string {
	t.Helper()
	key := tl.name + "@" + version
	toolMu.Lock()
	build, ok := toolBuilds[key]
	if !ok {
		build = sync.OnceValues(func() (string, error) { return buildTool(tl, version) })
		toolBuilds[key] = build
	}
	toolMu.Unlock()
	bin, err := build()
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// buildTool builds tl at version into the tools cache, or finds it there.
func buildTool(tl tool, version string) (string, error) {
	root, err := repoRoot()
	if err != nil {
		return "", err
	}
	dir, err := toolsDir(version)
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, tl.name)
	// One builder at a time per version: a second test binary waits here
	// and then finds the first one's binary.
	lock, err := os.OpenFile(filepath.Join(dir, ".lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return "", err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return "", fmt.Errorf("locking %s: %w", lock.Name(), err)
	}
	if err := toolVersionIs(bin, tl, version); err == nil {
		return bin, nil
	}
	// The module's source, from the module cache (downloaded if need be,
	// verified against go.sum's checksum database as any download is).
	out, err := goCmd(root, nil, "mod", "download", "-json", IgnitionModule+"@"+version)
	if err != nil {
		return "", err
	}
	var mod struct{ Dir, Error string }
	if err := json.Unmarshal([]byte(out), &mod); err != nil || mod.Dir == "" {
		return "", fmt.Errorf("go mod download %s@%s: no module directory (%v %s)", IgnitionModule, version, err, mod.Error)
	}
	cgo := "CGO_ENABLED=0"
	if tl.cgo {
		cgo = "CGO_ENABLED=1"
	}
	tmp := bin + ".new"
	// Built in the module's own directory, with its own go.mod and go.sum:
	// the dependencies Ignition's release was built with, not ours.
	if _, err := goCmd(mod.Dir, []string{cgo, "GOWORK=off", "GOFLAGS=-mod=readonly -buildvcs=false"},
		"build", "-trimpath", "-ldflags", "-X "+tl.versionVar+"="+version, "-o", tmp, tl.pkg); err != nil {
		return "", fmt.Errorf("building %s %s from the module cache: %w", tl.name, version, err)
	}
	if err := toolVersionIs(tmp, tl, version); err != nil {
		return "", err
	}
	if err := os.Rename(tmp, bin); err != nil {
		return "", err
	}
	return bin, nil
}

// toolsDir is where the tools of version are kept: under the user's cache
// directory when there is one the user owns alone, else in the harness's
// directory for this test binary.
func toolsDir(version string) (string, error) {
	key := version + "-" + runtime.Version() + "-" + runtime.GOARCH
	if cache, err := os.UserCacheDir(); err == nil {
		dir := filepath.Join(cache, "drift-monitor-tests", "ignition-"+key)
		if err := os.MkdirAll(dir, 0o700); err == nil && ownedPrivate(filepath.Dir(dir)) && ownedPrivate(dir) {
			return dir, nil
		}
	}
	w, err := work()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(w, "ignition-"+key)
	return dir, os.MkdirAll(dir, 0o700)
}

// ownedPrivate reports whether dir is a directory of this user that no one
// else may write: a binary the tests run as root is taken only from there.
func ownedPrivate(dir string) bool {
	var st syscall.Stat_t
	if err := syscall.Lstat(dir, &st); err != nil {
		return false
	}
	return st.Mode&syscall.S_IFMT == syscall.S_IFDIR && int(st.Uid) == os.Geteuid() && st.Mode&0o022 == 0
}

// toolVersionIs checks that bin runs and calls itself version.
func toolVersionIs(bin string, tl tool, version string) error {
	out, err := exec.Command(bin, "-version").CombinedOutput()
	if tl.name == "butane" {
		out, err = exec.Command(bin, "--version").CombinedOutput()
	}
	if err != nil {
		return fmt.Errorf("%s -version: %w\n%s", bin, err, out)
	}
	if !strings.Contains(string(out), " "+version) {
		return fmt.Errorf("%s -version says %q, want %s", bin, strings.TrimSpace(string(out)), version)
	}
	return nil
}

// goCmd runs the go command in dir with env added, and returns its stdout.
func goCmd(dir string, env []string, args ...string) (string, error) {
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("go %s (in %s): %w\n%s", strings.Join(args, " "), dir, err, stderr.String())
	}
	return stdout.String(), nil
}
