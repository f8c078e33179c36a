package repair

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/drift-monitor/drift-monitor/test/harness"
)

func TestMain(m *testing.M) { os.Exit(harness.Run(m)) }

// runTimeout bounds one run of a tool or of the binary; each takes well
// under a second.
const runTimeout = time.Minute

// requireTier skips (or, with CI=true, fails) a test where the tier cannot
// run: it needs root and the shadow-utils the account repairs run.
func requireTier(t *testing.T) {
	t.Helper()
	harness.RequireRoot(t, "the repair tier (reconcile chowns, the account tools chroot)")
	harness.RequireTools(t, "useradd", "usermod", "userdel", "groupadd", "groupmod", "chpasswd", "chgpasswd")
}

// root is a temporary tree checked and repaired with --root, and the
// config files next to it.
type root struct {
	t   *testing.T
	dir string // the root
	cfg string // the directory of the configs
	// subs, when set, is the root policy's file_contexts.subs (ignite).
	subs string
}

// newRoot makes an empty root that every user can enter (as a host's / is:
// a key written as its user must be reachable), with the account files of
// a small image: root, core (1000) and the group wheel.
func newRoot(t *testing.T) *root {
	t.Helper()
	dir, err := os.MkdirTemp("", "drift-monitor-repair-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	r := &root{t: t, dir: filepath.Join(dir, "root"), cfg: filepath.Join(dir, "configs")}
	for _, d := range []string{r.dir, r.cfg} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	r.write("/etc/passwd", "root:x:0:0:root:/root:/bin/bash\ncore:x:1000:1000::/home/core:/bin/bash\n", 0o644)
	r.write("/etc/shadow", "root:*:19000:0:99999:7:::\ncore:!:19000:0:99999:7:::\n", 0o640)
	r.write("/etc/group", "root:x:0:\nwheel:x:10:\ncore:x:1000:\n", 0o644)
	r.write("/etc/gshadow", "root:*::\nwheel:!::\ncore:!::\n", 0o640)
	// useradd's defaults, as Debian ships them: a user gets a group of
	// its own.
	r.write("/etc/login.defs", "UID_MIN 1000\nUID_MAX 60000\nGID_MIN 1000\nGID_MAX 60000\nUSERGROUPS_ENAB yes\nHOME_MODE 0700\n", 0o644)
	r.mkdir("/home/core", 0o700, 1000, 1000)
	return r
}

// host is a host path inside the root.
func (r *root) host(p string) string { return filepath.Join(r.dir, p) }

// write writes a file inside the root, making its parents.
func (r *root) write(p, content string, mode os.FileMode) {
	r.t.Helper()
	if err := os.MkdirAll(filepath.Dir(r.host(p)), 0o755); err != nil {
		r.t.Fatal(err)
	}
	if err := os.WriteFile(r.host(p), []byte(content), mode); err != nil {
		r.t.Fatal(err)
	}
	if err := os.Chmod(r.host(p), mode); err != nil {
		r.t.Fatal(err)
	}
}

// mkdir makes a directory inside the root with its mode and owner.
func (r *root) mkdir(p string, mode os.FileMode, uid, gid int) {
	r.t.Helper()
	if err := os.MkdirAll(r.host(p), mode); err != nil {
		r.t.Fatal(err)
	}
	if err := os.Chmod(r.host(p), mode); err != nil {
		r.t.Fatal(err)
	}
	if err := os.Chown(r.host(p), uid, gid); err != nil {
		r.t.Fatal(err)
	}
}

// read reads a file inside the root.
func (r *root) read(p string) string {
	r.t.Helper()
	b, err := os.ReadFile(r.host(p))
	if err != nil {
		r.t.Fatal(err)
	}
	return string(b)
}

// config writes a config file (root's, 0600) and returns its path.
func (r *root) config(name, content string) string {
	r.t.Helper()
	p := filepath.Join(r.cfg, name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		r.t.Fatal(err)
	}
	return p
}

// result is one run of the binary.
type result struct {
	exit           int
	stdout, stderr string
}

func (r result) String() string {
	return fmt.Sprintf("exit %d\nstdout:\n%s\nstderr:\n%s", r.exit, r.stdout, r.stderr)
}

// run runs drift-monitor with args in dir ("": the test's).
func run(t *testing.T, dir string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), runTimeout)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, harness.Binary(t), args...)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exitErr *exec.ExitError
	if err != nil && !(errors.As(err, &exitErr) && exitErr.Exited()) {
		t.Fatalf("running drift-monitor %s: %v\nstderr:\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return result{cmd.ProcessState.ExitCode(), stdout.String(), stderr.String()}
}

// check runs `check --root ROOT --config CFG --format json`.
func (r *root) check(cfg string) (result, harness.Report) {
	r.t.Helper()
	res := run(r.t, "", "check", "--root", r.dir, "--config", cfg, "--format", "json")
	var rep harness.Report
	if res.exit < 2 {
		if err := json.Unmarshal([]byte(res.stdout), &rep); err != nil {
			r.t.Fatalf("check: the output is not a report: %v\n%s", err, res)
		}
	}
	return res, rep
}

// reconcile runs `reconcile --root ROOT --config CFG --format json` with
// extra arguments.
func (r *root) reconcile(cfg string, extra ...string) (result, harness.ReconcileReport) {
	r.t.Helper()
	res := run(r.t, "", append([]string{"reconcile", "--root", r.dir, "--config", cfg, "--format", "json"}, extra...)...)
	var rep harness.ReconcileReport
	if res.exit < 2 {
		if err := json.Unmarshal([]byte(res.stdout), &rep); err != nil {
			r.t.Fatalf("reconcile: the output is not a report: %v\n%s", err, res)
		}
	}
	return res, rep
}

// wantClean fails unless `check` finds no drift.
func (r *root) wantClean(cfg string) {
	r.t.Helper()
	if res, rep := r.check(cfg); res.exit != 0 || len(rep.Drift) != 0 {
		r.t.Errorf("check after the repair: want exit 0 and no drift, got %s", res)
	}
}

// steps lists a report's repairs, one line per step, as a dry run and a
// run must both say them.
func steps(rep harness.ReconcileReport) []string {
	var out []string
	for _, a := range rep.Repaired {
		for _, d := range a.Done {
			out = append(out, a.Entry+" "+a.Path+": "+d)
		}
	}
	for _, a := range rep.Refused {
		out = append(out, a.Entry+" "+a.Path+": not repaired: "+a.Problem)
	}
	return out
}

// stat is a node's type, mode and owner, as `stat -c '%F %a %u:%g'` says.
func (r *root) stat(p string) string {
	r.t.Helper()
	out, err := exec.Command("stat", "-c", "%F %a %u:%g", r.host(p)).CombinedOutput()
	if err != nil {
		return "missing"
	}
	return strings.TrimSpace(string(out))
}

// ignite runs the Ignition that go.mod pins on the root, as a first boot
// does (-platform file, the fetch-offline and files stages), and returns
// its log. With withPolicy the root has Debian's SELinux policy and
// Ignition relabels what it writes with the real setfiles (which works
// with SELinux off in the kernel); without, a stub stands for setfiles.
func (r *root) ignite(cfg []byte, withPolicy bool) (string, error) {
	r.t.Helper()
	ign := harness.IgnitionBinary(r.t, harness.PinnedIgnition(r.t))
	work := filepath.Join(filepath.Dir(r.dir), "ignition")
	bin := filepath.Join(work, "bin")
	for _, d := range []string{bin, filepath.Join(work, "run")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			r.t.Fatal(err)
		}
	}
	if withPolicy {
		harness.RequireTools(r.t, "setfiles")
		r.write("/etc/selinux/config", "SELINUX=permissive\nSELINUXTYPE=default\n", 0o644)
		if err := os.MkdirAll(r.host("/etc/selinux/default"), 0o755); err != nil {
			r.t.Fatal(err)
		}
		if out, err := exec.Command("cp", "-a", "/etc/selinux/default/contexts", r.host("/etc/selinux/default/")).CombinedOutput(); err != nil {
			harness.Unavailable(r.t, "Debian's SELinux policy (selinux-policy-default) is needed: %v\n%s", err, out)
		}
		if r.subs != "" {
			r.write("/etc/selinux/default/contexts/files/file_contexts.subs", r.subs, 0o644)
		}
	} else {
		r.write("/etc/selinux/config", "SELINUX=disabled\nSELINUXTYPE=targeted\n", 0o644)
		if err := os.WriteFile(filepath.Join(bin, "setfiles"), []byte("#!/bin/sh\ncat >/dev/null\n"), 0o755); err != nil {
			r.t.Fatal(err)
		}
	}
	cfgPath := filepath.Join(work, "config.ign")
	if err := os.WriteFile(cfgPath, cfg, 0o600); err != nil {
		r.t.Fatal(err)
	}
	var log bytes.Buffer
	for _, stage := range [][]string{{"-stage", "fetch-offline", "-neednet", filepath.Join(work, "run/neednet")}, {"-stage", "files"}} {
		ctx, cancel := context.WithTimeout(r.t.Context(), runTimeout)
		cmd := exec.CommandContext(ctx, ign, append(stage, "-platform", "file", "-root", r.dir,
			"-config-cache", filepath.Join(work, "run/cache.json"), "-state-file", filepath.Join(work, "run/state"), "-log-to-stdout")...)
		cmd.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"), "IGNITION_CONFIG_FILE="+cfgPath)
		cmd.Stdout, cmd.Stderr = &log, &log
		err := cmd.Run()
		cancel()
		if err != nil {
			return log.String(), fmt.Errorf("Ignition's %s stage: %w", stage[1], err)
		}
	}
	return log.String(), nil
}
