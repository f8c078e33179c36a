package packaging

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/drift-monitor/drift-monitor/test/harness"
)

// buildTimeout bounds one `make rpm` (a cold Go build cache takes minutes on
// a small machine; a warm one takes seconds; %check's unit tests take a
// minute or two more).
const buildTimeout = 12 * time.Minute

// checkedRelease is the release buildRPM builds with its %check.
const checkedRelease = 1

// work is a directory for what tests of this binary share (built RPMs),
// removed when they are done.
var work string

func TestMain(m *testing.M) {
	if addr := os.Getenv(busClientEnv); addr != "" {
		os.Exit(busClient(addr)) // the unprivileged client of buspolicy_test.go
	}
	var err error
	if work, err = os.MkdirTemp("", "dm-packaging-"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := harness.Run(m)
	os.RemoveAll(work)
	os.Exit(code)
}

// run runs a command and returns its standard output, failing the test with
// both outputs if it does not exit 0.
func run(t testing.TB, dir string, name string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n--- stdout ---\n%s--- stderr ---\n%s", name, strings.Join(args, " "), err, out.String(), errb.String())
	}
	return out.String()
}

// version is the package version, from the file VERSION.
func version(t testing.TB) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(harness.Repo(t, ""), "VERSION"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// built is what one `make rpm` produced.
type built struct {
	Release int
	Topdir  string
	RPM     string // the binary RPM
	SRPM    string
	Tarball string
	Log     string // make's output
}

var (
	buildMu sync.Mutex
	builds  = map[int]*built{}
)

// buildRPM runs `make rpm RELEASE=release` into a directory of its own, once
// per test binary and release, and returns what it made. It fails the test if
// the build fails or does not produce the SRPM and the binary RPM.
func buildRPM(t testing.TB, release int) *built {
	t.Helper()
	harness.RequireTools(t, "make", "rpmbuild", "rpmspec", "rpm", "go", "git", "tar", "gzip")
	buildMu.Lock()
	defer buildMu.Unlock()
	if b, ok := builds[release]; ok {
		return b
	}
	root := harness.Repo(t, "")
	topdir := filepath.Join(work, "rpm-"+strconv.Itoa(release))
	ctx, cancel := context.WithTimeout(context.Background(), buildTimeout)
	defer cancel()
	// Release 1 is built as `make rpm` builds, its %check included, and
	// with CI=true as CI services set it for every job (see
	// TestCheckAsRoot). Later ones --without check: the unit tests are the
	// unit tier's, which `make test` runs; once per tier is enough.
	args := []string{"--no-print-directory", "rpm", "RELEASE=" + strconv.Itoa(release), "RPM_TOPDIR=" + topdir}
	if release != checkedRelease {
		args = append(args, "RPMBUILD_FLAGS=--without check")
	}
	cmd := exec.CommandContext(ctx, "make", args...)
	cmd.Env = append(os.Environ(), "CI=true")
	cmd.Dir = root
	start := time.Now()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("make rpm RELEASE=%d: %v (%v)\n%s", release, err, ctx.Err(), tail(string(out), 80))
	}
	t.Logf("make rpm RELEASE=%d took %v", release, time.Since(start).Round(time.Second))
	ver := version(t)
	arch := goarchToRPM(runtime.GOARCH)
	b := &built{
		Release: release,
		Topdir:  topdir,
		RPM:     filepath.Join(topdir, "RPMS", arch, fmt.Sprintf("drift-monitor-%s-%d.%s.rpm", ver, release, arch)),
		SRPM:    filepath.Join(topdir, "SRPMS", fmt.Sprintf("drift-monitor-%s-%d.src.rpm", ver, release)),
		Tarball: filepath.Join(topdir, "SOURCES", fmt.Sprintf("drift-monitor-%s.tar.gz", ver)),
		Log:     string(out),
	}
	for _, p := range []string{b.RPM, b.SRPM, b.Tarball} {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("make rpm RELEASE=%d did not make %s: %v\n%s", release, p, err, tail(string(out), 40))
		}
	}
	builds[release] = b
	return b
}

// goarchToRPM maps GOARCH to rpm's architecture name.
func goarchToRPM(goarch string) string {
	switch goarch {
	case "amd64":
		return "x86_64"
	case "arm64":
		return "aarch64"
	}
	return goarch
}

// tail returns the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = append([]string{fmt.Sprintf("(last %d of %d lines)", n, len(lines))}, lines[len(lines)-n:]...)
	}
	return strings.Join(lines, "\n")
}

// runStatus runs a command for at most two minutes and returns its combined
// output and how it exited, for commands whose exit status is an answer.
func runStatus(dir string, name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	return string(out), err
}
