package packaging

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/drift-monitor/drift-monitor/test/harness"
)

// The package on rpm-ostree (Fedora CoreOS, RHEL CoreOS, bootc images):
// its scriptlets in rpm-ostree's sandbox, and its files in a real ostree
// deployment, installed and then upgraded.

// presetLink is the link `systemctl preset` makes for the package's unit.
const presetLink = "etc/systemd/system/multi-user.target.wants/drift-monitor.service"

// scriptlet is one of the package's scriptlets that rpm-ostree runs.
type scriptlet struct {
	Name string // rpm's: %pre, %post, %posttrans
	Prog string // the interpreter
	Body string
}

// rpmOstreeScriptlets returns the scriptlets of rpmFile that rpm-ostree
// runs, in its order: %pre, %post and %posttrans; never %preun or %postun,
// since a deployment is always assembled anew (rpm-ostree:
// src/libpriv/rpmostree-scripts.cxx, pre_script, post_script,
// posttrans_script and ignored_scripts).
func rpmOstreeScriptlets(t *testing.T, rpmFile string) []scriptlet {
	t.Helper()
	var scripts []scriptlet
	for _, s := range []struct{ name, tag string }{{"%pre", "PREIN"}, {"%post", "POSTIN"}, {"%posttrans", "POSTTRANS"}} {
		body := run(t, "", "rpm", "-qp", "--qf", "%{"+s.tag+"}", rpmFile)
		if body == "(none)" {
			continue
		}
		prog := run(t, "", "rpm", "-qp", "--qf", "%{"+s.tag+"PROG}", rpmFile)
		if prog == "(none)" {
			prog = "/bin/sh"
		}
		if strings.HasPrefix(prog, "<lua>") {
			t.Fatalf("%s is a Lua scriptlet: rpm-ostree runs those only for a few packages it knows", s.name)
		}
		scripts = append(scripts, scriptlet{Name: s.name, Prog: prog, Body: body})
	}
	return scripts
}

// unpackRPM installs the files of rpmFile into dir, owners and modes as the
// package says, without running anything of it.
func unpackRPM(t *testing.T, rpmFile, dir string) {
	t.Helper()
	run(t, "", "rpm", "-i", "--root", dir, "--dbpath", "/.rpmdb", "--nodeps", "--noscripts", "--notriggers",
		"--nosignature", "--nodigest", rpmFile)
	if err := os.RemoveAll(filepath.Join(dir, ".rpmdb")); err != nil {
		t.Fatal(err)
	}
}

// rootfs is a tree being assembled as rpm-ostree assembles a deployment: the
// host's /usr (standing in for the base image's: it has the shell, systemctl
// and journalctl the scriptlets call) with the package's /usr on top, a
// writable /etc holding the package's /etc, and an empty /var.
type rootfs struct {
	Dir   string // holds usr, etc, var
	Stage string // the package's files alone: Stage/usr, Stage/etc
}

// newRootfs unpacks rpmFile and assembles a rootfs from it. The merged /usr
// is a read-only overlay mount (root only), removed at the end of the test.
func newRootfs(t *testing.T, rpmFile string) *rootfs {
	t.Helper()
	harness.RequireRoot(t, "mounting the rootfs's overlay /usr")
	harness.RequireTools(t, "rpm", "mount", "umount")
	base := t.TempDir()
	r := &rootfs{Dir: filepath.Join(base, "root"), Stage: filepath.Join(base, "stage")}
	unpackRPM(t, rpmFile, r.Stage)

	// rpm-ostree puts a wrapper in place of systemctl that runs the real
	// one only for preset (and --root), and for anything else prints that
	// it ignored it (rpm-ostree: rust/src/core.rs, SYSTEMCTL_WRAPPER;
	// src/libpriv/systemctl-wrapper.sh). The same, as a layer of its own.
	wrap := filepath.Join(base, "wrap")
	real, err := exec.LookPath("systemctl")
	if err != nil {
		t.Fatal(err)
	}
	mkdirAll(t, filepath.Join(wrap, "usr/bin"), 0o755)
	copyFile(t, real, filepath.Join(wrap, "usr/bin/systemctl.rpmostreesave"), 0o755)
	writeFile(t, filepath.Join(wrap, "usr/bin/systemctl"), 0o755, `#!/bin/sh
for arg in "$@"; do
  case $arg in preset|--root|--root=*) exec /usr/bin/systemctl.rpmostreesave "$@" ;; esac
done
echo "rpm-ostree-systemctl: Ignored non-preset command:" "$@"
`)

	for _, d := range []string{"usr", "etc", "var/tmp", "var/lib"} {
		mkdirAll(t, filepath.Join(r.Dir, d), 0o755)
	}
	run(t, "", "mount", "-t", "overlay", "overlay", "-o",
		"ro,lowerdir="+filepath.Join(wrap, "usr")+":"+filepath.Join(r.Stage, "usr")+":/usr", filepath.Join(r.Dir, "usr"))
	t.Cleanup(func() {
		if out, err := exec.Command("umount", filepath.Join(r.Dir, "usr")).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v\n%s", filepath.Join(r.Dir, "usr"), err, out)
		}
	})
	run(t, "", "cp", "-a", filepath.Join(r.Stage, "etc")+"/.", filepath.Join(r.Dir, "etc"))
	// The distribution's policy where rpm-ostree runs (Fedora's
	// 99-default-disable.preset): only the package's preset may enable.
	mkdirAll(t, filepath.Join(r.Dir, "etc/systemd/system-preset"), 0o755)
	writeFile(t, filepath.Join(r.Dir, "etc/systemd/system-preset/99-default-disable.preset"), 0o644, "disable *\n")
	return r
}

// sandboxResult is what one scriptlet did in the sandbox.
type sandboxResult struct {
	Stdout, Stderr string
	Err            error
}

// runInSandbox runs one scriptlet in r the way rpm-ostree runs it when it
// installs a package into a new deployment, with $1 = arg (rpm-ostree
// assembles every deployment anew: its packages are always installed, 1).
//
// The sandbox is rpm-ostree's (src/libpriv/rpmostree-scripts.cxx,
// rpmostree_run_script_in_bwrap_container, and rust/src/bwrap.rs,
// Bubblewrap::new and setup_compat_var): bubblewrap with its own pid, uts,
// ipc, cgroup and network namespaces; root's capabilities cut to the ten it
// keeps; /dev, /proc, a few of /sys read-only; /usr and /etc from the rootfs;
// /var read-only with a tmpfs on /var/tmp; /run an empty tmpfs but for
// /run/ostree-booted; the environment LANG, PATH=/usr/sbin:/usr/bin and
// SYSTEMD_OFFLINE=1 only; the script read from a file descriptor.
// Two differences, both stricter: /usr is read-only here (rpm-ostree's
// rofiles-fuse lets a script add files to /usr, never change one), and the
// script's standard output and error are kept apart (rpm-ostree sends them
// to the journal, the error stream at priority err).
func runInSandbox(t *testing.T, r *rootfs, s scriptlet, arg string) sandboxResult {
	t.Helper()
	harness.RequireTools(t, "bwrap")
	args := []string{
		"--dev", "/dev", "--proc", "/proc", "--dir", "/run", "--dir", "/tmp", "--chdir", "/",
		"--die-with-parent", "--unshare-pid", "--unshare-uts", "--unshare-ipc", "--unshare-cgroup-try",
	}
	for _, d := range []string{"/sys/block", "/sys/bus", "/sys/class", "/sys/dev", "/sys/devices"} {
		args = append(args, "--ro-bind", d, d)
	}
	args = append(args, "--unshare-net", "--cap-drop", "ALL")
	for _, c := range []string{"cap_chown", "cap_dac_override", "cap_fowner", "cap_fsetid", "cap_kill",
		"cap_setgid", "cap_setuid", "cap_setpcap", "cap_sys_chroot", "cap_setfcap"} {
		args = append(args, "--cap-add", c)
	}
	for _, l := range []string{"bin", "sbin", "lib", "lib64"} {
		if fi, err := os.Lstat(filepath.Join(r.Dir, "usr", l)); err == nil && fi.IsDir() {
			args = append(args, "--symlink", "usr/"+l, "/"+l)
		}
	}
	args = append(args,
		"--ro-bind", "usr", "/usr", "--bind", "etc", "/etc",
		"--ro-bind", "./var", "/var", "--tmpfs", "/var/tmp",
		"--tmpfs", "/run", "--ro-bind-data", "3", "/run/ostree-booted",
		s.Prog, "/proc/self/fd/5", arg)

	script := filepath.Join(t.TempDir(), "script")
	writeFile(t, script, 0o600, s.Body)
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer devnull.Close()
	sf, err := os.Open(script)
	if err != nil {
		t.Fatal(err)
	}
	defer sf.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bwrap", args...)
	cmd.Dir = r.Dir
	cmd.Env = []string{"LANG=C", "PATH=/usr/sbin:/usr/bin", "SYSTEMD_OFFLINE=1"}
	cmd.ExtraFiles = []*os.File{devnull, devnull, sf} // fds 3, 4, 5
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = cmd.Run()
	return sandboxResult{Stdout: out.String(), Stderr: errb.String(), Err: err}
}

// installInSandbox runs every scriptlet rpm-ostree runs and fails the test
// unless each one exits 0 and writes nothing, on either stream.
func installInSandbox(t *testing.T, r *rootfs, rpmFile string) {
	t.Helper()
	scripts := rpmOstreeScriptlets(t, rpmFile)
	if len(scripts) == 0 {
		t.Fatalf("%s has no %%pre, %%post or %%posttrans: nothing would apply the preset", filepath.Base(rpmFile))
	}
	for _, s := range scripts {
		res := runInSandbox(t, r, s, "1")
		if res.Err != nil {
			t.Errorf("%s of %s fails in rpm-ostree's sandbox, which aborts the whole rpm-ostree install: %v\n"+
				"--- stdout ---\n%s--- stderr ---\n%s--- script ---\n%s",
				s.Name, filepath.Base(rpmFile), res.Err, res.Stdout, res.Stderr, s.Body)
		}
		if res.Stderr != "" || res.Stdout != "" {
			t.Errorf("%s of %s is not quiet in rpm-ostree's sandbox (its output would reach the journal, stderr as errors):\n"+
				"--- stdout ---\n%s--- stderr ---\n%s--- script ---\n%s",
				s.Name, filepath.Base(rpmFile), res.Stdout, res.Stderr, s.Body)
		}
	}
}

// TestRPMScriptletsInRPMOstreeSandbox runs the RPM's scriptlets as
// `rpm-ostree install` runs them: each succeeds, says nothing, and the
// preset enables the unit under a policy that disables everything else.
func TestRPMScriptletsInRPMOstreeSandbox(t *testing.T) {
	b := buildRPM(t, 1)
	r := newRootfs(t, b.RPM)
	installInSandbox(t, r, b.RPM)

	if target, err := os.Readlink(filepath.Join(r.Dir, presetLink)); err != nil || !isUnitPath(target) {
		t.Errorf("after %%post in the sandbox: /%s -> %q (%v), want the unit (the preset enables it)", presetLink, target, err)
	}
	// Nothing reached the read-only /var: the catalog is left to the boot
	// (see TestRPMInOstreeDeployment).
	if ents, err := os.ReadDir(filepath.Join(r.Dir, "var/lib")); err != nil || len(ents) != 0 {
		t.Errorf("/var/lib after the scriptlets: %v %v, want empty", ents, err)
	}
}

// TestRPMScriptletsSandboxIsStrict proves the sandbox of
// TestRPMScriptletsInRPMOstreeSandbox is rpm-ostree's where it matters: a
// scriptlet that writes /var, reaches the manager or the network, or calls
// a systemctl verb other than preset, fails or is caught talking.
func TestRPMScriptletsSandboxIsStrict(t *testing.T) {
	b := buildRPM(t, 1)
	r := newRootfs(t, b.RPM)
	for _, tc := range []struct {
		name, body string
		wantErr    bool
		wantStderr string
		wantStdout string
	}{
		{name: "catalog update", body: "journalctl --update-catalog\n", wantErr: true, wantStderr: "/var/lib/systemd/catalog/database"},
		{name: "var", body: "touch /var/lib/x\n", wantErr: true, wantStderr: "Read-only file system"},
		{name: "usr", body: "touch /usr/x\n", wantErr: true, wantStderr: "Read-only file system"},
		{name: "systemctl start", body: "systemctl start drift-monitor.service\n",
			wantStdout: "rpm-ostree-systemctl: Ignored non-preset command: start drift-monitor.service"},
		{name: "no systemd", body: "test -d /run/systemd/system\n", wantErr: true},
		{name: "ostree-booted", body: "test -e /run/ostree-booted && test \"$SYSTEMD_OFFLINE\" = 1 && test \"$1\" = 1\n"},
		// /proc is the sandbox's own: /proc/net/dev lists its namespace's
		// interfaces, the loopback alone.
		{name: "no network", body: "test \"$(tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' ')\" = lo\n"},
		{name: "var/tmp writable", body: "touch /var/tmp/x\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := runInSandbox(t, r, scriptlet{Name: tc.name, Prog: "/bin/sh", Body: tc.body}, "1")
			if (res.Err != nil) != tc.wantErr {
				t.Errorf("exit: %v, want an error: %v\n%s%s", res.Err, tc.wantErr, res.Stdout, res.Stderr)
			}
			if !strings.Contains(res.Stderr, tc.wantStderr) || (tc.wantStderr == "" && res.Stderr != "") {
				t.Errorf("stderr %q, want %q", res.Stderr, tc.wantStderr)
			}
			if strings.TrimSpace(res.Stdout) != tc.wantStdout {
				t.Errorf("stdout %q, want %q", res.Stdout, tc.wantStdout)
			}
		})
	}
}

// TestRPMInOstreeDeployment commits what rpm-ostree would commit for a host
// with the package layered (its files as /usr, its /etc, with what %post
// did there, as /usr/etc) into a real ostree sysroot, deploys it, adds an
// administrator's config, and deploys the next release over it.
func TestRPMInOstreeDeployment(t *testing.T) {
	harness.RequireTools(t, "ostree", "journalctl", "chattr")
	r1, r2 := buildRPM(t, 1), buildRPM(t, 2)
	sysroot := filepath.Join(t.TempDir(), "sysroot")
	// ostree makes each deployment's top directory immutable; removing the
	// temporary directory (the cleanup registered before this one, so run
	// after it) needs that undone.
	t.Cleanup(func() {
		deps, _ := filepath.Glob(filepath.Join(sysroot, "ostree/deploy/*/deploy/*.[0-9]*"))
		for _, d := range deps {
			if out, err := exec.Command("chattr", "-i", d).CombinedOutput(); err != nil {
				t.Logf("chattr -i %s: %v %s", d, err, out)
			}
		}
	})
	const osname, ref = "dm", "dm/test"
	repo := filepath.Join(sysroot, "ostree/repo")
	mkdirAll(t, sysroot, 0o755)
	run(t, "", "ostree", "admin", "init-fs", sysroot)
	run(t, "", "ostree", "admin", "os-init", "--sysroot="+sysroot, osname)
	stateVar := filepath.Join(sysroot, "ostree/deploy", osname, "var")

	// deploy commits the tree for rpmFile (none: the base OS alone) and
	// deploys it; it returns the deployment's directory.
	deploy := func(t *testing.T, rpmFile string) string {
		t.Helper()
		tree := filepath.Join(t.TempDir(), "tree")
		mkdirAll(t, tree, 0o755)
		if rpmFile == "" {
			mkdirAll(t, filepath.Join(tree, "usr/etc"), 0o755)
			mkdirAll(t, filepath.Join(tree, "usr/lib"), 0o755)
		} else {
			r := newRootfs(t, rpmFile)
			installInSandbox(t, r, rpmFile)
			run(t, "", "cp", "-a", filepath.Join(r.Stage, "usr"), filepath.Join(tree, "usr"))
			run(t, "", "cp", "-a", filepath.Join(r.Dir, "etc"), filepath.Join(tree, "usr/etc"))
		}
		// ostree deploys only a tree with an os-release and a kernel.
		writeFile(t, filepath.Join(tree, "usr/lib/os-release"), 0o644, "ID=dm-test\nNAME=\"drift-monitor test OS\"\nVERSION_ID=1\n")
		if err := os.Symlink("../usr/lib/os-release", filepath.Join(tree, "usr/etc/os-release")); err != nil {
			t.Fatal(err)
		}
		kdir := filepath.Join(tree, "usr/lib/modules/6.1.0-dm")
		mkdirAll(t, kdir, 0o755)
		writeFile(t, filepath.Join(kdir, "vmlinuz"), 0o644, "not a kernel\n")
		writeFile(t, filepath.Join(kdir, "initramfs.img"), 0o644, "not an initramfs\n")
		run(t, "", "ostree", "--repo="+repo, "commit", "--branch="+ref, "--tree=dir="+tree,
			"--subject=base OS "+filepath.Base(rpmFile))
		run(t, "", "ostree", "admin", "deploy", "--sysroot="+sysroot, "--os="+osname, ref)
		rev := strings.TrimSpace(run(t, "", "ostree", "--repo="+repo, "rev-parse", ref))
		dir := filepath.Join(sysroot, "ostree/deploy", osname, "deploy", rev+".0")
		if _, err := os.Stat(dir); err != nil {
			t.Fatalf("no deployment of %s: %v", rev, err)
		}
		return dir
	}
	// check asserts what every deployment must have in its /etc.
	check := func(t *testing.T, dep string) {
		t.Helper()
		fi, err := os.Lstat(filepath.Join(dep, "etc/drift-monitor/desired.d"))
		if err != nil {
			t.Fatalf("deployment has no /etc/drift-monitor/desired.d: %v", err)
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); !ok || fi.Mode() != os.ModeDir|0o700 || st.Uid != 0 || st.Gid != 0 {
			t.Errorf("/etc/drift-monitor/desired.d: mode %v owner %+v, want drwx------ root:root (configs hold secrets)", fi.Mode(), fi.Sys())
		}
		if target, err := os.Readlink(filepath.Join(dep, presetLink)); err != nil || !isUnitPath(target) {
			t.Errorf("/%s: %q %v, want a link to the unit (the preset)", presetLink, target, err)
		}
		// The first-boot adoption unit: enabled by the same preset, so that a
		// host booted from this deployment for the first time adopts its
		// Ignition config.
		adoptLink := "etc/systemd/system/multi-user.target.wants/drift-monitor-adopt.service"
		if target, err := os.Readlink(filepath.Join(dep, adoptLink)); err != nil || path.Base(target) != "drift-monitor-adopt.service" {
			t.Errorf("/%s: %q %v, want a link to drift-monitor-adopt.service (the preset)", adoptLink, target, err)
		}
	}

	// The host before the package, and the README's way of layering it: a
	// config put in /etc before the reboot into the deployment that has
	// the package (install -d -m 0700, install -m 0600).
	dep0 := deploy(t, "")
	const earlyConfig = "etc/drift-monitor/desired.d/40-early.ign"
	mkdirAll(t, filepath.Join(dep0, "etc/drift-monitor"), 0o755)
	if err := os.Mkdir(filepath.Join(dep0, "etc/drift-monitor/desired.d"), 0o700); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dep0, earlyConfig), 0o600, sampleIgnition)

	// kept asserts that the deployment dep still has the config at rel.
	kept := func(t *testing.T, dep, rel string) {
		t.Helper()
		got, err := os.ReadFile(filepath.Join(dep, rel))
		if err != nil {
			t.Errorf("the deployment lost the administrator's /%s: %v", rel, err)
			return
		}
		if string(got) != sampleIgnition {
			t.Errorf("/%s in the new deployment: %q, want %q", rel, got, sampleIgnition)
		}
		if fi, err := os.Stat(filepath.Join(dep, rel)); err != nil || fi.Mode() != 0o600 {
			t.Errorf("/%s in the new deployment: mode %v (%v), want 0600", rel, fi.Mode(), err)
		}
	}

	var dep1 string
	t.Run("install", func(t *testing.T) {
		dep1 = deploy(t, r1.RPM)
		check(t, dep1)
		kept(t, dep1, earlyConfig)
	})
	if t.Failed() {
		return
	}

	// The administrator's config, added to the booted deployment's /etc.
	const adminConfig = "etc/drift-monitor/desired.d/50-admin.ign"
	writeFile(t, filepath.Join(dep1, adminConfig), 0o600, sampleIgnition)
	// systemd's mark that /var is up to date with /usr, as after a boot.
	writeFile(t, filepath.Join(stateVar, ".updated"), 0o644, "")

	var dep2 string
	t.Run("upgrade", func(t *testing.T) {
		dep2 = deploy(t, r2.RPM)
		if dep2 == dep1 {
			t.Fatalf("release 2 deployed as release 1's deployment %s", dep1)
		}
		check(t, dep2)
		kept(t, dep2, adminConfig)
		kept(t, dep2, earlyConfig)

		// The catalog after the reboot: ostree removed /var/.updated, so
		// systemd-journal-catalog-update.service (ConditionNeedsUpdate=/var)
		// runs `journalctl --update-catalog` at the next boot, and the new
		// /usr holds the catalog it reads.
		if _, err := os.Lstat(filepath.Join(stateVar, ".updated")); !os.IsNotExist(err) {
			t.Errorf("/var/.updated is still there after the deploy (%v): the catalog would not be rebuilt at boot", err)
		}
		// What that unit does, in the file system the boot assembles: the
		// deployment's /usr, and the stateroot's /var mounted on /var.
		booted := t.TempDir()
		for _, m := range [][2]string{{filepath.Join(dep2, "usr"), "usr"}, {stateVar, "var"}} {
			mkdirAll(t, filepath.Join(booted, m[1]), 0o755)
			run(t, "", "mount", "--bind", m[0], filepath.Join(booted, m[1]))
			dst := filepath.Join(booted, m[1])
			t.Cleanup(func() {
				if out, err := exec.Command("umount", dst).CombinedOutput(); err != nil {
					t.Errorf("umount %s: %v\n%s", dst, err, out)
				}
			})
		}
		run(t, "", "journalctl", "--root="+booted, "--update-catalog")
		cat := run(t, "", "journalctl", "--root="+booted, "--list-catalog", harness.DriftDetectedIDs["file"])
		if !strings.Contains(cat, "Configuration drift") {
			t.Errorf("the deployment's catalog does not explain %s: %q", harness.DriftDetectedIDs["file"], cat)
		}
	})
	if t.Failed() {
		return
	}

	// An administrator who disabled the unit keeps it disabled, although
	// every deployment's %post applies the preset again in its pristine
	// /etc: ostree's merge carries the removal of the link over.
	t.Run("disabled stays disabled", func(t *testing.T) {
		if err := os.Remove(filepath.Join(dep2, presetLink)); err != nil {
			t.Fatal(err)
		}
		dep3 := deploy(t, r2.RPM)
		if dep3 == dep2 {
			t.Fatalf("the third deployment is the second's, %s", dep2)
		}
		if target, err := os.Readlink(filepath.Join(dep3, presetLink)); !os.IsNotExist(err) {
			t.Errorf("/%s is back after the upgrade (-> %q, %v): the admin's systemctl disable was undone", presetLink, target, err)
		}
		kept(t, dep3, adminConfig)
	})
}

// isUnitPath tells whether target is the package's unit file: Fedora's
// systemctl links /usr/lib/systemd/system, Debian 12's /lib/systemd/system
// (its systemd still has a split /usr prefix), the same file on a merged /usr.
func isUnitPath(target string) bool {
	return target == "/usr/lib/systemd/system/drift-monitor.service" || target == "/lib/systemd/system/drift-monitor.service"
}

func mkdirAll(t *testing.T, dir string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(dir, mode); err != nil {
		t.Fatal(err)
	}
}

func writeFile(t *testing.T, path string, mode os.FileMode, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(fmt.Errorf("write %s: %w", path, err))
	}
}
