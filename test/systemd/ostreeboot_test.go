package systemd_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/drift-monitor/drift-monitor/test/harness"
	"github.com/drift-monitor/drift-monitor/test/nspawn"
	"github.com/drift-monitor/drift-monitor/test/ostree"
)

// ostreeImageEtc is the image's /etc in its two versions: what each
// commit holds under usr/etc besides the daemon's config and the
// sentinel. Version 2 changes 10-image (which the test also edits),
// changes unchanged.conf (which the host leaves alone), drops only-v1.conf
// and adds only-v2.conf.
var ostreeImageEtc = []map[string]string{
	{
		"motd.d/10-image": "from the image\n",
		"unchanged.conf":  "one\n",
		"only-v1.conf":    "v1\n",
	},
	{
		"motd.d/10-image": "from the image, version 2\n",
		"unchanged.conf":  "two\n",
		"only-v2.conf":    "v2\n",
	},
}

// TestImageOnOstreeDeployment boots a real ostree deployment: an image
// committed with the real ostree from the host's own packages (systemd,
// dbus, ostree) and the daemon as the package installs it (binary, units,
// preset), deployed with `ostree admin deploy`, and booted by
// systemd-nspawn as ostree-prepare-root leaves a host: the deployment's
// directory as /, the sysroot at /sysroot and /boot, the stateroot's /var,
// and /run/ostree-booted. libostree inside finds the deployment it booted
// by the root's device and inode (ostree-sysroot.c), as drift-monitor
// finds its /usr/etc.
//
// On the first boot the presets enable the daemon and
// drift-monitor-adopt-image.service records what the boot itself wrote
// into /etc; then an edit of an image file is an undeclared notice within
// the tier's record timeout, beside a declared drift made by the same
// command. The image's next version is deployed from inside with `ostree
// admin deploy` (its 3-way /etc merge) and the host reboots into it: the
// daemon says nothing while the deploy runs, and after the reboot reports
// the edit the merge kept — and nothing the merge carried (the first
// boot's files, the image's new defaults, the file it dropped, the one it
// added) —, as `ostree admin config-diff` and `check --image` of the new
// deployment list it.
func TestImageOnOstreeDeployment(t *testing.T) {
	t.Parallel()
	nspawn.Require(t)
	bin := harness.Binary(t) // built once for the whole tier: not this test's cost
	began := time.Now()
	m := newOstreeMachine(t, bin)
	built := time.Now()
	h := m.h
	version := func(n int) string { return m.version(n, sentinelConfig) }
	c1 := version(1)
	d1 := h.Deploy("testos/x86_64")
	deployed := time.Now()
	t.Logf("the image: tree of the host's packages committed in %v, its /etc layered and deployed in %v",
		built.Sub(began).Round(time.Millisecond), deployed.Sub(built).Round(time.Millisecond))
	boot := m.boot

	b := boot(d1)
	b.dumpOnFailure()
	if st := b.MustRun(t, "ostree", "admin", "status"); !strings.Contains(st, "* "+h.OS+" "+c1+".0") {
		t.Fatalf("libostree does not see %s.0 as the booted deployment:\n%s", c1, st)
	}
	if got := strings.TrimSpace(b.MustRun(t, "systemctl", "show", "-p", "ConditionResult", "--value", "drift-monitor-adopt-image.service")); got != "yes" {
		t.Errorf("drift-monitor-adopt-image.service did not run on the first boot (ConditionResult=%s)", got)
	}
	b.waitRecord(0, harness.MsgImage, map[string]string{"MESSAGE": "Comparing /etc with the booted deployment's /usr/etc"})
	b.waitStatus("No drift: watching 1 path, 0 units")

	from := b.mark()
	out := b.sh("date +%s%6N; echo edited >>/etc/motd.d/10-image; chmod 0600 " + sentinel)
	changed, err := strconv.ParseInt(strings.TrimSpace(out), 10, 64)
	if err != nil {
		t.Fatalf("date: %q", out)
	}
	undeclared, _ := b.waitRecord(from, harness.MsgUndeclared, map[string]string{"DRIFT_PATH": "/etc/motd.d/10-image", "DRIFT_KIND": "undeclared", "DRIFT_UNDECLARED": "content"})
	declared, _ := b.waitRecord(from, harness.DriftDetected, map[string]string{"DRIFT_PATH": sentinel, "DRIFT_KIND": "mode"})
	delay := func(r harness.Record) time.Duration {
		us, err := strconv.ParseInt(r["__REALTIME_TIMESTAMP"], 10, 64)
		if err != nil {
			t.Fatalf("record without a time: %v", r)
		}
		return time.Duration(us-changed) * time.Microsecond
	}
	t.Logf("on the deployment, after the change: the undeclared notice in %v, the declared drift in %v", delay(undeclared), delay(declared))
	b.MustRun(t, "chmod", "0644", sentinel)
	edited := "No drift: watching 1 path, 0 units; 1 undeclared change to the image's /etc"
	b.waitStatus(edited)

	// The image's next version, deployed from the booted host: libostree
	// merges the booted deployment's /etc into the new one.
	c2 := version(2)
	from = b.mark()
	b.MustRun(t, "env", "OSTREE_SYSROOT_DEBUG=mutable-deployments", "ostree", "admin", "deploy", "--os="+h.OS, "testos/x86_64")
	if st := b.MustRun(t, "ostree", "admin", "status"); !strings.Contains(st, "  "+h.OS+" "+c2+".") || !strings.Contains(st, "* "+h.OS+" "+c1+".0") {
		t.Fatalf("after the deploy, ostree admin status lacks the new deployment of %s or the booted one:\n%s", c2, st)
	}
	b.quietSince(from)
	b.waitStatus(edited)

	// The reboot into it.
	_, _, _ = b.Run(b.ctx, "systemctl", "reboot")
	b.WaitRebooted(t, time.Minute)
	d2 := m.deploymentOf(c2)
	b = boot(d2)
	b.dumpOnFailure()
	if st := b.MustRun(t, "ostree", "admin", "status"); !strings.Contains(st, "* "+h.OS+" "+d2) {
		t.Fatalf("libostree does not see %s as the booted deployment:\n%s", d2, st)
	}
	// What the merge did, as ostree-sysroot-deploy.c's merge_configuration_from
	// does it: the local edit kept, the untouched file's new default, the
	// dropped file gone, the added one there.
	for p, want := range map[string]string{"motd.d/10-image": "from the image\nedited\n", "unchanged.conf": "two\n", "only-v2.conf": "v2\n"} {
		if got := b.MustRun(t, "cat", "/etc/"+p); got != want {
			t.Errorf("after the merge /etc/%s holds %q, want %q", p, got, want)
		}
	}
	if _, _, err := b.Run(b.ctx, "test", "!", "-e", "/etc/only-v1.conf"); err != nil {
		t.Errorf("after the merge /etc/only-v1.conf is still there")
	}
	b.waitRecord(0, harness.MsgUndeclared, map[string]string{"DRIFT_PATH": "/etc/motd.d/10-image", "DRIFT_UNDECLARED": "content"})
	b.waitStatus(edited)
	b.quietSince(0, "/etc/motd.d/10-image")

	// The same, by the tools: config-diff lists what the new deployment's
	// /etc differs in; check --image classes each, and only the edit is
	// undeclared.
	var diff []string
	for _, l := range strings.Split(b.MustRun(t, "ostree", "admin", "config-diff"), "\n") {
		if f := strings.Fields(l); len(f) == 2 {
			diff = append(diff, "/etc/"+f[1])
		}
	}
	var res struct {
		Image struct {
			Differences []struct{ Path, Change, Class string } `json:"differences"`
		} `json:"image"`
	}
	js, _, _ := b.Run(b.ctx, "drift-monitor", "check", "--image", "--format", "json")
	if err := json.Unmarshal([]byte(js), &res); err != nil {
		t.Fatalf("check --image --format json: %v\n%s", err, js)
	}
	var listed, undeclaredPaths []string
	for _, d := range res.Image.Differences {
		listed = append(listed, d.Path)
		if d.Class == "undeclared" {
			undeclaredPaths = append(undeclaredPaths, d.Path)
		}
	}
	slices.Sort(diff)
	slices.Sort(listed)
	t.Logf("the new deployment's /etc differs from its /usr/etc in %d paths (ostree admin config-diff): %v", len(diff), diff)
	if !slices.Equal(diff, listed) {
		t.Errorf("check --image lists %v, ostree admin config-diff %v", listed, diff)
	}
	if !slices.Equal(undeclaredPaths, []string{"/etc/motd.d/10-image"}) {
		t.Errorf("check --image classes %v as undeclared, want the edit alone:\n%s", undeclaredPaths, js)
	}
	t.Logf("the whole test: %v", time.Since(began).Round(time.Millisecond))
}

// sentinelEntry declares the sentinel (sentinelFile) as an Ignition
// storage.files item; sentinelConfig declares it alone.
const (
	sentinelEntry  = `{"path":"` + sentinel + `","mode":420,"overwrite":true,"contents":{"source":"data:,s%0A"}}`
	sentinelConfig = `{"ignition":{"version":"3.4.0"},"storage":{"files":[` + sentinelEntry + `]}}`
)

// ostreeMachine is an OS image committed with the real ostree from the
// host's own packages (ostree.BootPackages) and the daemon as the package
// installs it (binary, units, preset), in a sysroot of its own, which
// systemd-nspawn boots as ostree-prepare-root leaves a host.
type ostreeMachine struct {
	t      *testing.T
	h      *ostree.Host
	booted string // the /run/ostree-booted given to every boot
}

func newOstreeMachine(t *testing.T, bin string) *ostreeMachine {
	h := ostree.NewHost(t)
	image := filepath.Join(t.TempDir(), "image")
	ostree.BootableTree(t, image, ostree.BootPackages...)
	install(t, bin, filepath.Join(image, "usr/bin/drift-monitor"), 0o755)
	for _, u := range []string{service, "drift-monitor-adopt-image.service"} {
		install(t, harness.Repo(t, "units/"+u), filepath.Join(image, "usr/lib/systemd/system", u), 0o644)
	}
	install(t, harness.Repo(t, "packaging/50-drift-monitor.preset"), filepath.Join(image, "usr/lib/systemd/system-preset/50-drift-monitor.preset"), 0o644)
	// The container may not make a deployment immutable (chattr +i needs
	// CAP_LINUX_IMMUTABLE): the deploy at shutdown that a staged
	// deployment waits for runs, as the tests' own deploys do, without it.
	install(t, "", filepath.Join(image, "usr/lib/systemd/system/ostree-finalize-staged.service.d/test.conf"), 0o644,
		"[Service]\nEnvironment=OSTREE_SYSROOT_DEBUG=mutable-deployments\n")
	h.CommitTree("testos/base", image)
	// ostree-prepare-root (2022.7, as Debian ships it) leaves an empty
	// /run/ostree-booted; newer ones an a{sv} that ReadBooted also reads.
	booted := filepath.Join(t.TempDir(), "ostree-booted")
	install(t, "", booted, 0o644, "")
	return &ostreeMachine{t: t, h: h, booted: booted}
}

// version layers the image's /etc of version n (ostreeImageEtc), with the
// daemon's config cfg and the sentinel, on the base, as the next commit
// of testos/x86_64.
func (m *ostreeMachine) version(n int, cfg string) string {
	dir := filepath.Join(m.t.TempDir(), "etc-v"+strconv.Itoa(n))
	files := map[string]string{
		strings.TrimPrefix(configPath, "/etc/"): cfg,
		strings.TrimPrefix(sentinel, "/etc/"):   sentinelFile.content,
	}
	for p, c := range ostreeImageEtc[n-1] {
		files[p] = c
	}
	for p, c := range files {
		install(m.t, "", filepath.Join(dir, "usr/etc", p), 0o644, c)
	}
	return m.h.Layer("testos/x86_64", "testos/base", dir)
}

// boot boots deployment dep: its directory as /, the sysroot at /sysroot
// and /boot, the stateroot's /var, and /run/ostree-booted; it returns
// once the daemon is active.
func (m *ostreeMachine) boot(dep string) *host {
	t, h := m.t, m.h
	c := nspawn.Boot(t, nspawn.Options{
		Directory: filepath.Join(h.DeployDir(), dep),
		Bind: []nspawn.Mount{
			{Src: h.Root, Dst: "/sysroot"},
			{Src: filepath.Join(h.Root, "boot"), Dst: "/boot"},
			{Src: filepath.Join(h.Root, "ostree/deploy", h.OS, "var"), Dst: "/var"},
		},
		BindRO: []nspawn.Mount{{Src: m.booted, Dst: "/run/ostree-booted"}},
	})
	b := newHost(t, c)
	b.WaitFor(t, recordTimeout, service+" active", func() (bool, string) {
		st := b.prop("ActiveState")
		return st == "active", st
	})
	b.inv = b.prop("InvocationID")
	return b
}

// deploymentOf is the deployment of commit c in the sysroot.
func (m *ostreeMachine) deploymentOf(c string) string {
	for _, d := range m.h.Deployments() {
		if strings.HasPrefix(d, c+".") {
			return d
		}
	}
	m.t.Fatalf("no deployment of %s in %v", c, m.h.Deployments())
	return ""
}

// quietSince proves that the daemon said nothing of the image since the
// record from, but of the paths allowed: it drifts the sentinel, waits for
// that record, and finds no undeclared notice, end of one, or drift
// record before it; then restores the sentinel.
func (h *host) quietSince(from int, allowed ...string) {
	h.t.Helper()
	h.MustRun(h.t, "chmod", "0600", sentinel)
	_, at := h.waitRecord(from, harness.DriftDetected, map[string]string{"DRIFT_PATH": sentinel, "DRIFT_KIND": "mode"})
	for _, id := range []string{harness.MsgUndeclared, harness.MsgUndeclaredGone, harness.DriftDetected} {
		for _, r := range h.between(from, at, id, nil) {
			if !slices.Contains(allowed, r["DRIFT_PATH"]) {
				h.t.Errorf("said through the deploy and reboot: %s", r["MESSAGE"])
			}
		}
	}
	m := h.mark()
	h.MustRun(h.t, "chmod", "0644", sentinel)
	h.waitRecord(m, harness.MsgDriftResolved, map[string]string{"DRIFT_PATH": sentinel, "DRIFT_KIND": "mode"})
}

// install writes a file of the image with its mode: src's content, or
// content when src is "".
func install(t *testing.T, src, dst string, mode os.FileMode, content ...string) {
	t.Helper()
	var b []byte
	if src != "" {
		var err error
		if b, err = os.ReadFile(src); err != nil {
			t.Fatal(err)
		}
	} else {
		b = []byte(strings.Join(content, ""))
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		t.Fatal(err)
	}
	// Anew, not in place: the image's file may be a hard link to the host's.
	if err := os.Remove(dst); err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dst, mode); err != nil {
		t.Fatal(err)
	}
}
