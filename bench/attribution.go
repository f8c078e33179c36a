package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/drift-monitor/drift-monitor/internal/audit"
	"github.com/drift-monitor/drift-monitor/internal/journal"
	"github.com/drift-monitor/drift-monitor/test/auditlock"
)

// Part 7: --attribution=audit under a write storm. A shell script appends
// to one declared file, again and again (open, write, close: `echo x >>F`
// in /bin/sh), while the daemon runs without attribution, with it, and —
// to measure the kernel's own share apart — with the very rule the daemon
// would load but nobody reading the records: the kernel writes the records
// of a watched inode at the writer's system call exit whoever reads them
// (kernel/auditsc.c audit_log_exit), and its kauditd thread hands each to
// the multicast group's readers, or drops it when there are none
// (kernel/audit.c kauditd_thread, kauditd_send_multicast_skb). The states
// alternate within each round; medians.

// stormState is one way the host runs while the script appends.
type stormState struct {
	Key, Label string
	// Daemon: drift-monitor runs; Rule: drift-monitor's watch rule of the
	// file is loaded by the benchmark (nobody reads its records);
	// Attribution: the daemon runs with --attribution=audit (which loads
	// the rule itself). Before: the daemon is the -before binary.
	Daemon, Rule, Attribution, Before bool
}

var stormStates = []stormState{
	{Key: "alone", Label: "no daemon"},
	{Key: "rule", Label: "no daemon, the rule loaded, no reader", Rule: true},
	{Key: "daemon", Label: "daemon", Daemon: true},
	{Key: "daemon+rule", Label: "daemon, the rule loaded, no reader", Daemon: true, Rule: true},
	{Key: "audit", Label: "daemon --attribution=audit", Daemon: true, Attribution: true},
}

// beforeStates are the states of the -before binary, measured in the same
// rounds when one is given.
var beforeStates = []stormState{
	{Key: "daemon-before", Label: "daemon, before", Daemon: true, Before: true},
	{Key: "audit-before", Label: "daemon --attribution=audit, before", Daemon: true, Attribution: true, Before: true},
}

// auditStormResult is part 7's figures.
type auditStormResult struct {
	Appends, Rounds int
	States          []stormState // in the order of the first round
	Before          string       // the -before binary, "" for none
	Writer          string       // the writer's command line
	Shell           string       // what /bin/sh is
	Daemon          string       // the daemon's command line, with attribution
	Rule            string       // the rule, as an audit rules file line
	Backlog         uint32       // the kernel's backlog limit during the run
	BacklogFound    uint32       // the one found, restored after
	Other           string       // other audit rules on the host
	// RmemMax is net.core.rmem_max: the daemon's socket buffer is twice
	// it at most (it asks with SO_RCVBUF, which the kernel caps there),
	// and records that come while the buffer is full are lost to it.
	RmemMax string
	Rows    map[string]*stormRow
	// LostBefore and LostAfter are the kernel's lost counter around the
	// part; Overruns the attribution runs whose daemon said it lost
	// records; Named those whose drift named the script as its writer.
	LostBefore, LostAfter uint32
	Overruns, Named       int
	kauditd               int // its pid, 0 when not found
}

// stormRow is what one state measured, round by round.
type stormRow struct {
	WriterWall, WriterCPU []time.Duration
	Waits                 []int64 // the writer's voluntary context switches (sleeps)
	// Preempted is its involuntary ones: on a busy host the writer's wall
	// time beyond its CPU is mostly waiting for a core that kauditd, the
	// daemon or another program holds.
	Preempted []int64
	DaemonCPU []time.Duration
	// KauditdCPU is the kernel's audit thread's: it hands every record to
	// the readers (a copy each) or drops it.
	KauditdCPU []time.Duration
}

func (r *auditStormResult) medWall(k string) time.Duration { return median(r.Rows[k].WriterWall) }
func (r *auditStormResult) medCPU(k string) time.Duration  { return median(r.Rows[k].WriterCPU) }
func (r *auditStormResult) medDaemon(k string) time.Duration {
	return median(r.Rows[k].DaemonCPU)
}
func (r *auditStormResult) medKauditd(k string) time.Duration {
	return median(r.Rows[k].KauditdCPU)
}

// perAppend is d spread over the appends, in µs with a decimal: a few µs
// each, which fmtDur would round to the unit.
func (r *auditStormResult) perAppend(d time.Duration) string {
	return fmt.Sprintf("%.1f µs", float64(d)/float64(r.Appends)/float64(time.Microsecond))
}

// appendScript appends a line to "$0", "$1" times: each `echo x >>F` is
// an open for writing, a write and a close, as any script's append is.
const appendScript = `i=0; while [ "$i" -lt "$1" ]; do echo x >>"$0"; i=$((i+1)); done`

// stormAppends and stormRounds: the sizes, smaller with -quick.
func (b *bench) stormAppends() (appends, rounds int) {
	if b.quick {
		return 20000, 3
	}
	return 20000, 7
}

// auditBacklog is the kernel's backlog limit the part runs with (when the
// host's is lower): the one auditd's shipped rules set
// (audit-userspace rules/10-base-config.rules, Debian's and Fedora's
// /etc/audit/rules.d/audit.rules: -b 8192). The kernel's default (64)
// is a host where nothing configured audit: there a writer also sleeps
// whenever kauditd has not yet drained 64 records (audit_log_start).
const auditBacklog = 8192

func (b *bench) part7(ctx context.Context, rep *report, fx *fixtures) error {
	if _, err := exec.LookPath("auditctl"); err != nil {
		return fmt.Errorf("part 7 needs auditctl (apt-get install auditd): %w", err)
	}
	unlock, err := auditlock.Take()
	if err != nil {
		return err
	}
	defer unlock()
	conn, err := audit.Dial()
	if err != nil {
		return err
	}
	defer conn.Close()
	st, err := conn.Status()
	if err != nil {
		return err
	}
	if st.Locked() {
		return errors.New("part 7: the host's audit rules are locked (enabled 2)")
	}
	// The host's audit state comes back as it was, whatever happens.
	defer exec.Command("auditctl", "-e", strconv.Itoa(int(st.Enabled))).Run()
	defer exec.Command("auditctl", "-b", strconv.Itoa(int(st.BacklogLimit))).Run()
	defer exec.Command("auditctl", "-D", "-k", audit.Key).Run()
	if err := runQuiet("auditctl", "-e", "1"); err != nil {
		return err
	}
	appends, rounds := b.stormAppends()
	res := &auditStormResult{Appends: appends, Rounds: rounds, BacklogFound: st.BacklogLimit, Backlog: st.BacklogLimit, Rows: map[string]*stormRow{}}
	if st.BacklogLimit != 0 && st.BacklogLimit < auditBacklog {
		if err := runQuiet("auditctl", "-b", strconv.Itoa(auditBacklog)); err != nil {
			return err
		}
		res.Backlog = auditBacklog
	}
	other, _ := exec.Command("auditctl", "-l").CombinedOutput()
	res.Other = strings.TrimSpace(string(other))
	res.Shell, _ = filepath.EvalSymlinks("/bin/sh")
	if b, err := os.ReadFile("/proc/sys/net/core/rmem_max"); err == nil {
		res.RmemMax = strings.TrimSpace(string(b))
	}
	if out, err := exec.Command("pgrep", "-x", "kauditd").Output(); err == nil {
		res.kauditd, _ = strconv.Atoi(strings.TrimSpace(string(out)))
	}

	// Absolute: the rule names the file, and the kernel would resolve a
	// relative one from wherever auditctl runs.
	dir, err := filepath.Abs(filepath.Join(fx.work, "storm"))
	if err != nil {
		return err
	}
	os.RemoveAll(dir)
	sf, err := makeStormFixture(dir)
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	key := fmt.Sprintf("drift-bench-%d", os.Getpid())
	rules := audit.Rules{Conn: conn, Key: key}
	defer rules.Clear()
	want, err := audit.PlanWatches([]string{sf.file}, key, nil)
	if err != nil {
		return err
	}
	res.Rule = strings.ReplaceAll(want[0].File(), key, audit.Key)
	res.Writer = shellQuote([]string{"sh", "-c", appendScript, sf.file, strconv.Itoa(appends)})
	res.Daemon = shellQuote(sf.daemonArgv(b.bin, true))
	res.States = stormStates
	if b.before != "" {
		res.States, res.Before = append(slices.Clip(res.States), beforeStates...), b.before
	}
	if st, err := conn.Status(); err == nil {
		res.LostBefore = st.Lost
	}
	for r := 0; r < rounds; r++ {
		for i := range res.States {
			s := res.States[(i+r)%len(res.States)]
			if err := b.stormOnce(ctx, res, sf, s, rules, want); err != nil {
				return fmt.Errorf("part 7, %s: %w", s.Label, err)
			}
		}
		b.logf("part 7: round %d/%d: %s", r+1, rounds, res.roundLine(r))
	}
	if st, err := conn.Status(); err == nil {
		res.LostAfter = st.Lost
	}
	rep.AuditStorm = res
	rep.Load = append(rep.Load, loadMark("after part 7"))
	return nil
}

// roundLine is round r's figures, for the log.
func (r *auditStormResult) roundLine(k int) string {
	var parts []string
	for _, s := range r.States {
		row := r.Rows[s.Key]
		line := fmt.Sprintf("%s writer %s", s.Key, fmtDur(row.WriterWall[k]))
		if s.Daemon {
			line += fmt.Sprintf(" daemon CPU %s", fmtDur(row.DaemonCPU[k]))
		}
		parts = append(parts, line)
	}
	return strings.Join(parts, "; ")
}

// stormFixture is a root declaring one file, which the script appends to.
type stormFixture struct {
	dir, root, cfg, file string
}

// stormContent is the declared file's content.
const stormContent = "storm\n"

func makeStormFixture(dir string) (*stormFixture, error) {
	f := &stormFixture{dir: dir, root: filepath.Join(dir, "root"), cfg: filepath.Join(dir, "config.ign")}
	f.file = filepath.Join(f.root, "etc/storm.conf")
	if err := os.MkdirAll(filepath.Dir(f.file), 0o755); err != nil {
		return nil, err
	}
	cfg := `{"ignition":{"version":"3.4.0"},"storage":{"files":[{"path":"/etc/storm.conf","mode":420,"contents":{"source":"data:,storm%0A"}}]}}`
	if err := os.WriteFile(f.cfg, []byte(cfg), 0o644); err != nil {
		return nil, err
	}
	for _, d := range []string{"cache", "state"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o700); err != nil {
			return nil, err
		}
	}
	return f, f.restore()
}

// restore writes the declared content back.
func (f *stormFixture) restore() error {
	if err := os.WriteFile(f.file, []byte(stormContent), 0o644); err != nil {
		return err
	}
	return os.Chmod(f.file, 0o644)
}

// daemonArgv is the daemon as the part runs it: the state directory holds
// the attribution's canary (the unit's StateDirectory=).
func (f *stormFixture) daemonArgv(bin string, attribution bool) []string {
	argv := []string{"env", "CACHE_DIRECTORY=" + filepath.Join(f.dir, "cache"), "STATE_DIRECTORY=" + filepath.Join(f.dir, "state"),
		bin, "daemon", "--root", f.root, "--config", f.cfg, "--bus=false"}
	if attribution {
		argv = append(argv, "--attribution=audit")
	}
	return argv
}

// stormOnce runs the script once in state s and files what it measured.
func (b *bench) stormOnce(ctx context.Context, res *auditStormResult, f *stormFixture, s stormState, rules audit.Rules, want []audit.Rule) error {
	row := res.Rows[s.Key]
	if row == nil {
		row = &stormRow{}
		res.Rows[s.Key] = row
	}
	if err := f.restore(); err != nil {
		return err
	}
	if s.Rule {
		if _, _, err := rules.Sync(want); err != nil {
			return err
		}
		defer rules.Clear()
	}
	var m *monitor
	var before procSample
	if s.Daemon {
		bin := b.bin
		if s.Before {
			bin = b.before
		}
		var err error
		if m, err = startMonitor(ctx, 2*time.Minute, f.daemonArgv(bin, s.Attribution)...); err != nil {
			return err
		}
		defer m.stop()
		if before, err = settled(ctx, m.pid(), time.Minute); err != nil {
			return err
		}
		m.drain()
	}
	var kBefore procSample
	if res.kauditd != 0 {
		kBefore, _ = sampleProc(res.kauditd)
	}
	cmd := exec.CommandContext(ctx, "sh", "-c", appendScript, f.file, strconv.Itoa(res.Appends))
	start := time.Now()
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("the appending script: %v: %s", err, out)
	}
	row.WriterWall = append(row.WriterWall, time.Since(start))
	row.WriterCPU = append(row.WriterCPU, cmd.ProcessState.UserTime()+cmd.ProcessState.SystemTime())
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		row.Waits, row.Preempted = append(row.Waits, ru.Nvcsw), append(row.Preempted, ru.Nivcsw)
	}
	defer func() {
		if res.kauditd == 0 {
			return
		}
		if k, err := settled(ctx, res.kauditd, time.Minute); err == nil {
			row.KauditdCPU = append(row.KauditdCPU, time.Duration(k.schedNS-kBefore.schedNS))
		}
	}()
	if !s.Daemon {
		return nil
	}
	path := "/etc/storm.conf"
	if _, err := m.waitRecord(msgDrift, path, 2*time.Minute); err != nil {
		return err
	}
	after, err := settled(ctx, m.pid(), 2*time.Minute)
	if err != nil {
		return err
	}
	row.DaemonCPU = append(row.DaemonCPU, time.Duration(after.schedNS-before.schedNS))
	if s.Attribution && !s.Before {
		named, lost := m.stormAttribution(path, cmd.Process.Pid)
		if named {
			res.Named++
		}
		if lost {
			res.Overruns++
		}
	}
	return nil
}

// settled waits until the process has used the CPU for less than a
// millisecond in each of two consecutive tenths of a second (the work a
// storm left it is done), bounded by timeout, and returns that sample.
func settled(ctx context.Context, pid int, timeout time.Duration) (procSample, error) {
	deadline := time.Now().Add(timeout)
	prev, err := sampleProc(pid)
	if err != nil {
		return prev, err
	}
	quietFor := 0
	for time.Now().Before(deadline) {
		if err := quiet(ctx, 100*time.Millisecond); err != nil {
			return prev, err
		}
		cur, err := sampleProc(pid)
		if err != nil {
			return cur, err
		}
		if cur.schedNS-prev.schedNS < int64(time.Millisecond) {
			quietFor++
		} else {
			quietFor = 0
		}
		prev = cur
		if quietFor >= 2 {
			return cur, nil
		}
	}
	return prev, fmt.Errorf("pid %d still busy after %s", pid, timeout)
}

// stormAttribution reads the records the daemon wrote so far: whether the
// drift of path named pid as its writer, and whether the daemon said it
// lost audit records.
func (m *monitor) stormAttribution(path string, pid int) (named, lost bool) {
	check := func(line string) {
		f := journal.ParsePlain(line).Fields
		if f[journal.FieldRecord] == msgDrift && f[journal.FieldDriftPath] == path && f[journal.FieldWriterPID] == strconv.Itoa(pid) {
			named = true
		}
		if f[journal.FieldAttribution] == "records-lost" {
			lost = true
		}
	}
	for _, l := range m.tail {
		check(l)
	}
	for {
		select {
		case r := <-m.recs:
			m.keep(r.Line)
			check(r.Line)
		default:
			return named, lost
		}
	}
}

// auditStormVerdicts are part 7's targets: attribution's cost to a writer
// and to the daemon, beside the daemon without it, and no record lost.
// Each cost is also judged without the kernel's own share (÷ the daemon
// with the rule loaded and nobody reading): that share is paid by whoever
// audits the file, auditd as much as drift-monitor, and no reader can
// lower it.
func (r *report) auditStormVerdicts() []verdict {
	a := r.AuditStorm
	if a == nil {
		return nil
	}
	ww, wd, wr := a.medWall("audit"), a.medWall("daemon"), a.medWall("daemon+rule")
	cw, cd, cr := a.medCPU("audit"), a.medCPU("daemon"), a.medCPU("daemon+rule")
	da, dd, dr := a.medDaemon("audit"), a.medDaemon("daemon"), a.medDaemon("daemon+rule")
	return []verdict{
		{Target: fmt.Sprintf("a script's %d appends to a declared file with --attribution=audit ≤ 1.3× their time with the daemon without it", a.Appends),
			Measured: fmt.Sprintf("%s vs %s: %s (CPU %s vs %s: %s), of which the kernel's share (the rule loaded, no reader) %s (CPU %s)",
				fmtDur(ww), fmtDur(wd), ratio(ww, wd), fmtDur(cw), fmtDur(cd), ratio(cw, cd), ratio(wr, wd), ratio(cr, cd)),
			Met: float64(ww) <= 1.3*float64(wd)},
		{Target: "… and beyond the kernel's share: ≤ 1.3× their time with the daemon and the rule loaded, no reader",
			Measured: fmt.Sprintf("%s vs %s: %s (CPU %s vs %s: %s)", fmtDur(ww), fmtDur(wr), ratio(ww, wr), fmtDur(cw), fmtDur(cr), ratio(cw, cr)),
			Met:      float64(ww) <= 1.3*float64(wr)},
		{Target: "the daemon's CPU per append with --attribution=audit ≤ 1.3× without it",
			Measured: fmt.Sprintf("%s vs %s: %s, of which the kernel's share (the rule loaded, no reader: a slower writer, fewer appends per wakeup) %s",
				a.perAppend(da), a.perAppend(dd), ratio(da, dd), ratio(dr, dd)),
			Met: float64(da) <= 1.3*float64(dd)},
		{Target: "… and beyond the kernel's share: ≤ 1.3× the daemon's with the rule loaded, no reader",
			Measured: fmt.Sprintf("%s vs %s: %s", a.perAppend(da), a.perAppend(dr), ratio(da, dr)),
			Met:      float64(da) <= 1.3*float64(dr)},
		{Target: "no audit record lost under the write storm",
			Measured: fmt.Sprintf("the kernel's lost counter %d → %d; %d of %d runs with a socket overrun; the script named as the writer in %d of %d",
				a.LostBefore, a.LostAfter, a.Overruns, a.Rounds, a.Named, a.Rounds),
			Met: a.LostAfter == a.LostBefore && a.Overruns == 0 && a.Named == a.Rounds},
	}
}

// mdAuditStorm is part 7's method and figures.
func (r *report) mdAuditStorm(p printf) {
	a := r.AuditStorm
	p("## 7. Attribution under a write storm\n\n")
	p("A shell script (`/bin/sh` is %s) appends a line to one declared file %d times — each `echo x >>F` opens the file for writing, writes and closes it, ", a.Shell, a.Appends)
	p("so each is one system call that drift-monitor's rule (`%s`) audits — while the host runs in each of the states below, ", a.Rule)
	p("alternated within each of %d rounds (each round starts at the next state), medians. ", a.Rounds)
	p("The script's wall-clock and CPU time (user + system, its own rusage) and its voluntary context switches (sleeps: a writer waits in the kernel when the audit backlog is full) and involuntary ones (preempted: wall time beyond CPU on a busy host is mostly waiting for a core); ")
	p("the daemon's CPU (the sum of `/proc/PID/task/*/schedstat`) from just before the script starts until the daemon has reported the drift and gone quiet, and the kernel's kauditd thread's, which hands each record to the readers or drops it. ")
	p("\"The rule loaded, no reader\" is the kernel's own share: the records of every audited append are written and queued whoever reads them, and dropped there. ")
	p("The kernel's audit is on in every state (`auditctl -e 1`), with a backlog limit of %d (found: %d; auditd's shipped rules set 8192, the kernel's default is 64), restored after; other audit rules on the host: %q. ", a.Backlog, a.BacklogFound, a.Other)
	p("The daemon reads the records from the kernel's multicast group, which never waits for a reader: its socket buffer is at most twice net.core.rmem_max (here %s), and a record that comes while it is full is lost to the daemon (which says so: records-lost).\n\n", a.RmemMax)
	p("| state | script wall | script CPU | its sleeps | preempted | wall ÷ daemon | CPU ÷ daemon | daemon CPU | per append | daemon CPU ÷ daemon | kauditd CPU |\n")
	p("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n")
	wd, cd, dd := a.medWall("daemon"), a.medCPU("daemon"), a.medDaemon("daemon")
	for _, s := range a.States {
		row := a.Rows[s.Key]
		if row == nil {
			continue
		}
		daemon, per, dr := "–", "–", "–"
		if s.Daemon {
			d := a.medDaemon(s.Key)
			daemon, per, dr = fmtDur(d), a.perAppend(d), ratio(d, dd)
		}
		p("| %s | %s | %s | %d | %d | %s | %s | %s | %s | %s | %s |\n", s.Label, fmtDur(a.medWall(s.Key)), fmtDur(a.medCPU(s.Key)), medianInt(row.Waits), medianInt(row.Preempted),
			ratio(a.medWall(s.Key), wd), ratio(a.medCPU(s.Key), cd), daemon, per, dr, fmtDur(a.medKauditd(s.Key)))
	}
	p("\nOf what attribution costs, the kernel's share is the rule loaded without a reader (÷ the daemon alone), ours the rest: ")
	p("script wall %s × %s, script CPU %s × %s, daemon CPU %s × %s (the kernel's × ours).\n\n",
		ratio(a.medWall("daemon+rule"), wd), ratio(a.medWall("audit"), a.medWall("daemon+rule")),
		ratio(a.medCPU("daemon+rule"), cd), ratio(a.medCPU("audit"), a.medCPU("daemon+rule")),
		ratio(a.medDaemon("daemon+rule"), dd), ratio(a.medDaemon("audit"), a.medDaemon("daemon+rule")))
	if a.Before != "" {
		p("*Before* is another build (`-before %s`), in the same rounds: with attribution it cost the script %s and the daemon %s what this build's does.\n\n",
			a.Before, ratio(a.medWall("audit-before"), a.medWall("audit")), ratio(a.medDaemon("audit-before"), a.medDaemon("audit")))
	}
	p("Commands: the script `%s`; the daemon `%s` (without `--attribution=audit` for the other states).\n\n", a.Writer, a.Daemon)
}

func medianInt(xs []int64) int64 {
	ds := make([]time.Duration, len(xs))
	for i, x := range xs {
		ds[i] = time.Duration(x)
	}
	return int64(median(ds))
}
