// Package attribution is the daemon's attribution part (daemon
// --attribution=audit): it follows the kernel's audit records of writes to
// the declared paths (package audit), keeps the kernel's watch rules those
// the entries in force need, proves with a canary write that records
// arrive, and names the writers of each drift the daemon reports — in the
// record's message, its DRIFT_WRITER_* fields and, for the bus, as fields.
//
// It promises that what it cannot claim is said: its State (the metric),
// its Caveat (the status line) and a record when it changes, and a drift
// without a writer says why. It does not promise a writer for every drift:
// an ioctl (chattr) is no audited write, a lost record is lost, and only
// the newest ringSize writes are kept.
package attribution

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/drift-monitor/drift-monitor/internal/audit"
	"github.com/drift-monitor/drift-monitor/internal/daemon/part"
	"github.com/drift-monitor/drift-monitor/internal/dbusapi"
	"github.com/drift-monitor/drift-monitor/internal/drift"
	"github.com/drift-monitor/drift-monitor/internal/escape"
	"github.com/drift-monitor/drift-monitor/internal/journal"
	"github.com/drift-monitor/drift-monitor/internal/model"
	"github.com/drift-monitor/drift-monitor/internal/ondisk"
)

// The attribution's states: what the daemon can honestly claim about who
// wrote a drift (status, the journal and drift_monitor_attribution_state,
// whose label values metrics.AttributionStates lists).
const (
	StateOK            = "ok"
	StateUnavailable   = "unavailable"    // no audit netlink (no privilege, a private netns)
	StateAuditDisabled = "audit-disabled" // the kernel's audit is off (auditctl -e 0)
	StateRulesMissing  = "rules-missing"  // our watch rules are not (all) in the kernel
	StateNeverTask     = "never-task"     // a -a never,task rule blinds every watch
	StateRecordsLost   = "records-lost"   // the kernel's lost counter grew
	StateCanaryFailed  = "canary-failed"  // our own audited write produced no record in time
)

// canaryWait bounds how long the canary's record may take (research A3,
// after Wazuh's audit_healthcheck.c).
const canaryWait = 2 * time.Second

// ringSize bounds the writes kept for attribution: a drift is found within
// milliseconds of its write, so only a burst larger than this, between the
// write and its check, loses its writer (and the drift then says so).
const ringSize = 4096

// attributionWait bounds how long a report waits for an audit record that
// has not arrived yet: the kernel sends it at syscall exit, through its
// kauditd thread, while inotify tells us during the syscall.
const attributionWait = 500 * time.Millisecond

// Attributor is the part: it follows the kernel's audit records of writes
// to declared paths. The reader goroutine fills the ring; the loop reads it
// when it reports drift, and handles what needs it (rules removed, denied
// writes).
type Attributor struct {
	o     Options
	h     part.Host
	key   string
	conn  *audit.Conn
	rd    *audit.Reader
	rules audit.Rules
	want  []audit.Rule
	self  int
	exe   string

	mu     sync.Mutex
	ring   *audit.Ring
	newRec chan struct{} // closed and replaced on every event kept
	// overrun: the socket buffer overflowed since start (writers lost);
	// overruns counts the overflows the health look has not said yet.
	overrun  bool
	overruns int

	// canary is a file (in the state directory) covered by a rule of
	// ours: a write to it must come back as a record. The kernel sends
	// records in order, so once it has, every write before it has too:
	// it is also the barrier a report waits on. canarySeen counts its
	// records; canaryRec is closed and replaced on each.
	canary     string
	canarySeen uint64
	canaryRec  chan struct{}

	events chan audit.Event // config changes and denied attempts, for the loop
	done   chan struct{}    // closed by Stop: the goroutines end
	// paths are the declared paths of the entries in force (Loaded).
	paths []string

	state     string
	why       string
	lost      uint32
	lostKnown bool
	// reported is the state last journaled.
	reported string
}

// Options configure an Attributor.
type Options struct {
	// Root is the monitored tree: the kernel names paths without it, and
	// its passwd names login uids.
	Root *ondisk.Root
	// Key is the key of its audit rules ("": audit.Key).
	Key string
	// Canary is a file the part writes to prove that audit records arrive
	// ("" proves nothing, and says so).
	Canary string
	// Sessions answers login sessions (logind); nil: writers are named
	// without their session's user and remote host.
	Sessions Sessions
	// Leave reports whether a host path is left alone by the exclusions
	// (package exclude): no audit rule watches it. Nil leaves none.
	Leave func(hostPath string) bool
}

// New makes the attribution part; Start joins the audit record stream.
func New(o Options) *Attributor {
	key := o.Key
	if key == "" {
		key = audit.Key
	}
	a := &Attributor{o: o, key: key, ring: audit.NewRing(ringSize), newRec: make(chan struct{}), canaryRec: make(chan struct{}),
		events: make(chan audit.Event, 64), done: make(chan struct{}), self: os.Getpid(), canary: o.Canary}
	a.exe, _ = os.Executable()
	return a
}

// Name is the part's name in the daemon's table.
func (a *Attributor) Name() string { return "attribution" }

// healthInterval paces the look at the kernel's audit status (the lost
// counter grows without a record saying so) and the canary.
const healthInterval = 30 * time.Second

// Start joins the audit record stream; the rules follow with the entries
// (Loaded). On failure the daemon runs on, without attribution, and the
// part says why.
func (a *Attributor) Start(ctx context.Context, h part.Host) {
	a.h = h
	var err error
	// The reader first, so that no write after the rules goes unread.
	if a.rd, err = audit.Listen(audit.EventTypes...); err != nil {
		a.setState(StateUnavailable, err.Error())
		a.journalState(ctx)
		return
	}
	if a.conn, err = audit.Dial(); err != nil {
		a.rd.Close()
		a.rd = nil
		a.setState(StateUnavailable, err.Error())
		a.journalState(ctx)
		return
	}
	a.rules = audit.Rules{Conn: a.conn, Key: a.key}
	go a.read(a.done)
	go a.tick(a.done)
	go a.forward(ctx)
}

// Stop removes the rules and leaves the record stream.
func (a *Attributor) Stop() {
	close(a.done)
	if a.conn == nil {
		return
	}
	if err := a.rules.Clear(); err != nil {
		a.h.Log().Warn(fmt.Sprintf("removing the audit rules at stop: %v", err))
	}
	a.rd.Close()
	a.conn.Close()
}

// forward hands the loop what the reader and the tick send (handle).
func (a *Attributor) forward(ctx context.Context) {
	for {
		select {
		case e := <-a.events:
			if a.h.Do(ctx, func(lctx context.Context) { a.handle(lctx, e) }) != nil {
				return // stopping
			}
		case <-a.done:
			return
		}
	}
}

// Loaded makes the kernel's rules those the entries in force need.
func (a *Attributor) Loaded(ctx context.Context, entries []model.Entry) {
	a.paths = audit.DeclaredPaths(a.o.Root.Dir(), entries, a.o.Leave)
	a.syncRules(ctx)
}

// tick asks the loop for a health look every healthInterval.
func (a *Attributor) tick(done <-chan struct{}) {
	t := time.NewTicker(healthInterval)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			select {
			case a.events <- audit.Event{Config: &audit.ConfigChange{Op: healthOp}}:
			default:
			}
		case <-done:
			return
		}
	}
}

// healthOp marks the tick's synthetic event.
const healthOp = "drift-monitor-health"

func (a *Attributor) setState(state, why string) { a.state, a.why = state, why }

// read assembles the records into events until the reader is closed. It
// takes what each read brings at once: the ring, the waiters and the lock
// are touched once per read, not once per event (a write storm brings
// hundreds of events a read).
func (a *Attributor) read(done <-chan struct{}) {
	asm := audit.NewAssembler()
	var evs, writes []audit.Event
	for {
		recs, err := a.rd.Read()
		overrun := errors.Is(err, audit.ErrOverrun)
		if err != nil && !overrun {
			return // closed at stop
		}
		now := time.Now()
		evs, writes = evs[:0], writes[:0]
		for _, r := range recs {
			evs = asm.Append(evs, r, now)
		}
		evs = append(evs, asm.Flush(now)...)
		canaries := uint64(0)
		for _, e := range evs {
			// Every CONFIG_CHANGE: audit disabled, a never,task rule
			// added, our rules removed all change what we can claim.
			if e.Key != a.key && e.Config == nil {
				continue
			}
			if a.isCanary(e) {
				canaries++
				continue
			}
			if e.Config != nil || !e.Writer.Success {
				if !a.tell(e, done) {
					return
				}
				continue
			}
			writes = append(writes, e)
		}
		a.mu.Lock()
		for _, e := range writes {
			a.ring.Add(e)
		}
		if len(writes) > 0 {
			close(a.newRec)
			a.newRec = make(chan struct{})
		}
		if canaries > 0 {
			a.canarySeen += canaries
			close(a.canaryRec)
			a.canaryRec = make(chan struct{})
		}
		first := overrun && a.overruns == 0 // the first since the last look
		if overrun {
			a.overrun = true
			a.overruns++
		}
		a.mu.Unlock()
		// Records were lost: say so now, not at the next health look.
		if first && !a.tell(audit.Event{Config: &audit.ConfigChange{Op: healthOp}}, done) {
			return
		}
	}
}

// tell hands e to the loop (handle) unless the loop is far behind (a
// notice less, never a stall); false once stopping.
func (a *Attributor) tell(e audit.Event, done <-chan struct{}) bool {
	select {
	case a.events <- e:
	case <-done:
		return false
	default:
	}
	return true
}

func (a *Attributor) isCanary(e audit.Event) bool {
	if a.canary == "" || e.Writer.PID != a.self {
		return false
	}
	for _, p := range e.Paths {
		if p.Path == a.canary {
			return true
		}
	}
	return false
}

// barrier writes the canary and waits for its record: true once it came
// (and with it every record of an earlier write), false after canaryWait.
func (a *Attributor) barrier() bool {
	if a.canary == "" {
		return false
	}
	a.mu.Lock()
	seen, wait := a.canarySeen, a.canaryRec
	a.mu.Unlock()
	if err := os.WriteFile(a.canary, []byte(strconv.FormatUint(seen, 10)+"\n"), 0o600); err != nil {
		return false
	}
	deadline := time.NewTimer(canaryWait)
	defer deadline.Stop()
	for {
		select {
		case <-wait:
		case <-deadline.C:
			return false
		}
		a.mu.Lock()
		now := a.canarySeen
		wait = a.canaryRec
		a.mu.Unlock()
		if now > seen {
			return true
		}
	}
}

// syncRules makes the kernel's rules of our key those the entries in
// force need, and journals the attribution's state when it changes.
func (a *Attributor) syncRules(ctx context.Context) {
	if a.conn == nil {
		return
	}
	before := map[string]bool{}
	for _, r := range a.want {
		before[r.String()] = true
	}
	paths := a.paths
	if a.canary != "" {
		paths = append(slices.Clip(paths), a.canary)
	}
	want, err := audit.PlanWatches(paths, a.key, nil)
	if err != nil {
		// Never with the daemon's absolute root: said, not skipped.
		a.setState(StateRulesMissing, err.Error())
		a.journalState(ctx)
		return
	}
	a.want = want
	st, err := a.conn.Status()
	switch {
	case err != nil:
		a.setState(StateUnavailable, fmt.Sprintf("audit status: %v", err))
	case st.Enabled == 0:
		a.setState(StateAuditDisabled, "the kernel's audit is disabled (auditctl -s: enabled 0)")
	default:
		added, _, serr := a.rules.Sync(a.want)
		// A rule of the last plan added again was removed under us
		// (auditctl -D, a rules reload): say so.
		restored := 0
		for _, r := range added {
			if before[r.String()] {
				restored++
			}
		}
		if restored > 0 {
			a.h.Record(ctx, journal.LevelNotice, journal.MsgAttribution,
				fmt.Sprintf("Audit rules of drift-monitor were removed under it: added %d again", restored), journal.Attribution(StateRulesMissing))
		}
		a.setState(StateOK, "")
		if serr != nil {
			if st.Locked() {
				serr = fmt.Errorf("audit rules are locked (-e 2); install `drift-monitor audit-rules` in /etc/audit/rules.d/: %w", serr)
			}
			a.setState(StateRulesMissing, serr.Error())
		}
		if a.lostKnown && st.Lost > a.lost {
			a.setState(StateRecordsLost, fmt.Sprintf("the kernel lost %d audit records since the last look (auditctl -s: lost %d): writers may be missing; raise the backlog limit (auditctl -b)", st.Lost-a.lost, st.Lost))
		}
		if n := a.takeOverruns(); n > 0 {
			a.setState(StateRecordsLost, fmt.Sprintf("drift-monitor's audit socket overflowed %d times since the last look: records came faster than it read them, writers may be missing", n))
		}
		a.lost, a.lostKnown = st.Lost, true
		a.checkNeverTask()
		if a.state == StateOK && !a.barrier() {
			a.setState(StateCanaryFailed, canaryProblem(a.canary))
		}
	}
	a.journalState(ctx)
}

// takeOverruns is the number of socket overflows since the last call.
func (a *Attributor) takeOverruns() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := a.overruns
	a.overruns = 0
	return n
}

// checkNeverTask marks the state never-task when such a rule exists.
func (a *Attributor) checkNeverTask() {
	rules, err := a.conn.ListRules()
	if err != nil {
		return
	}
	for _, r := range rules {
		if r.NeverTask() {
			a.setState(StateNeverTask, fmt.Sprintf("the audit rule %q exempts tasks from auditing: their writes have no writer", r.String()))
			return
		}
	}
}

// journalState journals the attribution's state once when it changes.
func (a *Attributor) journalState(ctx context.Context) {
	key := a.state + "|" + a.why
	if key == a.reported {
		return
	}
	a.reported = key
	if a.state == StateOK {
		a.h.Record(ctx, slog.LevelInfo, journal.MsgAttribution,
			fmt.Sprintf("Attribution of drift to its writers: audit, %d watch rules with key %s", len(a.want), escape.Name(a.key)),
			journal.Attribution(a.state))
		return
	}
	a.h.Record(ctx, slog.LevelWarn, journal.MsgAttribution,
		fmt.Sprintf("Attribution of drift to its writers is not possible (%s): %s", a.state, escape.Text(a.why)),
		journal.Attribution(a.state), slog.String(journal.FieldAttributionWhy, a.why))
}

// handle takes, on the loop, what the reader and the tick sent.
func (a *Attributor) handle(ctx context.Context, e audit.Event) {
	if e.Config != nil {
		// Whatever changed (audit disabled, a never,task rule, our
		// rules), and on every tick: look again.
		a.syncRules(ctx)
		return
	}
	// A denied attempt changed nothing: a notice, not drift.
	for _, p := range e.Paths {
		if p.Path == "" || p.NameType == "PARENT" {
			continue
		}
		w := e.Writer
		a.h.Record(ctx, journal.LevelNotice, journal.MsgChangeDenied,
			fmt.Sprintf("Attempted change denied: %s %s", escape.Name(a.hostPath(p.Path)), describeWriter(w, a.userName(w.AUID), a.sessionOf(ctx, w).RemoteHost)),
			append([]slog.Attr{journal.Path(escape.Name(a.hostPath(p.Path)))}, writerAttrs(w, a.userName(w.AUID))...)...)
		return
	}
}

func canaryProblem(canary string) string {
	if canary == "" {
		return "no canary file (no state directory): nothing proves that records arrive"
	}
	return fmt.Sprintf("a write to %s produced no audit record within %s (a private network namespace? a never,task rule?)", canary, canaryWait)
}

// Attribute says who wrote each drift of a report. Writers are waited for
// once per report, not per drift: first the canary's record, which comes
// after those of writes that ended before it; then, for a drift still
// without one, a bounded wait — a writer preempted between its change
// (which inotify reported) and its syscall's exit (where the kernel writes
// the record) comes late. The first check's drift was written before the
// daemon read any record: nothing to wait for.
func (a *Attributor) Attribute(ctx context.Context, appeared []drift.Drift, r part.Report) []part.Writers {
	deadline := time.Now()
	if len(appeared) > 0 && r.Ready {
		a.beforeReport(ctx)
		deadline = deadline.Add(attributionWait)
	}
	out := make([]part.Writers, len(appeared))
	for i := range appeared {
		out[i] = a.attribute(ctx, &appeared[i], deadline, r)
	}
	return out
}

// beforeReport waits until the records of every write so far have
// arrived (the canary's barrier), and says when the canary failed.
func (a *Attributor) beforeReport(ctx context.Context) {
	// A failed canary is tried again by the health tick, not by every
	// report (each would wait canaryWait).
	if a.conn == nil || a.state != StateOK {
		return
	}
	if a.barrier() {
		return
	}
	a.setState(StateCanaryFailed, canaryProblem(a.canary))
	a.journalState(ctx)
}

// maxWriters bounds the writers named for one drift, newest first.
const maxWriters = 3

// attribute says who wrote dr, newest first (waiting until deadline for
// records still on their way).
func (a *Attributor) attribute(ctx context.Context, dr *drift.Drift, deadline time.Time, r part.Report) part.Writers {
	if a.state != StateOK {
		why := "attribution " + a.state
		return part.Writers{Suffix: " (writer unknown: " + why + ")", Attrs: []slog.Attr{journal.WriterUnknown(why)}, Unknown: why}
	}
	host := path.Join(a.o.Root.Dir(), dr.Path)
	q := audit.Query{Path: host}
	var st unix.Stat_t
	if unix.Lstat(host, &st) == nil {
		q.Inodes = append(q.Inodes, audit.Inode{Dev: audit.DevString(st.Dev), Ino: st.Ino})
	}
	if unix.Stat(path.Dir(host), &st) == nil {
		q.Parent = audit.Inode{Dev: audit.DevString(st.Dev), Ino: st.Ino}
	}
	var found []audit.Event
	for {
		a.mu.Lock()
		found = a.ring.Find(q)
		wait, overrun, complete := a.newRec, a.overrun, a.ring.Complete(r.LastCheck)
		a.mu.Unlock()
		if len(found) > 0 || !time.Now().Before(deadline) {
			if len(found) == 0 {
				why := "not covered by audit: no audited write to it (an ioctl such as chattr, or a write before drift-monitor started)"
				switch {
				case !r.Ready:
					why = "changed before drift-monitor started"
				case overrun:
					why = "audit records were lost: the socket buffer overflowed"
				case !complete:
					why = "the record of its write was evicted: more writes than drift-monitor keeps"
				}
				return part.Writers{Suffix: " (writer unknown: " + why + ")", Attrs: []slog.Attr{journal.WriterUnknown(why)}, Unknown: why}
			}
			break
		}
		t := time.NewTimer(time.Until(deadline))
		select {
		case <-wait:
		case <-t.C:
		}
		t.Stop()
	}
	var words []string
	var ws []dbusapi.Writer
	for i, e := range found {
		if i == maxWriters {
			words = append(words, fmt.Sprintf("and %d more", len(found)-maxWriters))
			break
		}
		sess := a.sessionOf(ctx, e.Writer)
		user := a.userName(e.Writer.AUID)
		if user == "" {
			user = sess.User
		}
		words = append(words, describeWriter(e.Writer, user, sess.RemoteHost)+a.selfMark(e.Writer))
		ws = append(ws, a.writer(e.Writer, user, sess))
	}
	w := found[0].Writer
	attrs := writerAttrs(w, a.userName(w.AUID))
	if sess := a.sessionOf(ctx, w); sess.RemoteHost != "" || sess.User != "" {
		if sess.RemoteHost != "" {
			attrs = append(attrs, journal.WriterAttr(journal.FieldWriterRemote, escape.Name(sess.RemoteHost)))
		}
		if sess.User != "" {
			attrs = append(attrs, journal.WriterAttr(journal.FieldWriterSessionUser, escape.Name(sess.User)))
		}
	}
	if unit := ws[0].Unit; unit != "" {
		attrs = append(attrs, journal.WriterAttr(journal.FieldWriterUnit, unit))
	}
	return part.Writers{Suffix: " changed by " + strings.Join(words, "; before that by "), Attrs: attrs, Writers: ws}
}

// writer is w as the bus gives it, every name escaped.
func (a *Attributor) writer(w audit.Writer, user string, sess Session) dbusapi.Writer {
	x := dbusapi.Writer{LoginUser: escape.Name(user), UID: w.UID, PID: uint32(w.PID),
		Comm: escape.Name(w.Comm), Exe: escape.Name(w.Exe), Syscall: escape.Name(w.Syscall),
		RemoteHost: escape.Name(sess.RemoteHost), SessionUser: escape.Name(sess.User), Unit: escape.Name(liveUnit(w)), Own: a.own(w)}
	if w.LoginUID() {
		auid := w.AUID
		x.AUID = &auid
	}
	if w.Session != audit.Unset {
		ses := w.Session
		x.Session = &ses
	}
	return x
}

// own reports whether w is the daemon itself or drift-monitor reconcile.
func (a *Attributor) own(w audit.Writer) bool {
	return w.PID == a.self || (a.exe != "" && w.Exe == a.exe)
}

// selfMark marks the daemon's own writes and drift-monitor reconcile's.
func (a *Attributor) selfMark(w audit.Writer) string {
	if a.own(w) {
		return " [drift-monitor's own write: reconcile]"
	}
	return ""
}

// describeWriter says who wrote, in words: "alice (auid 1000, session 3)
// running sed (pid 4242) with rename".
func describeWriter(w audit.Writer, user, remote string) string {
	var who string
	var more []string
	if w.LoginUID() {
		who = "auid " + strconv.FormatUint(uint64(w.AUID), 10)
		if user != "" {
			who, more = escape.Name(user), []string{who}
		}
		if w.Session != audit.Unset {
			sess := fmt.Sprintf("session %d", w.Session)
			if remote != "" {
				sess += " from " + escape.Name(remote)
			}
			more = append(more, sess)
		}
		if w.UID != w.AUID {
			more = append(more, fmt.Sprintf("as uid %d", w.UID))
		}
	} else {
		who = fmt.Sprintf("uid %d", w.UID)
		more = []string{"no login"}
	}
	if len(more) > 0 {
		who += " (" + strings.Join(more, ", ") + ")"
	}
	return fmt.Sprintf("%s running %s (pid %d) with %s", who, escape.Name(w.Comm), w.PID, w.Syscall)
}

func writerAttrs(w audit.Writer, user string) []slog.Attr {
	a := []slog.Attr{
		journal.WriterAttr(journal.FieldWriterPID, strconv.Itoa(w.PID)),
		journal.WriterAttr(journal.FieldWriterComm, escape.Name(w.Comm)),
		journal.WriterAttr(journal.FieldWriterExe, escape.Name(w.Exe)),
		journal.WriterAttr(journal.FieldWriterUID, strconv.FormatUint(uint64(w.UID), 10)),
		journal.WriterAttr(journal.FieldWriterAUID, strconv.FormatUint(uint64(w.AUID), 10)),
		journal.WriterAttr(journal.FieldWriterSes, strconv.FormatUint(uint64(w.Session), 10)),
		journal.WriterAttr(journal.FieldWriterSyscall, w.Syscall),
	}
	if user != "" {
		a = append(a, journal.WriterAttr(journal.FieldWriterUser, escape.Name(user)))
	}
	return a
}

// userName is the login uid's name in the root's passwd ("" unknown).
func (a *Attributor) userName(uid uint32) string {
	if uid == audit.Unset {
		return ""
	}
	data, err := a.o.Root.ReadFile("/etc/passwd")
	if err != nil {
		return ""
	}
	want := strconv.FormatUint(uint64(uid), 10)
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Split(line, ":")
		if len(f) >= 3 && f[2] == want {
			return f[0]
		}
	}
	return ""
}

// liveUnit is the systemd unit of the writer while it still runs (its
// comm unchanged: a reused pid names another process).
func liveUnit(w audit.Writer) string {
	comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", w.PID))
	if err != nil || strings.TrimSpace(string(comm)) != w.Comm {
		return ""
	}
	cg, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", w.PID))
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(cg), "\n") {
		if rest, ok := strings.CutPrefix(line, "0::"); ok {
			base := path.Base(rest)
			if strings.HasSuffix(base, ".service") || strings.HasSuffix(base, ".scope") {
				return base
			}
		}
	}
	return ""
}

// hostPath is the host path (inside the root) of a path as the kernel
// names it.
func (a *Attributor) hostPath(kernelPath string) string {
	dir := a.o.Root.Dir()
	if dir == "/" {
		return kernelPath
	}
	if rest, ok := strings.CutPrefix(kernelPath, strings.TrimSuffix(dir, "/")+"/"); ok {
		return "/" + rest
	}
	return kernelPath
}

// State is the state for drift_monitor_attribution_state.
func (a *Attributor) State() string { return a.state }

// Caveat is what the status line adds: nothing while attribution is ok,
// else that writers are unknown and why.
func (a *Attributor) Caveat() string {
	if a.state == StateOK {
		return ""
	}
	return "writers unknown: attribution " + a.state
}

// Sessions looks up a login session by its id (the audit record's ses=).
type Sessions interface {
	Session(ctx context.Context, id uint32) (Session, error)
}

// Session is what logind says of a login session.
type Session struct {
	User, RemoteHost, Service string
}

// sessionOf asks logind about the writer's session, bounded: "" fields when
// it cannot say (no logind, the session ended).
func (a *Attributor) sessionOf(ctx context.Context, w audit.Writer) Session {
	if a.o.Sessions == nil || w.Session == audit.Unset {
		return Session{}
	}
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	s, err := a.o.Sessions.Session(ctx, w.Session)
	if err != nil {
		return Session{}
	}
	return s
}
