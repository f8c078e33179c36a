package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"syscall"
	"time"
)

// Part 8 measures what checking SELinux labels costs on a labelled host:
// every Fedora CoreOS, RHEL CoreOS and OpenShift node labels every file, and
// a check then compares each declared node's label with its policy's
// default. The same files and config as part 1's fixture, once on a root
// without SELinux and once on a root that holds Debian's policy
// (selinux-policy-default, SELINUX=enforcing) with every node labelled by
// the real `setfiles -F`, as Ignition has setfiles label what it writes.

// labelPolicy is the policy part 8 installs in its labelled roots: Debian's
// selinux-policy-default, whose type is the directory's name.
const labelPolicy = "/etc/selinux/default"

// labelResult is part 8 for one number of files.
type labelResult struct {
	Files   int
	Runs    int
	Order   []string // the contenders timed as processes, then the daemons' passes
	Cont    map[string]contender
	Samples samples
	// Passes are the daemon's full passes, plain and labelled, as it timed
	// them itself (its debug record of each), and PassCPU the process's
	// CPU time during each: what a loaded machine does not move.
	Passes  map[string][]time.Duration
	PassCPU map[string][]time.Duration
	PassCmd map[string]string
}

// The keys of part 8's contenders.
const (
	keyCheck         = "check"
	keyCheckLabelled = "check-labelled"
	keyFloor         = "floor"
	keyFloorLabelled = "floor-labelled"
	keyPass          = "pass"
	keyPassLabelled  = "pass-labelled"
	// The cached check of another build (-before), on each root.
	keyCheckBefore         = "check-before"
	keyCheckLabelledBefore = "check-labelled-before"
)

func (r *labelResult) medPass(k string) time.Duration    { return median(r.Passes[k]) }
func (r *labelResult) medPassCPU(k string) time.Duration { return median(r.PassCPU[k]) }

// makeLabelledFixture writes (or reuses) the n-file fixture of part 1 under
// dir, on a labelled root: labelPolicy copied into it, named by its
// /etc/selinux/config (SELINUX=enforcing), and every node labelled by
// `setfiles -F -r ROOT`, as Ignition relabels what it writes
// (internal/exec/util/selinux.go).
func makeLabelledFixture(dir string, n int) (*fixture, error) {
	f, err := makeFixture(dir, n)
	if err != nil {
		return nil, err
	}
	fc := filepath.Join(labelPolicy, "contexts/files/file_contexts")
	st, err := os.Stat(fc)
	if err != nil {
		return nil, fmt.Errorf("part 8 needs Debian's SELinux policy (apt-get install selinux-policy-default): %w", err)
	}
	if _, err := exec.LookPath("setfiles"); err != nil {
		return nil, fmt.Errorf("part 8 needs setfiles (apt-get install policycoreutils): %w", err)
	}
	// A policy updated since the fixture was labelled labels it anew.
	stamp := filepath.Join(dir, "labelled")
	want := fmt.Sprintf("labelled v1 policy %d %d\n", st.Size(), st.ModTime().UnixNano())
	if b, err := os.ReadFile(stamp); err == nil && string(b) == want {
		return f, nil
	}
	selinuxDir := filepath.Join(f.Root, "etc/selinux")
	if err := os.RemoveAll(selinuxDir); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(selinuxDir, 0o755); err != nil {
		return nil, err
	}
	if out, err := exec.Command("cp", "-a", labelPolicy, selinuxDir+"/").CombinedOutput(); err != nil {
		return nil, fmt.Errorf("copying %s: %v\n%s", labelPolicy, err, out)
	}
	config := "SELINUX=enforcing\nSELINUXTYPE=" + filepath.Base(labelPolicy) + "\n"
	if err := os.WriteFile(filepath.Join(selinuxDir, "config"), []byte(config), 0o644); err != nil {
		return nil, err
	}
	rootFC := filepath.Join(f.Root, fc)
	if out, err := exec.Command("setfiles", "-F", "-r", f.Root, rootFC, f.Root).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("setfiles -F -r %s %s %s: %v\n%s", f.Root, rootFC, f.Root, err, out)
	}
	return f, os.WriteFile(stamp, []byte(want), 0o644)
}

// part8 times the cached check, the check's floor and the daemon's full pass
// on plain and labelled roots of the same files, side by side.
func (b *bench) part8(ctx context.Context, rep *report, fx *fixtures) error {
	for _, n := range b.labelN {
		plain, err := fx.get(n)
		if err != nil {
			return err
		}
		b.logf("fixture: %d files, labelled", n)
		labelled, err := makeLabelledFixture(filepath.Join(fx.work, fmt.Sprintf("n%d-labelled", n)), n)
		if err != nil {
			return fmt.Errorf("labelled fixture of %d files: %w", n, err)
		}
		r, err := b.labelRounds(ctx, plain, labelled)
		if err != nil {
			return err
		}
		rep.Labels = append(rep.Labels, r)
	}
	rep.Load = append(rep.Load, loadMark("after part 8"))
	return nil
}

// labelRounds runs every contender once untimed, then b.runs rounds of them
// all, every other round in the reverse order.
func (b *bench) labelRounds(ctx context.Context, plain, labelled *fixture) (*labelResult, error) {
	n := len(plain.Paths)
	par := strconv.Itoa(2 * runtime.NumCPU())
	res := &labelResult{Files: n, Runs: b.runs, Cont: map[string]contender{}, Samples: samples{},
		Passes: map[string][]time.Duration{}, PassCPU: map[string][]time.Duration{}, PassCmd: map[string]string{}}
	add := func(key string, cmd ...string) {
		res.Order = append(res.Order, key)
		res.Cont[key] = contender{Key: key, Cmd: cmd, Desc: shellQuote(cmd), OK: []int{0}}
	}
	// `check` as root runs it, as in part 1: the state cache filled by the
	// untimed first run; a cache directory for each root, as two states
	// of 100,000 files do not fit in one (DefaultBytes) and would trim each
	// other out at every run. The floors walk the declared files only (the
	// labelled root holds the policy too).
	add(keyCheck, "env", "CACHE_DIRECTORY="+filepath.Join(plain.Dir, "check-cache"), b.bin, "check", "--root", plain.Root, "--config", plain.Cfg)
	add(keyCheckLabelled, "env", "CACHE_DIRECTORY="+filepath.Join(labelled.Dir, "check-cache"), b.bin, "check", "--root", labelled.Root, "--config", labelled.Cfg)
	if b.before != "" {
		// Its own cache directories: its entries are named by its
		// executable, and would trim this build's out.
		add(keyCheckBefore, "env", "CACHE_DIRECTORY="+filepath.Join(plain.Dir, "check-cache-before"), b.before, "check", "--root", plain.Root, "--config", plain.Cfg)
		add(keyCheckLabelledBefore, "env", "CACHE_DIRECTORY="+filepath.Join(labelled.Dir, "check-cache-before"), b.before, "check", "--root", labelled.Root, "--config", labelled.Cfg)
	}
	add(keyFloor, b.self, "read", "-meta", "-j", par, filepath.Join(plain.Root, "etc/bench"))
	add(keyFloorLabelled, b.self, "read", "-meta", "-j", par, filepath.Join(labelled.Root, "etc/bench"))
	daemons := map[string]*monitor{}
	defer func() {
		for _, m := range daemons {
			m.stop()
		}
	}()
	for _, d := range []struct {
		key string
		f   *fixture
	}{{keyPass, plain}, {keyPassLabelled, labelled}} {
		b.logf("part 8 %d files: starting the daemon on the %s root", n, map[string]string{keyPass: "plain", keyPassLabelled: "labelled"}[d.key])
		m, argv, err := b.passDaemon(ctx, d.f)
		if err != nil {
			return nil, err
		}
		daemons[d.key] = m
		res.Order = append(res.Order, d.key)
		res.PassCmd[d.key] = shellQuote(argv) + " (then SIGHUP)"
	}
	one := func(k string) error {
		if m, ok := daemons[k]; ok {
			d, cpu, err := m.pass(10 * time.Minute)
			res.Passes[k] = append(res.Passes[k], d)
			res.PassCPU[k] = append(res.PassCPU[k], cpu)
			return err
		}
		c := res.Cont[k]
		r, err := timeCmd(ctx, c.OK, c.Cmd[0], c.Cmd[1:]...)
		res.Samples[k] = append(res.Samples[k], r)
		return err
	}
	for _, k := range res.Order {
		if err := one(k); err != nil {
			return nil, err
		}
	}
	clear(res.Samples)
	clear(res.Passes)
	clear(res.PassCPU)
	for i := 0; i < b.runs; i++ {
		b.logf("part 8 %d files: round %d/%d", n, i+1, b.runs)
		order := slices.Clone(res.Order)
		if i%2 == 1 {
			slices.Reverse(order)
		}
		for _, k := range order {
			if err := one(k); err != nil {
				return nil, err
			}
		}
	}
	return res, nil
}

// passDaemon starts the daemon on f as part 5 does (warm: its state cache
// filled by a check first), with its debug records, which time each full
// pass, and without periodic checks or flag sweeps, so that it passes only
// when asked (SIGHUP).
func (b *bench) passDaemon(ctx context.Context, f *fixture) (*monitor, []string, error) {
	dir := filepath.Join(f.Dir, "daemon-cache")
	fill := exec.CommandContext(ctx, b.bin, "check", "--root", f.Root, "--config", f.Cfg)
	fill.Env = append(os.Environ(), "CACHE_DIRECTORY="+dir)
	if out, err := fill.CombinedOutput(); err != nil {
		return nil, nil, fmt.Errorf("filling the state cache: %v: %v\n%s", fill.Args, err, out)
	}
	argv := []string{"env", "CACHE_DIRECTORY=" + dir, b.bin, "daemon", "--root", f.Root, "--config", f.Cfg, "--bus=false",
		"--debug", "--interval", "0", "--fileattr-interval", "0"}
	m, err := startMonitor(ctx, 10*time.Minute, argv...)
	return m, argv, err
}

// passTook is how long the daemon says a full pass took, and the CPU time
// it used meanwhile, in its debug record of the pass a reload runs
// (internal/daemon's fullCheck).
var passTook = regexp.MustCompile(`full check \(reload\): .* took ([0-9.]+[a-zµ]+), CPU ([0-9.]+[a-zµ]+)`)

// pass asks the daemon for a reload, whose full pass follows the load, and
// returns the pass's duration and CPU time as the daemon measured them.
func (m *monitor) pass(timeout time.Duration) (took, cpu time.Duration, err error) {
	m.drain()
	if err := syscall.Kill(m.pid(), syscall.SIGHUP); err != nil {
		return 0, 0, err
	}
	r, err := m.waitFor(func(r record) bool { return passTook.MatchString(r.Line) }, "full pass", timeout)
	if err != nil {
		return 0, 0, err
	}
	s := passTook.FindStringSubmatch(r.Line)
	if took, err = time.ParseDuration(s[1]); err != nil {
		return 0, 0, err
	}
	cpu, err = time.ParseDuration(s[2])
	return took, cpu, err
}

// labelVerdicts are part 8's targets.
func (r *report) labelVerdicts() []verdict {
	var vs []verdict
	for _, l := range r.Labels {
		s := l.Samples
		c, cl := s.medWall(keyCheck), s.medWall(keyCheckLabelled)
		// The floor's ratio, wall-clock and CPU, beside each: what labels
		// cost the system calls no check can leave out.
		floor := fmt.Sprintf("the floor of what a check must do, labelled ÷ unlabelled, %s, CPU %s",
			ratio(s.medWall(keyFloorLabelled), s.medWall(keyFloor)), ratio(s.medCPU(keyFloorLabelled), s.medCPU(keyFloor)))
		vs = append(vs, verdict{
			Target: fmt.Sprintf("cached check of %d files on a labelled root ≤ 1.2× the same check unlabelled", l.Files),
			Measured: fmt.Sprintf("%s vs %s: %s (CPU %s; %s)", fmtDur(cl), fmtDur(c), ratio(cl, c),
				ratio(s.medCPU(keyCheckLabelled), s.medCPU(keyCheck)), floor),
			Met: float64(cl) <= 1.2*float64(c),
		})
		p, pl := l.medPass(keyPass), l.medPass(keyPassLabelled)
		vs = append(vs, verdict{
			Target: fmt.Sprintf("daemon full pass of %d files on a labelled root ≤ 1.1× the same pass unlabelled", l.Files),
			Measured: fmt.Sprintf("%s vs %s: %s (CPU %s; %s)", fmtDur(pl), fmtDur(p), ratio(pl, p),
				ratio(l.medPassCPU(keyPassLabelled), l.medPassCPU(keyPass)), floor),
			Met: float64(pl) <= 1.1*float64(p),
		})
	}
	return vs
}

// mdLabels is part 8: labelled hosts.
func (r *report) mdLabels(p printf) {
	par := 2 * atoiOr(r.Machine.CPUs, 1)
	p("## 8. Labelled hosts\n\n")
	p("The files and config of part 1's fixture twice: on a root without SELinux (*plain*), and on a root that holds Debian's policy (`selinux-policy-default`, ")
	p("`SELINUX=enforcing` and `SELINUXTYPE=default` in its `/etc/selinux/config`) with every node labelled by the real `setfiles -F -r ROOT`, as Ignition has setfiles label what it writes (*labelled*): ")
	p("there a check also compares each declared node's label with the policy's default for its path. Every contender ran once untimed, then %d rounds alternated them, every other round in the reverse order; medians. ", r.Labels[0].Runs)
	p("`check` is the cached check as root runs it (part 1), with a cache directory for each root; the floor is what a check must do per file by its contract, as bare system calls (`drift-bench read -meta`, %d threads): ", par)
	p("on a labelled root it reads the label too, which no check can skip. The daemon pass is the full check of a running daemon (warm, `--debug`, no periodic check), ")
	p("the one a reload (SIGHUP) runs after loading, timed by the daemon itself (its debug record of the pass), wall-clock and the process's CPU time during it (`getrusage`): ")
	p("the CPU time is the pass's own work, which the other work of a loaded machine moves less than the wall-clock.\n\n")
	// table is one table of the runs, each contender's time the median
	// of what proc and pass say of it (wall-clock or CPU).
	table := func(proc func(samples, string) time.Duration, pass func(*labelResult, string) time.Duration) {
		p("| declared | check | check, labelled | labelled ÷ plain | floor | floor, labelled | labelled ÷ plain | check ÷ floor | labelled check ÷ labelled floor | daemon pass | daemon pass, labelled | labelled ÷ plain |\n")
		p("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n")
		for _, l := range r.Labels {
			c, cl, f, fl := proc(l.Samples, keyCheck), proc(l.Samples, keyCheckLabelled), proc(l.Samples, keyFloor), proc(l.Samples, keyFloorLabelled)
			ps, pl := pass(l, keyPass), pass(l, keyPassLabelled)
			p("| %d files | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", l.Files, fmtDur(c), fmtDur(cl), ratio(cl, c), fmtDur(f), fmtDur(fl), ratio(fl, f),
				ratio(c, f), ratio(cl, fl), fmtDur(ps), fmtDur(pl), ratio(pl, ps))
		}
	}
	p("Wall-clock:\n\n")
	table(samples.medWall, (*labelResult).medPass)
	p("\nCPU time (user and system; the processes' own, the daemon's during its pass), the same runs:\n\n")
	table(samples.medCPU, (*labelResult).medPassCPU)
	if _, ok := r.Labels[0].Cont[keyCheckBefore]; ok {
		p("\nThe cached check side by side with `before`, another build (`-before`; see its command below), in the same rounds:\n\n")
		p("| declared | check, before | check | labelled, before | labelled | labelled ÷ plain, before | labelled ÷ plain | CPU, labelled, before | CPU, labelled | CPU labelled ÷ plain, before | CPU labelled ÷ plain |\n")
		p("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n")
		for _, l := range r.Labels {
			s := l.Samples
			w := func(k string) time.Duration { return s.medWall(k) }
			c := func(k string) time.Duration { return s.medCPU(k) }
			p("| %d files | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", l.Files, fmtDur(w(keyCheckBefore)), fmtDur(w(keyCheck)),
				fmtDur(w(keyCheckLabelledBefore)), fmtDur(w(keyCheckLabelled)), ratio(w(keyCheckLabelledBefore), w(keyCheckBefore)),
				ratio(w(keyCheckLabelled), w(keyCheck)), fmtDur(c(keyCheckLabelledBefore)), fmtDur(c(keyCheckLabelled)),
				ratio(c(keyCheckLabelledBefore), c(keyCheckBefore)), ratio(c(keyCheckLabelled), c(keyCheck)))
		}
	}
	last := r.Labels[len(r.Labels)-1]
	p("\nThe exact commands (for %d files):\n\n", last.Files)
	for _, k := range last.Order {
		if c, ok := last.Cont[k]; ok {
			p("- %s: `%s`\n", k, c.Desc)
		} else {
			p("- %s: `%s`\n", k, last.PassCmd[k])
		}
	}
	p("\n")
}
