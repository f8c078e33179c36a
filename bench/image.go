package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/drift-monitor/drift-monitor/internal/journal"
)

// Part 6: the OS image as desired state, against its targets. A full
// comparison of a deployed /etc of imageEntries entries against `ostree
// admin config-diff` on the same tree; of a root with rpmPackages packages
// against `rpm -Va` (all of it: rpm cannot verify a path prefix alone),
// whose /etc lines are what drift-monitor reports; the daemon's resident
// memory with the image's comparison on and off; and the detection delay
// of a declared edit with it on and off, beside an undeclared edit's.

// imageResult is part 6's figures.
type imageResult struct {
	Entries    int
	ConfigDiff []time.Duration
	Check      []time.Duration
	Packages   int
	RPMFiles   int
	// RPM are the timed runs of the rpm comparison, by key: "rpm -Va",
	// "check", and "check, before" with -before.
	RPM samples
	// RSSOff and RSSOn are the daemon's VmRSS after its first check, with
	// --image=off and --image=notice, on the deployed tree.
	RSSOff, RSSOn int64
	// DeclaredOff and DeclaredOn are the delays of a declared edit's drift
	// record; Undeclared those of an undeclared edit's notice.
	DeclaredOff, DeclaredOn, Undeclared []time.Duration
}

// imageSizes: the sizes (a real node's /etc has about 1,700
// entries, 15 MB), smaller in quick mode.
func (b *bench) imageSizes() (entries, packages, edits int) {
	if b.quick {
		return 2000, 200, 30
	}
	return 2000, 1000, 200
}

func (b *bench) part6(ctx context.Context, rep *report, fx *fixtures) error {
	for _, tool := range []string{"ostree", "rpm", "rpmbuild"} {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Errorf("part 6 needs %s: %w", tool, err)
		}
	}
	entries, packages, edits := b.imageSizes()
	res := &imageResult{Entries: entries, Packages: packages}
	dir := filepath.Join(fx.work, "image")
	os.RemoveAll(dir)
	dep, sysroot, err := b.ostreeFixture(dir, entries)
	if err != nil {
		return err
	}
	b.logf("part 6: %d-entry /etc deployed", entries)
	for i := -1; i < b.runs; i++ {
		cd, err := timeCmd(ctx, []int{0}, "ostree", "admin", "config-diff", "--sysroot="+sysroot, "--os=testos")
		if err != nil {
			return err
		}
		ck, err := timeCmd(ctx, []int{0, 1}, b.bin, "check", "--root", dep, "--image", "--no-cache")
		if err != nil {
			return err
		}
		if i >= 0 { // the first round warms the page cache
			res.ConfigDiff, res.Check = append(res.ConfigDiff, cd.Wall), append(res.Check, ck.Wall)
		}
	}
	if err := b.imageDaemon(ctx, res, dep, edits); err != nil {
		return err
	}
	root, files, err := b.rpmFixture(ctx, dir, packages)
	if err != nil {
		return err
	}
	res.RPMFiles = files
	b.logf("part 6: %d packages installed", packages)
	cmds := [][]string{
		{rpmVa, "rpm", "--root", root, "--dbpath", "/var/lib/rpm", "-Va", "--nomtime"},
		{rpmCheck, b.bin, "check", "--root", root, "--image", "--no-cache"},
	}
	if b.before != "" {
		cmds = append(cmds, []string{rpmCheckBefore, b.before, "check", "--root", root, "--image", "--no-cache"})
	}
	// A round is short: three times part 1's rounds settle the medians on
	// a shared machine at little cost. Each round starts with the next
	// command, so none always runs first after the previous round.
	res.RPM = samples{}
	for i := -1; i < 3*b.runs; i++ {
		for k := range cmds {
			c := cmds[(k+max(i, 0))%len(cmds)]
			r, err := timeCmd(ctx, []int{0, 1}, c[1], c[2:]...)
			if err != nil {
				return err
			}
			if i >= 0 { // the first round warms the page cache
				res.RPM[c[0]] = append(res.RPM[c[0]], r)
			}
		}
	}
	rep.Image = res
	return nil
}

// The rpm comparison's commands, by key.
const (
	rpmVa          = "rpm -Va"
	rpmCheck       = "check"
	rpmCheckBefore = "check, before"
)

// run runs a command, its output in the error.
func runQuiet(name string, args ...string) error {
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), "OSTREE_SYSROOT_DEBUG=mutable-deployments")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return nil
}

// ostreeFixture deploys, with the real ostree, a tree whose /etc has n
// entries (a tenth directories, some links, files of a few kilobytes like
// a node's), then changes some of it; it returns the deployment (with
// /run/ostree-booted) and the sysroot.
func (b *bench) ostreeFixture(dir string, n int) (dep, sysroot string, err error) {
	rng := rand.New(rand.NewPCG(39, 7))
	sysroot, tree := filepath.Join(dir, "sysroot"), filepath.Join(dir, "tree")
	etc := filepath.Join(tree, "usr/etc")
	if err := os.MkdirAll(etc, 0o755); err != nil {
		return "", "", err
	}
	dirs := []string{etc}
	for i := 0; i < n; i++ {
		parent := dirs[rng.IntN(len(dirs))]
		p := filepath.Join(parent, fmt.Sprintf("e%d", i))
		switch k := rng.IntN(20); {
		case k < 2:
			err = os.MkdirAll(p, 0o755)
			dirs = append(dirs, p)
		case k < 3:
			err = os.Symlink(fmt.Sprintf("target-%d", i), p)
		default:
			size := 512 + rng.IntN(14<<10)
			buf := make([]byte, size)
			for j := range buf {
				buf[j] = byte('a' + rng.IntN(26))
			}
			err = os.WriteFile(p, buf, 0o644)
		}
		if err != nil {
			return "", "", err
		}
	}
	for p, c := range map[string]string{"usr/lib/modules/6.1.0/vmlinuz": "k", "usr/lib/modules/6.1.0/initramfs.img": "i", "usr/lib/os-release": "ID=testos\n"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(tree, p)), 0o755); err != nil {
			return "", "", err
		}
		if err := os.WriteFile(filepath.Join(tree, p), []byte(c), 0o644); err != nil {
			return "", "", err
		}
	}
	if err := os.MkdirAll(sysroot, 0o755); err != nil {
		return "", "", err
	}
	for _, args := range [][]string{
		{"admin", "init-fs", sysroot},
		{"admin", "os-init", "--sysroot=" + sysroot, "testos"},
		{"--repo=" + filepath.Join(sysroot, "ostree/repo"), "commit", "--branch=testos/x86_64", "--tree=dir=" + tree, "-s", "bench"},
		{"admin", "deploy", "--sysroot=" + sysroot, "--os=testos", "testos/x86_64"},
	} {
		if err := runQuiet("ostree", args...); err != nil {
			return "", "", err
		}
	}
	deps, _ := filepath.Glob(filepath.Join(sysroot, "ostree/deploy/testos/deploy/*.0"))
	if len(deps) != 1 {
		return "", "", fmt.Errorf("the deployment in %s: %v", sysroot, deps)
	}
	dep = deps[0]
	if err := os.MkdirAll(filepath.Join(dep, "run"), 0o755); err != nil {
		return "", "", err
	}
	if err := os.WriteFile(filepath.Join(dep, "run/ostree-booted"), nil, 0o644); err != nil {
		return "", "", err
	}
	// A node's first days: a few dozen local changes.
	var files []string
	filepath.Walk(filepath.Join(dep, "etc"), func(p string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() {
			files = append(files, p)
		}
		return nil
	})
	for i := 0; i < 40 && len(files) > 0; i++ {
		f := files[rng.IntN(len(files))]
		if err := os.WriteFile(f, []byte(fmt.Sprintf("changed %d\n", i)), 0o644); err != nil {
			return "", "", err
		}
	}
	return dep, sysroot, nil
}

// rpmFixture builds one spec of n packages (each two files under /etc and
// thirty of 8 KB under /usr/share: a small package) and installs them with rpm
// --root; it returns the root and how many files rpm -Va verifies.
func (b *bench) rpmFixture(ctx context.Context, dir string, n int) (string, int, error) {
	top, root := filepath.Join(dir, "rpmbuild"), filepath.Join(dir, "rpmroot")
	var spec strings.Builder
	// Nothing rpmbuild would spend minutes on for a thousand packages:
	// no dependency generation, no post-install processing, an
	// uncompressed payload.
	spec.WriteString("%global __os_install_post %{nil}\n%global _binary_payload w.ufdio\n%global debug_package %{nil}\n")
	spec.WriteString("Name: imgbench\nVersion: 1\nRelease: 1\nSummary: bench\nLicense: MIT\nBuildArch: noarch\nAutoReqProv: no\n%description\nbench\n")
	spec.WriteString("%install\nfor i in $(seq 0 " + fmt.Sprint(n-1) + "); do\n" +
		"  mkdir -p %{buildroot}/etc/pkg$i %{buildroot}/usr/share/pkg$i\n" +
		"  head -c 2048 /dev/urandom | base64 >%{buildroot}/etc/pkg$i/pkg.conf\n" +
		"  head -c 512 /dev/urandom | base64 >%{buildroot}/etc/pkg$i/defaults\n" +
		"  for j in $(seq 1 30); do head -c 6144 /dev/urandom | base64 >%{buildroot}/usr/share/pkg$i/data$j; done\n" +
		"done\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&spec, "%%package -n pkg%d\nSummary: bench %d\nAutoReqProv: no\n%%description -n pkg%d\nbench\n%%files -n pkg%d\n%%config(noreplace) /etc/pkg%d/pkg.conf\n/etc/pkg%d/defaults\n/usr/share/pkg%d\n",
			i, i, i, i, i, i, i)
	}
	specFile := filepath.Join(dir, "imgbench.spec")
	if err := os.MkdirAll(root, 0o755); err != nil {
		return "", 0, err
	}
	if err := os.WriteFile(specFile, []byte(spec.String()), 0o644); err != nil {
		return "", 0, err
	}
	if err := runQuiet("rpmbuild", "-bb", "--quiet", "--define", "_topdir "+top, specFile); err != nil {
		return "", 0, err
	}
	rpms, _ := filepath.Glob(filepath.Join(top, "RPMS/noarch/pkg*.rpm"))
	if err := runQuiet("rpm", "--root", root, "--dbpath", "/var/lib/rpm", "--initdb"); err != nil {
		return "", 0, err
	}
	if err := runQuiet("rpm", append([]string{"--root", root, "--dbpath", "/var/lib/rpm", "-i", "--nodeps", "--noscripts"}, rpms...)...); err != nil {
		return "", 0, err
	}
	// Some local changes under /etc, as on any host.
	for i := 0; i < n; i += 50 {
		if err := os.WriteFile(filepath.Join(root, fmt.Sprintf("etc/pkg%d/pkg.conf", i)), []byte("edited\n"), 0o644); err != nil {
			return "", 0, err
		}
	}
	return root, n * 32, nil
}

// imageDaemon measures the daemon on the deployed tree: its memory after
// the first check with the image's comparison off and on, and detection
// delays (a declared file's edit both ways, an undeclared edit with it
// on).
func (b *bench) imageDaemon(ctx context.Context, res *imageResult, dep string, edits int) error {
	declared := "/etc/bench-declared.conf"
	cfg := filepath.Join(filepath.Dir(dep), "bench-image.ign")
	if err := os.WriteFile(cfg, []byte(`{"ignition":{"version":"3.4.0"},"storage":{"files":[{"path":"`+declared+`","mode":420,"overwrite":true,"contents":{"source":"data:,declared%0A"}}]}}`), 0o600); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dep, declared), []byte("declared\n"), 0o644); err != nil {
		return err
	}
	// Files as the image has them, each edited once, then put back.
	var undeclared []string
	filepath.Walk(filepath.Join(dep, "etc"), func(p string, fi os.FileInfo, err error) error {
		if err != nil || !fi.Mode().IsRegular() || len(undeclared) >= edits || strings.HasSuffix(p, "bench-declared.conf") {
			return nil
		}
		live, err1 := os.ReadFile(p)
		image, err2 := os.ReadFile(filepath.Join(dep, "usr", strings.TrimPrefix(p, dep)))
		if err1 == nil && err2 == nil && string(live) == string(image) {
			undeclared = append(undeclared, p)
		}
		return nil
	})
	for _, mode := range []string{"off", "notice"} {
		cache, err := os.MkdirTemp(filepath.Dir(dep), "cache-")
		if err != nil {
			return err
		}
		m, err := startMonitor(ctx, 2*time.Minute, "env", "CACHE_DIRECTORY="+cache, b.bin, "daemon", "--root", dep, "--config", cfg, "--interval", "0", "--image="+mode)
		if err != nil {
			return err
		}
		if err := quiet(ctx, 2*time.Second); err != nil {
			m.stop()
			return err
		}
		rss := memOf(m.pid(), "VmRSS")
		host := filepath.Join(dep, declared)
		for k := 0; k < edits; k++ {
			m.drain()
			t0 := time.Now()
			if err := os.WriteFile(host, []byte(fmt.Sprintf("edit %d\n", k)), 0o644); err != nil {
				m.stop()
				return err
			}
			at, err := m.waitRecord(msgDrift, declared, time.Minute)
			if err != nil {
				m.stop()
				return err
			}
			if mode == "off" {
				res.DeclaredOff = append(res.DeclaredOff, at.Sub(t0))
			} else {
				res.DeclaredOn = append(res.DeclaredOn, at.Sub(t0))
			}
			if err := os.WriteFile(host, []byte("declared\n"), 0o644); err != nil {
				m.stop()
				return err
			}
			if _, err := m.waitRecord(msgResolved, declared, time.Minute); err != nil {
				m.stop()
				return err
			}
			if mode == "notice" && k < len(undeclared) {
				p := undeclared[k]
				t0 := time.Now()
				if err := os.WriteFile(p, []byte(fmt.Sprintf("undeclared edit %d\n", k)), 0o644); err != nil {
					m.stop()
					return err
				}
				at, err := m.waitRecord(journal.RecordOf(journal.MsgUndeclared), strings.TrimPrefix(p, dep), time.Minute)
				if err != nil {
					m.stop()
					return err
				}
				res.Undeclared = append(res.Undeclared, at.Sub(t0))
				image, err := os.ReadFile(filepath.Join(dep, "usr", strings.TrimPrefix(p, dep)))
				if err == nil {
					err = os.WriteFile(p, image, 0o644)
				}
				if err == nil {
					_, err = m.waitRecord(journal.RecordOf(journal.MsgUndeclaredGone), strings.TrimPrefix(p, dep), time.Minute)
				}
				if err != nil {
					m.stop()
					return err
				}
			}
		}
		m.stop()
		os.RemoveAll(cache)
		if mode == "off" {
			res.RSSOff = rss
		} else {
			res.RSSOn = rss
		}
		b.logf("part 6: daemon with --image=%s: VmRSS %s, %d edits", mode, fmtMB(rss), edits)
	}
	return nil
}

// imageVerdicts are the targets of the image as desired state.
func (r *report) imageVerdicts() []verdict {
	i := r.Image
	if i == nil {
		return nil
	}
	ck, cd := median(i.Check), median(i.ConfigDiff)
	rc, va := i.RPM.medWall(rpmCheck), i.RPM.medWall(rpmVa)
	grow := i.RSSOn - i.RSSOff
	offP, onP := percentile(i.DeclaredOff, 99), percentile(i.DeclaredOn, 99)
	return []verdict{
		{Target: fmt.Sprintf("full comparison of a %d-entry /etc ≤ 0.5× ostree admin config-diff", i.Entries),
			Measured: fmt.Sprintf("%s vs %s: %s", fmtDur(ck), fmtDur(cd), ratio(ck, cd)), Met: float64(ck) <= 0.5*float64(cd)},
		{Target: fmt.Sprintf("full comparison of /etc on a root of %d packages ≤ 0.2× rpm -Va", i.Packages),
			Measured: fmt.Sprintf("%s vs %s: %s (CPU, rpm's query included: %s vs %s, %s)", fmtDur(rc), fmtDur(va), ratio(rc, va),
				fmtDur(i.RPM.medCPU(rpmCheck)), fmtDur(i.RPM.medCPU(rpmVa)), ratio(i.RPM.medCPU(rpmCheck), i.RPM.medCPU(rpmVa))),
			Met: float64(rc) <= 0.2*float64(va)},
		{Target: fmt.Sprintf("the daemon's VmRSS grows ≤ 8 MB with a %d-entry /etc compared", i.Entries),
			Measured: fmt.Sprintf("%s (--image=off) → %s (--image=notice): %+.1f MB", fmtMB(i.RSSOff), fmtMB(i.RSSOn), float64(grow)/1e6), Met: grow <= 8e6},
		{Target: "declared drift's detection p99 unchanged with the image compared (within 1.5× and 5 ms: a shared machine's noise)",
			Measured: fmt.Sprintf("p99 %s (--image=off) vs %s (--image=notice); an undeclared edit's p99 %s", fmtDur(offP), fmtDur(onP), fmtDur(percentile(i.Undeclared, 99))),
			Met:      float64(onP) <= 1.5*float64(offP)+float64(5*time.Millisecond)},
	}
}

// mdImage is part 6's method and figures.
func (r *report) mdImage(p printf) {
	i := r.Image
	p("## 6. The OS image's /etc\n\n")
	p("A tree of %d /etc entries (a tenth directories, some links, files of 0.5 to 14 KB) committed and deployed with the real `ostree`, then 40 files changed; ", i.Entries)
	p("`ostree admin config-diff --sysroot=$WORK/image/sysroot --os=testos` against `drift-monitor check --root DEPLOYMENT --image --no-cache` (every difference listed and classed), alternated, %d rounds after a warm-up, medians. ", len(i.Check))
	p("Then %d packages of one spec (each two files under /etc and thirty of 8 KB under /usr/share: small packages, a distribution's average many more), installed with `rpm --root`, 1 in 50 of their configs edited: `rpm --root $WORK/image/rpmroot --dbpath /var/lib/rpm -Va --nomtime` (rpm verifies every file: it has no way to verify a path prefix) against `drift-monitor check --root $WORK/image/rpmroot --image --no-cache`, which reads the headers with one `rpm -qa --qf` and verifies the /etc files as it reads them: alternated, each round starting with the next command, %d rounds after a warm-up, medians; CPU is user and system time, the rpm query's included.\n\n", i.Packages, len(i.RPM[rpmVa]))
	p("| comparison | drift-monitor | the tool | ratio | CPU, drift-monitor | CPU, the tool | CPU ratio |\n| --- | --- | --- | --- | --- | --- | --- |\n")
	p("| ostree, %d entries | %s | %s | %s | | | |\n", i.Entries, fmtDur(median(i.Check)), fmtDur(median(i.ConfigDiff)), ratio(median(i.Check), median(i.ConfigDiff)))
	rpmRow := func(label, k string) {
		p("| %s | %s | %s | %s | %s | %s | %s |\n", label, fmtDur(i.RPM.medWall(k)), fmtDur(i.RPM.medWall(rpmVa)), ratio(i.RPM.medWall(k), i.RPM.medWall(rpmVa)),
			fmtDur(i.RPM.medCPU(k)), fmtDur(i.RPM.medCPU(rpmVa)), ratio(i.RPM.medCPU(k), i.RPM.medCPU(rpmVa)))
	}
	rpmRow(fmt.Sprintf("rpm, %d packages (%d files)", i.Packages, i.RPMFiles), rpmCheck)
	if _, ok := i.RPM[rpmCheckBefore]; ok {
		rpmRow("the same, `-before`'s build", rpmCheckBefore)
	}
	p("\n")
	p("The daemon on the deployment with one declared file, `--interval 0`: VmRSS 2 s after READY=1, and the delay from the write of the declared file (then its restoration) to the drift record, %d times, with `--image=off` and `--image=notice`; with the latter, as many undeclared edits, each to its notice (MsgUndeclared).\n\n", len(i.DeclaredOn))
	p("| | VmRSS | declared edit median | p99 | undeclared edit median | p99 |\n| --- | --- | --- | --- | --- | --- |\n")
	p("| --image=off | %s | %s | %s | | |\n", fmtMB(i.RSSOff), fmtDur(median(i.DeclaredOff)), fmtDur(percentile(i.DeclaredOff, 99)))
	p("| --image=notice | %s | %s | %s | %s | %s |\n\n", fmtMB(i.RSSOn), fmtDur(median(i.DeclaredOn)), fmtDur(percentile(i.DeclaredOn, 99)),
		fmtDur(median(i.Undeclared)), fmtDur(percentile(i.Undeclared, 99)))
}
