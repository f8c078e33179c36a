package nspawn

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/drift-monitor/drift-monitor/test/harness"
)

const probeTimeout = 30 * time.Second

// Require skips the test, with the reason, when this machine cannot run the
// systemd tier; with CI=true it fails the test instead, since CI must run
// every tier. Boot calls it; a test that needs the tier before booting (to
// build something first) can call it itself.
//
// It checks for root with CAP_SYS_ADMIN, systemd-nspawn and nsenter on PATH,
// systemd and dbus-daemon (or dbus-broker) in the host's /usr, which is what
// the containers run, a mounted systemd cgroup hierarchy, and then starts one
// container that runs /bin/true (about half a second) to prove the
// namespaces, the volatile root and the /usr overlay work. The checks run
// once per test binary.
func Require(t testing.TB) {
	t.Helper()
	reason := tierUnavailable()
	if reason == "" {
		return
	}
	harness.Unavailable(t, "the systemd tier cannot run here: %s", reason)
}

// tierUnavailable returns why the tier cannot run, or "".
var tierUnavailable = sync.OnceValue(func() string {
	if uid := os.Geteuid(); uid != 0 {
		return fmt.Sprintf("it needs root, and this runs as uid %d", uid)
	}
	switch ok, err := hasCapSysAdmin(); {
	case err != nil:
		return fmt.Sprintf("cannot tell whether this process has CAP_SYS_ADMIN: %v", err)
	case !ok:
		return "it needs CAP_SYS_ADMIN, which this process lacks (root in an unprivileged container?)"
	}
	for _, c := range []struct{ bin, pkg string }{{"systemd-nspawn", "systemd-container"}, {"nsenter", "util-linux"}} {
		if _, err := exec.LookPath(c.bin); err != nil {
			return fmt.Sprintf("%s is not on PATH (Debian package %s)", c.bin, c.pkg)
		}
	}
	if !exists("/usr/lib/systemd/systemd") {
		return "/usr/lib/systemd/systemd is missing (Debian package systemd): the containers boot the host's /usr"
	}
	if !exists("/usr/bin/dbus-daemon") && !exists("/usr/bin/dbus-broker") {
		return "no dbus-daemon or dbus-broker in /usr/bin (Debian package dbus): the containers would have no system bus"
	}
	if _, err := systemdHierarchies(); err != nil {
		return fmt.Sprintf("containers cannot get cgroups of their own: %v", err)
	}
	removeStale()
	return probe()
})

// hasCapSysAdmin reports whether CAP_SYS_ADMIN (bit 21) is in this process's
// effective capability set.
func hasCapSysAdmin() (bool, error) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return false, fmt.Errorf("reading /proc/self/status: %w", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "CapEff:"); ok {
			caps, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			if err != nil {
				return false, fmt.Errorf("parsing CapEff in /proc/self/status: %w", err)
			}
			return caps&(1<<21) != 0, nil
		}
	}
	return false, fmt.Errorf("no CapEff line in /proc/self/status")
}

// probe starts a container that runs /bin/true and returns why that failed,
// or "". It uses everything Boot does but -b.
func probe() string {
	name := fmt.Sprintf("dm-e2e-%d-probe", os.Getpid())
	cg, err := newCgroups(name)
	if err != nil {
		return fmt.Sprintf("cannot create a cgroup for a container: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
	defer cancel()
	cmd := nspawnCommand(ctx, cg, []string{
		"-q", "-D", "/", "--volatile=yes", "--overlay=/usr::/usr",
		"--register=no", "--keep-unit", "-M", name, "--", "/bin/true",
	})
	out, runErr := cmd.CombinedOutput()
	rmErr := cg.remove(time.Now().Add(cgroupTimeout))
	if runErr != nil {
		return fmt.Sprintf("a trial container running /bin/true failed: %v (%v)\n%s", runErr, ctx.Err(), out)
	}
	if rmErr != nil {
		return fmt.Sprintf("a trial container left cgroups behind: %v", rmErr)
	}
	return ""
}

var staleName = regexp.MustCompile(`^dm-e2e-([0-9]+)-`)

// removeStale removes what containers of a test binary that died without
// running its cleanups left on the host: their cgroups and their
// /run/systemd/nspawn/propagate directories, once empty. (The containers
// themselves get SIGTERM when the binary dies: see Pdeathsig in
// nspawnCommand.) Anything of a test binary still running, or not empty, is
// left alone.
func removeStale() {
	type place struct {
		dir    string
		remove func(string) error
	}
	places := []place{{"/run/systemd/nspawn/propagate", os.Remove}}
	if hs, err := systemdHierarchies(); err == nil {
		for _, h := range hs {
			places = append(places, place{filepath.Join(h.mount, h.self), removeTree})
		}
	}
	for _, p := range places {
		entries, _ := os.ReadDir(p.dir)
		for _, e := range entries {
			m := staleName.FindStringSubmatch(e.Name())
			if m == nil || !e.IsDir() {
				continue
			}
			pid, _ := strconv.Atoi(m[1])
			if pid == os.Getpid() || exists(fmt.Sprintf("/proc/%d", pid)) {
				continue
			}
			_ = p.remove(filepath.Join(p.dir, e.Name())) // in use or not empty: not ours to force
		}
	}
}
