package main

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

type report struct {
	Quick   bool
	Started time.Time
	Took    time.Duration
	Invoked string
	Argv    string
	Machine machine
	Load    []loadAvg
	Full    []*fullResult
	Latency []*latencyResult
	Idle    []*idleResult
	Micro   *microResult
	Storms  []*stormResult
	Image   *imageResult
	// AuditStorm is part 7: attribution under a write storm.
	AuditStorm *auditStormResult
	// Labels is part 8: SELinux-labelled hosts against plain ones.
	Labels []*labelResult
	Binary *binaryResult
	// Notes is the hand-written part (bench/NOTES.md): method, profiles, limits.
	Notes string
}

// A target and whether it was met.
type verdict struct {
	Target, Measured string
	Met              bool
}

// verdicts are the targets, each with what this run measured, part by part.
func (r *report) verdicts() []verdict {
	var vs []verdict
	for _, part := range [][]verdict{r.fullVerdicts(), r.specVerdicts(), r.latencyVerdicts(), r.idleVerdicts(), r.stormVerdicts(), r.imageVerdicts(),
		r.auditStormVerdicts(), r.labelVerdicts(), r.binaryVerdicts()} {
		vs = append(vs, part...)
	}
	return vs
}

// fullVerdicts are part 1's targets against cat and AIDE, warm and cold.
func (r *report) fullVerdicts() []verdict {
	var vs []verdict
	for _, f := range r.Full {
		dm, cat, aide, read1 := f.medWall("drift-monitor"), f.medWall("cat"), f.medWall("aide"), f.medWall("read1")
		vs = append(vs, verdict{
			Target: fmt.Sprintf("full check of %s ≤ 1.5× the cat floor", f.Label),
			Measured: fmt.Sprintf("%s vs %s: %s (vs the one-process read floor %s: %s)", fmtDur(dm), fmtDur(cat), ratio(dm, cat),
				fmtDur(read1), ratio(dm, read1)),
			Met: float64(dm) <= 1.5*float64(cat),
		})
		if f.Files == 10000 {
			// The target for the cached check, beside the floor of what a
			// check must do by its contract (bench/fullcheck.go, cmdRead -meta).
			readP, checkP := f.medWall("readP"), f.medWall("checkP")
			vs = append(vs, verdict{
				Target: fmt.Sprintf("full check of %s ≤ 1.0× the parallel read floor", f.Label),
				Measured: fmt.Sprintf("%s vs %s: %s (the parallel floor of what a check must do, stat, read and list xattrs, %s: %s the read floor; the check ÷ that floor %s)",
					fmtDur(dm), fmtDur(readP), ratio(dm, readP), fmtDur(checkP), ratio(checkP, readP), ratio(dm, checkP)),
				Met: dm <= readP,
			})
		}
		if f.Files >= 10000 {
			// The cached check against the floor of what a check must do by
			// its contract, as bare system calls, where the per-file work
			// outweighs the process's start.
			checkP := f.medWall("checkP")
			vs = append(vs, verdict{
				Target: fmt.Sprintf("full check of %s ≤ 1.0× the floor of what a check must do (stat, read, xattrs; parallel)", f.Label),
				Measured: fmt.Sprintf("%s vs %s: %s (CPU %s vs %s: %s)", fmtDur(dm), fmtDur(checkP), ratio(dm, checkP),
					fmtDur(f.medCPU("drift-monitor")), fmtDur(f.medCPU("checkP")), ratio(f.medCPU("drift-monitor"), f.medCPU("checkP"))),
				Met: dm <= checkP,
			})
		}
		vs = append(vs, verdict{
			Target:   fmt.Sprintf("full check of %s ≥ 10× faster than AIDE", f.Label),
			Measured: fmt.Sprintf("AIDE %s vs %s: %s", fmtDur(aide), fmtDur(dm), ratio(aide, dm)),
			Met:      float64(aide) >= 10*float64(dm),
		})
		if _, ok := f.Cont["cold"]; ok {
			cold := f.medWall("cold")
			vs = append(vs, verdict{
				Target:   fmt.Sprintf("cold full check of %s (config parsed, `--no-cache`) ≤ 1.5× the cat floor and ≥ 10× faster than AIDE", f.Label),
				Measured: fmt.Sprintf("%s: %s cat, AIDE %s", fmtDur(cold), ratio(cold, cat), ratio(aide, cold)),
				Met:      float64(cold) <= 1.5*float64(cat) && float64(aide) >= 10*float64(cold),
			})
			// The targets for the cold load.
			vs = append(vs, verdict{
				Target:   fmt.Sprintf("cold full check of %s at least as fast as AIDE", f.Label),
				Measured: fmt.Sprintf("%s, AIDE %s: AIDE ÷ cold %s", fmtDur(cold), fmtDur(aide), ratio(aide, cold)),
				Met:      cold <= aide,
			})
			if f.Files == 10000 {
				read1 := f.medWall("read1")
				vs = append(vs, verdict{
					Target:   fmt.Sprintf("cold full check of %s within 3× of the one-process read floor", f.Label),
					Measured: fmt.Sprintf("%s, read, 1 thread %s: %s", fmtDur(cold), fmtDur(read1), ratio(cold, read1)),
					Met:      float64(cold) <= 3*float64(read1),
				})
			}
			if f.CfgBytes > 0 {
				bound := 2*f.CfgBytes + 50<<20
				vs = append(vs, verdict{
					Target:   fmt.Sprintf("peak RSS of a cold check of %s < 2× its config (%s) + 50 MiB", f.Label, fmtBytes(f.CfgBytes)),
					Measured: fmt.Sprintf("%s (bound %s)", fmtBytes(f.maxRSS("cold")), fmtBytes(bound)),
					Met:      f.maxRSS("cold") < bound,
				})
			}
		}
	}
	return vs
}

// specVerdicts are part 1's targets for the cold check in each spec.
func (r *report) specVerdicts() []verdict {
	var vs []verdict
	for _, f := range r.Full {
		if f.Files != 10000 {
			continue
		}
		// The targets: a cold check faster than AIDE in every spec.
		aide := f.medWall("aide")
		for _, s := range f.Specs {
			cold := f.medWall(s.Key)
			vs = append(vs, verdict{
				Target:   fmt.Sprintf("cold check of %s, spec %s, ≤ 0.4× AIDE", f.Label, s.Label),
				Measured: fmt.Sprintf("%s, AIDE %s: %s", fmtDur(cold), fmtDur(aide), ratio(cold, aide)),
				Met:      float64(cold) <= 0.4*float64(aide),
			})
			bound := 2*s.Bytes + 32<<20
			vs = append(vs, verdict{
				Target:   fmt.Sprintf("peak RSS of a cold check of %s, spec %s, ≤ 2× its config (%s) + 32 MiB", f.Label, s.Label, fmtBytes(s.Bytes)),
				Measured: fmt.Sprintf("%s (bound %s)", fmtBytes(f.maxRSS(s.Key)), fmtBytes(bound)),
				Met:      f.maxRSS(s.Key) <= bound,
			})
		}
	}
	return vs
}

// latencyVerdicts are part 2's targets.
func (r *report) latencyVerdicts() []verdict {
	var vs []verdict
	var first, last *latencyResult
	for _, l := range r.Latency {
		if l.Strategy != "drift-monitor" {
			continue
		}
		p99 := percentile(l.Detect, 99)
		vs = append(vs, verdict{
			Target:   fmt.Sprintf("detection p99 < 50 ms at N = %d", l.Files),
			Measured: fmtDur(p99),
			Met:      p99 < 50*time.Millisecond,
		})
		if first == nil {
			first = l
		}
		last = l
	}
	if first != nil && last != first {
		a, b := percentile(first.Detect, 99), percentile(last.Detect, 99)
		vs = append(vs, verdict{
			Target:   fmt.Sprintf("detection p99 at N = %d within 1.5× of N = %d", last.Files, first.Files),
			Measured: fmt.Sprintf("%s vs %s: %s", fmtDur(b), fmtDur(a), ratio(b, a)),
			Met:      float64(b) <= 1.5*float64(a),
		})
	}
	return vs
}

// idleVerdicts are part 3's targets for CPU and memory.
func (r *report) idleVerdicts() []verdict {
	var vs []verdict
	for _, i := range r.Idle {
		if i.Binary != "" {
			continue
		}
		w := i.worst()
		pct := 100 * w.CPU.Seconds() / w.Window.Seconds()
		vs = append(vs, verdict{
			Target:   fmt.Sprintf("idle CPU < 0.1%% at N = %d, %s start (the worst %s window)", i.Files, i.Start, fmtDur(w.Window.Round(time.Second))),
			Measured: fmt.Sprintf("%.3f%% (%s)", pct, fmtDur(w.CPU)),
			Met:      pct < 0.1,
		})
	}
	for _, i := range r.Idle {
		if i.Files < 100000 || i.Binary != "" {
			continue
		}
		vs = append(vs, verdict{
			Target:   fmt.Sprintf("resident memory < 100 MB at N = %d, idle after a %s start", i.Files, i.Start),
			Measured: fmt.Sprintf("VmRSS %s", fmtMB(i.lastRSS())),
			Met:      i.lastRSS() < 100e6,
		})
		if i.Start == "warm" {
			vs = append(vs, verdict{
				Target:   fmt.Sprintf("resident memory < 100 MB at N = %d, peak of a %s start (loading)", i.Files, i.Start),
				Measured: fmt.Sprintf("VmHWM %s", fmtMB(i.HWM)),
				Met:      i.HWM < 100e6,
			})
			continue
		}
		// A cold start parses the config: within the one-shot cold
		// check's bound.
		bound := 2*i.CfgBytes + 32<<20
		vs = append(vs, verdict{
			Target: fmt.Sprintf("peak resident memory of a %s start at N = %d ≤ 2× its config (%s) + 32 MiB, the one-shot check's bound", i.Start, i.Files, fmtBytes(i.CfgBytes)),
			Measured: fmt.Sprintf("VmHWM %s (bound %s; `check --no-cache` just before: %s, ×%.3f)", fmtBytes(i.HWM), fmtBytes(bound),
				fmtBytes(i.CheckRSS), float64(i.HWM)/float64(max(i.CheckRSS, 1))),
			Met: i.CfgBytes > 0 && i.HWM <= bound,
		})
	}
	return vs
}

// stormVerdicts are part 5's targets.
func (r *report) stormVerdicts() []verdict {
	var vs []verdict
	for _, s := range r.Storms {
		if s.Variant != "default" || len(s.Storms) == 0 {
			continue
		}
		// Near the baseline: what the runtime's default pacing keeps
		// after a burst (GOGC=100: the heap may double) is about that far.
		worst := int64(0)
		for _, st := range s.Storms {
			worst = max(worst, st.Paused)
		}
		vs = append(vs, verdict{
			Target: fmt.Sprintf("resident memory back within 16 MB of its baseline after each of %d storms of %d files at N = %d", len(s.Storms), s.Storm, s.Files),
			Measured: fmt.Sprintf("VmRSS %s before, at most %s after a %s pause (%s after the last)", fmtMB(s.Baseline), fmtMB(worst),
				fmtDur(s.Pause.Round(time.Second)), fmtMB(s.lastPaused())),
			Met: worst < s.Baseline+16e6,
		})
	}
	return vs
}

func fmtMB(b int64) string { return fmt.Sprintf("%.0f MB", float64(b)/1e6) }

func yes(ok bool) string {
	if ok {
		return "met"
	}
	return "**missed**"
}

func (r *report) summary() string {
	var b strings.Builder
	for _, v := range r.verdicts() {
		fmt.Fprintf(&b, "%-8s %s: %s\n", strings.Trim(yes(v.Met), "*"), v.Target, v.Measured)
	}
	return b.String()
}

// printf writes to the report being built.
type printf func(format string, args ...any)

func (r *report) markdown() string {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	r.mdHeader(p)
	r.mdTargets(p)
	if len(r.Full) > 0 {
		r.mdFull(p)
		r.mdFullVariants(p)
		r.mdPhases(p)
		r.mdFullCommands(p)
	}
	if len(r.Latency) > 0 {
		r.mdLatency(p)
	}
	if len(r.Idle) > 0 {
		r.mdIdle(p)
	}
	if r.Micro != nil {
		r.mdMicro(p)
	}
	if len(r.Storms) > 0 {
		r.mdStorms(p)
	}
	if r.Image != nil {
		r.mdImage(p)
	}
	if r.AuditStorm != nil {
		r.mdAuditStorm(p)
	}
	if len(r.Labels) > 0 {
		r.mdLabels(p)
	}
	if r.Binary != nil {
		r.mdBinary(p)
	}
	p("%s", r.Notes)
	return b.String()
}

// mdHeader is the report's title and how, when and where it ran.
func (r *report) mdHeader(p printf) {
	mode := "full"
	if r.Quick {
		mode = "quick (BENCH_QUICK=1: smaller N, fewer runs — not the reference figures)"
	}
	p("# drift-monitor benchmarks\n\n")
	p("Generated by `bench/` (`make bench`); do not edit by hand — the notes at the end come from `bench/NOTES.md`.\n\n")
	p("- Mode: %s\n", mode)
	p("- Started: %s; took %s\n", r.Started.UTC().Format("2006-01-02 15:04 UTC"), r.Took.Round(time.Second))
	if r.Invoked != "" {
		p("- Command: `%s`, which ran `%s`\n", r.Invoked, r.Argv)
	} else {
		p("- Command: `%s`\n", r.Argv)
	}
	p("- `$WORK` in the commands below is the fixtures' directory (drift-bench -work: by default drift-bench in /var/tmp)\n")
	m := r.Machine
	p("- Machine: %s × %s, %s RAM; %s; %s; %s; %s\n", m.CPUs, m.Model, m.Mem, m.Kernel, m.Go, m.AIDE, m.Binary)
	var loads []string
	for _, l := range r.Load {
		loads = append(loads, fmt.Sprintf("%s %s", l.When, l.Avg))
	}
	p("- Load average (1, 5, 15 min) — a shared machine, other work was running: %s\n\n", strings.Join(loads, "; "))

}

// mdTargets is the table of verdicts.
func (r *report) mdTargets(p printf) {
	p("## Targets\n\n| target | measured | |\n| --- | --- | --- |\n")
	for _, v := range r.verdicts() {
		p("| %s | %s | %s |\n", v.Target, v.Measured, yes(v.Met))
	}
	p("\n")

}

// mdFull is part 1's method and its wall-clock, CPU and memory tables.
func (r *report) mdFull(p printf) {
	runs := r.Full[0].Runs
	p("## 1. Full check\n\n")
	p("Warm page cache: every contender ran once untimed, then %d rounds alternated the contenders; medians of wall-clock time. ", runs)
	p("Ratios are taken within this run, side by side. The small-file fixtures are 90%% files of 512 bytes and 10%% of 8 KiB, 100 per directory, declared by one Ignition config (spec 3.4.0, data URLs); ")
	p("the large file is declared with a remote `https://` source and a `sha512` `verification.hash` (drift-monitor hashes it, never fetches it). ")
	p("AIDE checks `p+u+g+sha256` on exactly those files, its database initialised before timing. ")
	p("`drift-monitor` is `check` as root runs it: the state derived from the config is in its cache (`/var/cache/drift-monitor`, filled by the untimed first run, as AIDE's database is by `--init`); ")
	p("`cold` is `check --no-cache`, which parses and validates the Ignition config every time (the first check after a config change).\n\n")
	p("| declared | bytes | drift-monitor | cold | AIDE | cat | read, 1 thread | read, %d threads | drift-monitor ÷ cat | drift-monitor ÷ read, 1 thread | AIDE ÷ drift-monitor | cold ÷ cat | AIDE ÷ cold |\n", 2*atoiOr(r.Machine.CPUs, 1))
	p("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n")
	for _, f := range r.Full {
		dm, cold := f.medWall("drift-monitor"), f.medWall("cold")
		p("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", f.Label, fmtBytes(f.Bytes), fmtDur(dm), fmtDur(cold), fmtDur(f.medWall("aide")),
			fmtDur(f.medWall("cat")), fmtDur(f.medWall("read1")), fmtDur(f.medWall("readP")), ratio(dm, f.medWall("cat")), ratio(dm, f.medWall("read1")),
			ratio(f.medWall("aide"), dm), ratio(cold, f.medWall("cat")), ratio(f.medWall("aide"), cold))
	}
	par := 2 * atoiOr(r.Machine.CPUs, 1)
	p("\nThe check beside the parallel floors (%d threads each): reading every file (`read`), and what a check must do per file by its contract, as plain system calls: statx without following links, open, read its size and a byte more, list its extended attributes (`stat+read+xattrs`, `drift-bench read -meta`):\n\n", par)
	p("| declared | drift-monitor | read, %[1]d threads | stat+read+xattrs, %[1]d threads | drift-monitor ÷ read | drift-monitor ÷ stat+read+xattrs | stat+read+xattrs ÷ read | drift-monitor CPU | read CPU | stat+read+xattrs CPU |\n", par)
	p("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n")
	for _, f := range r.Full {
		dm, rp, cp := f.medWall("drift-monitor"), f.medWall("readP"), f.medWall("checkP")
		p("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", f.Label, fmtDur(dm), fmtDur(rp), fmtDur(cp), ratio(dm, rp), ratio(dm, cp), ratio(cp, rp),
			fmtDur(f.medCPU("drift-monitor")), fmtDur(f.medCPU("readP")), fmtDur(f.medCPU("checkP")))
	}
	p("\nCPU time (user + system, medians) and peak resident memory of the same runs:\n\n")
	p("| declared | drift-monitor CPU | cold CPU | AIDE CPU | cat CPU | drift-monitor max RSS | cold max RSS | AIDE max RSS | AIDE `--init` |\n| --- | --- | --- | --- | --- | --- | --- | --- | --- |\n")
	for _, f := range r.Full {
		p("| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", f.Label, fmtDur(f.medCPU("drift-monitor")), fmtDur(f.medCPU("cold")), fmtDur(f.medCPU("aide")), fmtDur(f.medCPU("cat")),
			fmtBytes(f.maxRSS("drift-monitor")), fmtBytes(f.maxRSS("cold")), fmtBytes(f.maxRSS("aide")), fmtDur(f.AIDEInit))
	}
}

// mdFullVariants is part 1's cold check beside another build and in each spec.
func (r *report) mdFullVariants(p printf) {
	if _, ok := r.Full[0].Cont["cold-before"]; ok {
		p("\nThe cold check side by side with `before`, another build (`-before`; see its command below), in the same rounds:\n\n")
		p("| declared | config | cold, before | cold | before ÷ cold | CPU, before | CPU | max RSS, before | max RSS | 2× config + 50 MiB |\n| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n")
		for _, f := range r.Full {
			p("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", f.Label, fmtBytes(f.CfgBytes), fmtDur(f.medWall("cold-before")), fmtDur(f.medWall("cold")),
				ratio(f.medWall("cold-before"), f.medWall("cold")), fmtDur(f.medCPU("cold-before")), fmtDur(f.medCPU("cold")),
				fmtBytes(f.maxRSS("cold-before")), fmtBytes(f.maxRSS("cold")), fmtBytes(2*f.CfgBytes+50<<20))
		}
	}
	if len(r.Full[0].Specs) > 0 || len(r.Full) > 1 && len(r.Full[1].Specs) > 0 {
		p("\nThe cold check (`check --no-cache`) of the same files declared in each spec drift-monitor reads, and as a MachineConfig (spec.config in %s, as the machine-config operator renders it; in JSON, and in YAML as `oc get -o yaml` prints it), in the same rounds as AIDE:\n\n", machineConfigSpec)
		p("| declared | spec | config | cold | AIDE | cold ÷ AIDE | cold CPU | cold max RSS | 2× config + 32 MiB |\n| --- | --- | --- | --- | --- | --- | --- | --- | --- |\n")
		for _, f := range r.Full {
			for _, s := range f.Specs {
				p("| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", f.Label, s.Label, fmtBytes(s.Bytes), fmtDur(f.medWall(s.Key)), fmtDur(f.medWall("aide")),
					ratio(f.medWall(s.Key), f.medWall("aide")), fmtDur(f.medCPU(s.Key)), fmtBytes(f.maxRSS(s.Key)), fmtBytes(2*s.Bytes+32<<20))
			}
		}
	}
}

// mdPhases is part 1's check split in load and compare.
func (r *report) mdPhases(p printf) {
	p("\ndrift-monitor's check split in its two phases (`drift-bench phases`, the same code as `drift-monitor check`, timed inside one process): ")
	p("loading the desired state without the cache (read, parse and validate the Ignition config, derive the entries: the cold load) and comparing it with the disk (`check.Checker.All`):\n\n")
	p("| declared | load | compare | compare ÷ cat | compare ÷ read, 1 thread | AIDE ÷ compare | live heap after load | allocated by load | peak RSS |\n| --- | --- | --- | --- | --- | --- | --- | --- | --- |\n")
	for _, f := range r.Full {
		var loads, cmps []time.Duration
		var live, alloc uint64
		var rss int64
		for _, ph := range f.Phases {
			loads = append(loads, time.Duration(ph.LoadNS))
			cmps = append(cmps, time.Duration(ph.CompareNS))
			live, alloc, rss = ph.HeapLive, ph.HeapAlloc, max(rss, ph.MaxRSS)
		}
		p("| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", f.Label, fmtDur(median(loads)), fmtDur(median(cmps)), ratio(median(cmps), f.medWall("cat")),
			ratio(median(cmps), f.medWall("read1")), ratio(f.medWall("aide"), median(cmps)), fmtBytes(int64(live)), fmtBytes(int64(alloc)), fmtBytes(rss))
	}
}

// mdFullCommands is the commands part 1 timed.
func (r *report) mdFullCommands(p printf) {
	p("\nThe exact commands (for the last fixture; the others differ in their paths):\n\n")
	last := r.Full[len(r.Full)-1]
	names := map[string]string{"drift-monitor": "drift-monitor", "cold": "drift-monitor, cold", "cold-before": "drift-monitor, cold, before", "aide": "AIDE", "cat": "cat", "read1": "read, 1 thread",
		"readP": "read, parallel", "checkP": "stat+read+xattrs, parallel", "sha512sum": "sha512sum (the hash floor)", "phases": "phases"}
	for _, k := range last.Order {
		p("- %s: `%s`\n", names[k], last.Cont[k].Desc)
	}
	for _, f := range r.Full {
		if f.Files != 10000 {
			continue
		}
		p("\nThe per-spec cold checks, for %s:\n\n", f.Label)
		for _, s := range f.Specs {
			p("- spec %s: `%s`\n", s.Label, f.Cont[s.Key].Desc)
		}
	}
	if _, ok := last.Cont["sha512sum"]; ok {
		p("\nFor the large file the floor that includes hashing is `sha512sum`: median %s (drift-monitor ÷ sha512sum = %s).\n",
			fmtDur(last.medWall("sha512sum")), ratio(last.medWall("drift-monitor"), last.medWall("sha512sum")))
	}
	p("\n")
}

// mdLatency is part 2: detection latency.
func (r *report) mdLatency(p printf) {
	p("## 2. Detection latency\n\n")
	p("The monitor runs with its stderr piped to the benchmark. A random declared file is written wrong (open with truncation, one write of the same length with different first bytes, close — a real writer), ")
	p("the clock (monotonic, in the benchmark process) starts before the open and stops when the drift record naming that path is read; then the file is restored and timed to the resolved record. ")
	p("`naive` is the original MCO monitor's strategy, implemented in `bench/naive.go` with drift-monitor's own check engine: fsnotify on the same directories, every declared path re-validated (`check.Checker.All`) on every event.\n\n")
	p("| declared | strategy | changes | detect p50 | p95 | p99 | max | resolve p50 | p95 | p99 | max | start → READY |\n")
	p("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n")
	lat := append([]*latencyResult(nil), r.Latency...)
	sort.SliceStable(lat, func(i, j int) bool { return lat[i].Files < lat[j].Files })
	for _, l := range lat {
		p("| %d | %s | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", l.Files, l.Strategy, len(l.Detect),
			fmtDur(percentile(l.Detect, 50)), fmtDur(percentile(l.Detect, 95)), fmtDur(percentile(l.Detect, 99)), fmtDur(maxDur(l.Detect)),
			fmtDur(percentile(l.Resolve, 50)), fmtDur(percentile(l.Resolve, 95)), fmtDur(percentile(l.Resolve, 99)), fmtDur(maxDur(l.Resolve)),
			fmtDur(l.Ready))
	}
	p("\nCommands: ")
	seen := map[string]bool{}
	for _, l := range r.Latency {
		if !seen[l.Strategy] {
			seen[l.Strategy] = true
			p("`%s` ", l.Cmd)
		}
	}
	p("(percentiles by nearest rank).\n\n")
}

// mdIdle is part 3: the cost while waiting, and of loading.
func (r *report) mdIdle(p printf) {
	p("## 3. Cost while waiting\n\n")
	p("The daemon with its default options (periodic check every hour, so none here) and a state cache directory of its own, after READY=1 and a few seconds of settling, measured over consecutive quiet windows; ")
	p("started twice: *cold*, its cache empty (the config is parsed and validated, as at first boot or after a config change), then *warm*, a restart that reads what the cold start stored (any later start). ")
	p("Either way the daemon keeps declared contents as size and SHA-256, their bytes in the cache entry. ")
	p("CPU from `/proc/PID/stat` (utime + stime, 10 ms ticks) and from the sum of `/proc/PID/task/*/schedstat` (ns); wakeups as context switches summed over `/proc/PID/task/*/status`; ")
	p("memory from `/proc/PID/status`; inotify watches as `inotify wd:` lines in `/proc/PID/fdinfo/*` (one per directory holding declared files, plus the ancestors and the config's directory).\n\n")
	p("| declared | start | window | CPU | CPU %% | on-CPU (schedstat) | context switches | per second | threads | VmRSS at its end |\n")
	p("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n")
	for _, i := range r.Idle {
		for k, w := range i.Windows {
			p("| %d | %s | %d: %s | %s | %.3f%% | %s | %d | %.2f | %d | %s |\n", i.Files, i.label(), k+1, fmtDur(w.Window.Round(time.Millisecond)), fmtDur(w.CPU),
				100*w.CPU.Seconds()/w.Window.Seconds(), fmtDur(w.SchedCPU), w.Switches, float64(w.Switches)/w.Window.Seconds(), w.Threads, fmtMB(w.RSS))
		}
	}
	p("\nLoading the desired state: the daemon's start → READY=1 (load, index, watches and the first full check), its peak resident memory, ")
	p("and — from part 1's phase runs at the same N — the load alone (median), its process's peak RSS and the heap the loaded state keeps alive:\n\n")
	p("The one-shot `check --no-cache` of the same config (the same binary) runs just before each cold start; its peak RSS is beside the daemon's, and the bound both are held to is 2× the config + 32 MiB.\n\n")
	p("| declared | start | start → READY | VmHWM at READY | VmHWM at the end | `check --no-cache` peak RSS | bound | inotify watches | load alone (cold) | peak RSS of a load (cold) | live heap after load (cold, contents in memory) |\n")
	p("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n")
	for _, i := range r.Idle {
		load, rss, live := "–", "–", "–"
		for _, f := range r.Full {
			if f.Files != i.Files || len(f.Phases) == 0 {
				continue
			}
			var ls []time.Duration
			var mr int64
			for _, ph := range f.Phases {
				ls = append(ls, time.Duration(ph.LoadNS))
				mr = max(mr, ph.MaxRSS)
			}
			load, rss, live = fmtDur(median(ls)), fmtMB(mr), fmtMB(int64(f.Phases[0].HeapLive))
		}
		check, bound := "–", "–"
		if i.CheckRSS > 0 {
			check, bound = fmtBytes(i.CheckRSS), fmtBytes(2*i.CfgBytes+32<<20)
		}
		p("| %d | %s | %s | %s | %s | %s | %s | %d | %s | %s | %s |\n", i.Files, i.label(), fmtDur(i.Ready), fmtBytes(i.HWMReady), fmtBytes(i.HWM), check, bound, i.Watches, load, rss, live)
	}
	p("\nCommands (for the last N; `cold, desired.d` with the config hard-linked as `etc/drift-monitor/desired.d/50-bench.ign` inside the root for the run):\n\n")
	last := map[string]*idleResult{}
	var starts []string
	for _, i := range r.Idle {
		if last[i.label()] == nil {
			starts = append(starts, i.label())
		}
		last[i.label()] = i
	}
	for _, s := range starts {
		p("- %s: `%s`", s, last[s].Cmd)
		if last[s].CheckCmd != "" {
			p(", after `%s`", last[s].CheckCmd)
		}
		p("\n")
	}
	p("\n")
}

// mdMicro is part 4: the Go micro-benchmarks.
func (r *report) mdMicro(p printf) {
	p("## 4. Go micro-benchmarks\n\n")
	p("`%s` — the raw output is `%s`, to compare with `benchstat old.txt %s`.\n\n", r.Micro.Cmd, baseName(r.Micro.RawFile), baseName(r.Micro.RawFile))
	p("```\n%s```\n\n", r.Micro.Benchstat)
}

// mdStorms is part 5: memory through storms.
func (r *report) mdStorms(p printf) {
	p("## 5. Memory through storms\n\n")
	p("The daemon started warm (its state cache entry written by a `check` first, as a restart finds it), without the bus; after READY=1 and a settle pause, ")
	p("each storm rewrites distinct random declared files wrong (same length, other first bytes, as in part 2), waits for the drift record of every one, restores them all and waits for every resolved record, ")
	p("then the daemon is left alone for a quiet pause. VmRSS from `/proc/PID/status` when the last resolved record is read and at the end of the pause. ")
	p("*default* is the daemon as deployed; *GOGC=100* the same with the Go runtime's default pacing (the daemon's GC tuner stands aside when `GOGC` is set), for reference.\n\n")
	p("| declared | run | storm | files | took | VmRSS after it | VmRSS after the pause |\n| --- | --- | --- | --- | --- | --- | --- |\n")
	for _, s := range r.Storms {
		p("| %d | %s | before | – | – | – | %s |\n", s.Files, s.Variant, fmtMB(s.Baseline))
		for k, st := range s.Storms {
			p("| %d | %s | %d | %d | %s | %s | %s |\n", s.Files, s.Variant, k+1, s.Storm, fmtDur(st.Took), fmtMB(st.After), fmtMB(st.Paused))
		}
	}
	p("\nPeak resident memory (VmHWM) at the end: ")
	for i, s := range r.Storms {
		if i > 0 {
			p(", ")
		}
		p("%s %s", s.Variant, fmtMB(s.HWM))
	}
	p("; pause %s. Commands: ", fmtDur(r.Storms[0].Pause.Round(time.Second)))
	for _, s := range r.Storms {
		p("`%s` ", s.Cmd)
	}
	p("\n\n")
}

func baseName(p string) string {
	if i := strings.Index(p, "/docs/"); i >= 0 {
		return p[i+1:]
	}
	if i := strings.Index(p, "/_build/"); i >= 0 {
		return p[i+1:]
	}
	return p
}

func atoiOr(s string, def int) int {
	var n int
	if _, err := fmt.Sscan(s, &n); err != nil {
		return def
	}
	return n
}
