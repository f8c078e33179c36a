package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/drift-monitor/drift-monitor/internal/accountdb"
	"github.com/drift-monitor/drift-monitor/internal/check"
	"github.com/drift-monitor/drift-monitor/internal/desired"
	"github.com/drift-monitor/drift-monitor/internal/desired/machineconfig"
	"github.com/drift-monitor/drift-monitor/internal/drift"
	"github.com/drift-monitor/drift-monitor/internal/escape"
	"github.com/drift-monitor/drift-monitor/internal/exclude"
	"github.com/drift-monitor/drift-monitor/internal/inhibit"
	"github.com/drift-monitor/drift-monitor/internal/model"
	"github.com/drift-monitor/drift-monitor/internal/ondisk"
	"github.com/drift-monitor/drift-monitor/internal/reconcile"
	"github.com/drift-monitor/drift-monitor/internal/selinux"
	"github.com/drift-monitor/drift-monitor/internal/systemd"
)

// ReconcileWho is who the inhibitor of a reconcile names: the daemon
// journals what was repaired when it sees one released.
const ReconcileWho = reconcile.InhibitorWho

func runReconcile(ctx context.Context, args []string, std Stdio) int {
	o, code, ok := parseReconcile(args, std.Err)
	if !ok {
		return code
	}
	if o.image {
		return reconcileImage(ctx, o, std)
	}
	fail := func(format string, a ...any) int {
		fmt.Fprintf(std.Err, "drift-monitor reconcile: %s\n", escape.Text(fmt.Sprintf(format, a...)))
		return ExitFailed
	}
	if os.Geteuid() != 0 {
		return fail("only root can reconcile: it writes declared files with their owners")
	}
	key, err := hostKey()
	if err != nil {
		fmt.Fprintf(std.Err, "drift-monitor reconcile: warning: %s: secret contents get no digests\n", escape.Text(err.Error()))
	}
	r, err := openRoot(o.root)
	if err != nil {
		return fail("%v", err)
	}
	defer r.Close()
	job, err := planReconcile(ctx, r, o, key, std.Err)
	if err != nil {
		return fail("%v", err)
	}
	defer job.close()
	if err := job.connect(ctx, std.Err); err != nil {
		return fail("%v", err)
	}
	rep, err := job.repair(ctx, std.Err)
	if err != nil {
		return fail("%v", err)
	}
	if len(o.names) == 0 {
		more, err := imageRefusals(ctx, r, job.state, job.rules)
		if err != nil {
			return fail("%v", err)
		}
		rep.Refused = append(rep.Refused, more...)
	}
	return rep.finish(o, std, fail)
}

// finish writes the report in o's format and returns the exit status: 1
// when something was not repaired, or (not a dry run) still differs.
func (r *reconcileReport) finish(o *reconcileOptions, std Stdio, fail func(string, ...any) int) int {
	var err error
	if o.format == "json" {
		err = r.writeJSON(std.Out)
	} else {
		err = r.writeText(std.Out)
	}
	if err != nil {
		return fail("writing the report: %v", err)
	}
	if len(r.Refused) > 0 || (!o.dryRun && len(r.Remaining) > 0) {
		return ExitDrift
	}
	return ExitClean
}

// reconcileOptions is reconcile's command line.
type reconcileOptions struct {
	configs          multiFlag
	exclude          exclude.Options
	format           formatFlag
	root, inhibitDir string
	dryRun           bool
	checkCerts       bool
	image            bool // restore the named undeclared changes to the image's default (reconcileimage.go)
	names            []string
}

func parseReconcile(args []string, errw io.Writer) (*reconcileOptions, int, bool) {
	o := &reconcileOptions{format: formatFlag("text"), exclude: exclude.DefaultOptions()}
	fs := newFlags("reconcile", errw)
	fs.Var(&o.configs, "config", "desired config `PATH` (file or directory; repeatable); replaces the default locations")
	fs.StringVar(&o.root, "root", "/", "repair the tree mounted at `DIR` as if it were /")
	fs.BoolVar(&o.dryRun, "dry-run", false, "print the plan, one line per step (what would be written where, and the drift it resolves), and write nothing")
	fs.Var(&o.format, "format", "output `FORMAT`: text or json (with the steps of the plan, or those done)")
	o.exclude.Register(fs)
	fs.StringVar(&o.inhibitDir, "inhibit-dir", inhibit.Dir, "`DIR` of inhibitor lock files (the live host's)")
	fs.BoolVar(&o.checkCerts, checkMCDCertsFlag, false, checkMCDCertsUsage+"; without it, reconcile leaves them to the MCD")
	fs.BoolVar(&o.image, "image", false, "put the named undeclared changes of /etc back to the OS image's default (only the paths named, never by default)")
	fs.Usage = func() {
		fmt.Fprintf(errw, "usage: drift-monitor reconcile [--config PATH]... [--root DIR] [--dry-run] [--format text|json]\n"+
			"                              [--exclude PATTERN]... [--exclude-from FILE] [PATH|UNIT]...\n"+
			"       drift-monitor reconcile --image [--root DIR] [--dry-run] [--format text|json]\n"+
			"                              [--exclude PATTERN]... [--exclude-from FILE] PATH...\n\n"+
			"Puts back what check reports as drift (all of it, or only the named paths and units),\n"+
			"as Ignition would have written it (root only): it plans each entry's steps from what\n"+
			"is there, then does them; --dry-run prints the plan and writes nothing. File contents\n"+
			"are never printed, only where they come from and their size.\n\n"+
			"It never writes a path the exclusions leave alone (the daemon's: "+exclude.DefaultFile+"\n"+
			"inside --root, and --exclude): the entries there are listed as left alone, which is\n"+
			"not a failure; a repair that would write one, or a named path that is excluded, is\n"+
			"listed as not repaired. Exit status: 0 nothing left to repair, 1 something could not\n"+
			"be repaired, 2 could not run.\n\n")
		fs.PrintDefaults()
	}
	code, ok := parse(fs, args)
	o.names = fs.Args()
	return o, code, ok
}

// reconcileJob is one reconcile: the state, the drift found before, what
// is to be repaired, and what it holds while it writes.
type reconcileJob struct {
	o      *reconcileOptions
	root   *ondisk.Root
	key    model.Key
	state  *model.State
	rules  *exclude.Rules
	sel    selection
	before []drift.Drift // the selected drift found first
	todo   []*model.Entry
	kinds  map[string][]drift.Kind
	res    reconcile.Result // the excluded paths named, refused before any step
	left   []exclude.Left   // the entries left alone, not named
	rec    *reconcile.Reconciler
	conn   *systemd.Conn
	lock   *inhibit.Lock
}

// planReconcile parses the state afresh (what is written must be what the
// config says now, not what a cache entry says it said), checks it, and
// selects what the command line asks for.
func planReconcile(ctx context.Context, r *ondisk.Root, o *reconcileOptions, key model.Key, warn io.Writer) (*reconcileJob, error) {
	state, err := loadDesired(nil, r, o.configs, "reconcile", warn)
	if err != nil {
		return nil, err
	}
	state.Entries = machineconfig.ApplyMCDExemptions(state.Entries, !o.checkCerts)
	all := state.Entries
	rules, left, err := applyExclusions(r, o.exclude, state)
	if err != nil {
		return nil, err
	}
	first, err := checkState(ctx, r, state, key, false, rules, nil)
	if err != nil {
		return nil, err
	}
	j := &reconcileJob{o: o, root: r, key: key, state: state, rules: rules, sel: selection{names: o.names}}
	if n := j.sel.undeclared(all); n != "" {
		return nil, fmt.Errorf("%q is not a declared path or unit: reconcile writes only what the desired configuration declares", n)
	}
	j.leave(left)
	j.before = j.sel.drift(first.Drift, state.Entries)
	j.todo, j.kinds = j.pick(state, j.before, func(*model.Entry) bool { return true })
	// The whole state decides the links followed on the way to a path and
	// the hard links made again, the entries left alone included; Leave
	// keeps every write off what they leave alone.
	j.rec = &reconcile.Reconciler{Root: r, Declared: ondisk.Declare(all), Entries: all, Leave: rules.Forbids, DryRun: o.dryRun}
	if j.rec.Labels, err = selinux.ForRoot(r.ReadFile); err != nil {
		fmt.Fprintf(warn, "drift-monitor reconcile: warning: nothing is labelled: %s\n", escape.Text(err.Error()))
	}
	return j, nil
}

// leave lists the entries the exclusions leave alone: as left alone when
// the command line names nothing, as not repaired (a failure: what was
// asked is not done) when it names them.
func (j *reconcileJob) leave(left []model.Entry) {
	for i, l := range j.rules.Report(left) {
		switch {
		case len(j.sel.names) == 0:
			j.left = append(j.left, l)
		case j.sel.named(&left[i]):
			j.res.Refuse(&left[i], nil, fmt.Sprintf("excluded by %s: reconcile never writes an excluded path (take it out of the exclusions to repair it)", l.ExcludedBy))
		}
	}
}

// pick groups the selected drift ds of state's entries that keep takes
// into the entries to repair and what differs of each (the entries the
// exclusions leave alone are out of state already).
func (j *reconcileJob) pick(state *model.State, ds []drift.Drift, keep func(*model.Entry) bool) ([]*model.Entry, map[string][]drift.Kind) {
	entries, kinds := reconcile.Group(state.Entries, ds)
	var todo []*model.Entry
	for _, e := range entries {
		if keep(e) {
			todo = append(todo, e)
		}
	}
	return todo, kinds
}

// connect, on a live host with something to repair, reaches systemd (which
// enables units and reloads) and, unless it is a dry run, takes the
// inhibitor: held while writing and until the second check is done, so
// that the daemon does not report the repair in flight; it re-reads and
// checks everything when it is released.
func (j *reconcileJob) connect(ctx context.Context, warn io.Writer) error {
	live := j.root.IsHost()
	if !live || len(j.todo) == 0 {
		return nil
	}
	if systemd.Booted() {
		conn, err := systemd.Connect(ctx)
		if err != nil {
			return fmt.Errorf("%w (enablement and daemon-reload go through systemd on a live host)", err)
		}
		j.conn, j.rec.Units = conn, conn
	}
	if j.o.dryRun {
		return nil
	}
	if err := inhibit.EnsureDir(j.o.inhibitDir); err != nil {
		return err
	}
	lock, err := inhibit.Take(j.o.inhibitDir, ReconcileWho, reconcileWhy(), os.Getpid())
	if err != nil {
		return err
	}
	j.lock = lock
	if j.conn != nil {
		if err := daemonSeesInhibitor(ctx, j.conn, os.Getpid()); err != nil {
			fmt.Fprintf(warn, "drift-monitor reconcile: warning: %s\n", escape.Text(err.Error()))
		}
	}
	return nil
}

// repair plans and (unless it is a dry run) applies in Ignition's order —
// the accounts first, then every node planned against the accounts as
// they are after that (internal/exec/stages/files/files.go, runImpl:
// createPasswd before createFilesystemsEntries) —, reloads systemd when
// unit files changed, and checks again: the state derived afresh, as
// `check` derives it, so that what it says is left is what a check says.
func (j *reconcileJob) repair(ctx context.Context, warn io.Writer) (*reconcileReport, error) {
	var accounts, nodes []*model.Entry
	for _, e := range j.todo {
		if reconcile.IsAccount(e) {
			accounts = append(accounts, e)
		} else {
			nodes = append(nodes, e)
		}
	}
	var done reconcile.Result
	if len(accounts) > 0 {
		var err error
		if done, nodes, err = j.repairAccounts(ctx, accounts); err != nil {
			return nil, err
		}
	}
	more := j.rec.Repair(ctx, nodes, j.kinds)
	done.Repaired = append(done.Repaired, more.Repaired...)
	done.Refused = append(done.Refused, more.Refused...)
	rep := &reconcileReport{Root: j.root.Dir(), DryRun: j.o.dryRun, Repaired: done.Repaired,
		Refused: append(j.res.Refused, done.Refused...), Remaining: j.before, LeftAlone: j.left}
	if j.o.dryRun {
		return rep, nil
	}
	if more.Units && j.conn != nil {
		if err := j.conn.Reload(ctx); err != nil {
			fmt.Fprintf(warn, "drift-monitor reconcile: %s\n", escape.Text(err.Error()))
		}
	}
	state, _, err := j.derive(j.root)
	if err == nil {
		var after check.Result
		if after, err = checkState(ctx, j.root, state, j.key, false, j.rules, nil); err == nil {
			rep.Remaining = j.sel.drift(after.Drift, state.Entries)
			return rep, nil
		}
	}
	return nil, fmt.Errorf("checking again after the repair: %w", err)
}

// repairAccounts repairs the users and groups (a dry run in a copy of the
// account files), then derives the state again with the owners resolved
// in the account files as that left them, and selects the nodes to repair
// from a check against it: a node owned by a user whose uid was just
// changed is owned by the new uid, the keys of a user just created are
// the user's.
func (j *reconcileJob) repairAccounts(ctx context.Context, accounts []*model.Entry) (reconcile.Result, []*model.Entry, error) {
	var host desired.Host = j.root
	if j.o.dryRun {
		preview, err := reconcile.NewAccountPreview(j.root)
		if err != nil {
			return reconcile.Result{}, nil, err
		}
		defer preview.Close()
		j.rec.Accounts, host = preview, preview.Host()
		defer func() { j.rec.Accounts = nil }()
	}
	done := j.rec.Repair(ctx, accounts, j.kinds)
	state, all, err := j.derive(host)
	if err != nil {
		return done, nil, fmt.Errorf("deriving the state again after the account repairs: %w", err)
	}
	res, err := checkState(ctx, j.root, state, j.key, false, j.rules, nil)
	if err != nil {
		return done, nil, fmt.Errorf("checking again after the account repairs: %w", err)
	}
	var nodes []*model.Entry
	nodes, j.kinds = j.pick(state, j.sel.drift(res.Drift, state.Entries), func(e *model.Entry) bool { return !reconcile.IsAccount(e) })
	j.rec.Declared, j.rec.Entries = ondisk.Declare(all), all
	return done, nodes, nil
}

// derive loads the state again, as the first load did (its warnings said
// once), reading the root's files through host: the state with the
// entries the exclusions leave alone taken out, as the first load's, and
// all its entries.
func (j *reconcileJob) derive(host desired.Host) (*model.State, []model.Entry, error) {
	state, err := loadDesiredFrom(nil, host, j.root, j.o.configs, "reconcile", io.Discard)
	if err != nil {
		return nil, nil, err
	}
	state.Entries = machineconfig.ApplyMCDExemptions(state.Entries, !j.o.checkCerts)
	all := state.Entries
	state.Entries, _ = j.rules.Split(all)
	return state, all, nil
}

// close releases the inhibitor (after the second check) and systemd.
func (j *reconcileJob) close() {
	if j.lock != nil {
		j.lock.Release()
	}
	if j.conn != nil {
		j.conn.Close()
	}
}

// inhibitorSeenTimeout bounds the wait for the daemon to show the
// inhibitor: it sees one within a second, on a machine that is not starved.
const inhibitorSeenTimeout = 15 * time.Second

// daemonSeesInhibitor waits until a running drift-monitor.service shows the
// inhibitor of pid in its status line. The daemon learns of inhibitors from
// inotify, as it learns of the writes: without the wait, a write could be
// seen before the inhibitor, and its repair reported as an ordinary change
// rather than as this reconcile's. A daemon that is not running is not
// waited for.
func daemonSeesInhibitor(ctx context.Context, conn *systemd.Conn, pid int) error {
	mark := fmt.Sprintf("%s (pid %d)", ReconcileWho, pid)
	deadline := time.Now().Add(inhibitorSeenTimeout)
	for {
		active, status, err := conn.ServiceStatus(ctx, "drift-monitor.service")
		switch {
		case err != nil:
			return fmt.Errorf("asking systemd whether the daemon sees the inhibitor: %w", err)
		case active != "active" && active != "reloading":
			return nil
		case strings.Contains(status, mark):
			return nil
		case time.Now().After(deadline):
			return fmt.Errorf("the daemon did not show the inhibitor within %v; it may report the repair as it happens", inhibitorSeenTimeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond): // a poll interval, bounded by the deadline above
		}
	}
}

// reconcileWhy says who ran the reconcile, for the inhibitor and the
// daemon's record: the user sudo or su was run by, where they say.
func reconcileWhy() string {
	why := fmt.Sprintf("repairing drift (uid %d", os.Getuid())
	for _, v := range []string{"SUDO_USER", "LOGNAME", "USER"} {
		if u := os.Getenv(v); u != "" {
			why += ", " + strings.ToLower(v) + " " + u
			break
		}
	}
	return why + ")"
}

// selection is which drift a reconcile is about: everything, or what the
// command line names (paths, or units).
type selection struct {
	names []string
}

// drift is the drift of the named paths and units: a drift's own path, or
// its entry's (a user's shell and password are kept in /etc/passwd and
// /etc/shadow: naming either repairs what differs of that user there, and
// /etc/passwd, the user's entry, all of it).
func (s selection) drift(ds []drift.Drift, entries []model.Entry) []drift.Drift {
	entryPath := map[string]string{}
	for i := range entries {
		if entries[i].Kind.Means().Source == model.FromAccounts {
			entryPath[entries[i].ID()] = entries[i].Path
		}
	}
	if len(s.names) == 0 {
		return ds
	}
	var out []drift.Drift
	for _, d := range ds {
		for _, n := range s.names {
			p := path.Clean(n)
			if d.Unit == n || (strings.HasPrefix(n, "/") && (d.Path == p || entryPath[d.EntryID] == p)) {
				out = append(out, d)
				break
			}
		}
	}
	return out
}

// undeclared returns a name that no entry has as its path or unit, or "".
func (s selection) undeclared(entries []model.Entry) string {
	for _, n := range s.names {
		found := false
		for i := range entries {
			if names(&entries[i], n) {
				found = true
				break
			}
		}
		if !found {
			return n
		}
	}
	return ""
}

// named reports whether the command line names e.
func (s selection) named(e *model.Entry) bool {
	return slices.ContainsFunc(s.names, func(n string) bool { return names(e, n) })
}

// names reports whether n, from the command line, names e: its unit, its
// path, or an account file it is judged by.
func names(e *model.Entry, n string) bool {
	return e.Unit == n || (strings.HasPrefix(n, "/") && e.Path == path.Clean(n)) || isAccountFile(e, n)
}

// isAccountFile reports whether n is an account file e, a user or group,
// is judged by (where its drift may be reported).
func isAccountFile(e *model.Entry, n string) bool {
	if e.Kind.Means().Source != model.FromAccounts {
		return false
	}
	for _, f := range accountdb.Files {
		if path.Clean(n) == f {
			return true
		}
	}
	return false
}

type reconcileReport struct {
	Root      string             `json:"root"`
	DryRun    bool               `json:"dry_run"`
	Clean     bool               `json:"clean"`
	Repaired  []reconcile.Action `json:"repaired"`
	Refused   []reconcile.Action `json:"not_repaired"`
	Remaining []drift.Drift      `json:"remaining"`
	// LeftAlone are the declared entries the exclusions leave alone:
	// neither checked nor written, and no failure.
	LeftAlone []exclude.Left `json:"left_alone"`
}

func (r *reconcileReport) writeJSON(w io.Writer) error {
	r.Clean = len(r.Refused) == 0 && (r.DryRun || len(r.Remaining) == 0)
	for _, l := range []*[]reconcile.Action{&r.Repaired, &r.Refused} {
		if *l == nil {
			*l = []reconcile.Action{}
		}
	}
	if r.Remaining == nil || r.DryRun {
		r.Remaining = []drift.Drift{}
	}
	if r.LeftAlone == nil {
		r.LeftAlone = []exclude.Left{}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

func (r *reconcileReport) writeText(w io.Writer) error {
	ew := &errWriter{w: w}
	verb := "repaired"
	if r.DryRun {
		verb = "would repair"
	}
	steps := 0
	for _, a := range r.Repaired {
		ew.printf("%s", stepLines(verb, &a))
		steps += len(a.Steps)
	}
	for _, a := range r.Refused {
		ew.printf("not repaired: %s: %s\n", actionNoun(&a), escape.Text(a.Problem))
		if a.Command != "" {
			ew.printf("  run: %s\n", escape.Text(a.Command))
		}
	}
	if !r.DryRun {
		for _, d := range r.Remaining {
			ew.printf("still differs: %s\n", d.Message)
		}
	}
	for _, l := range r.LeftAlone {
		ew.printf("left alone: %s\n", escape.Text(l.String()))
	}
	switch {
	case len(r.Repaired)+len(r.Refused) == 0 && len(r.Remaining) == 0:
		ew.printf("Nothing to repair.\n")
	case r.DryRun:
		ew.printf("Dry run: %s to repair in %s, %s not repairable; nothing was written.\n", count(len(r.Repaired), "entry", "entries"),
			count(steps, "step", "steps"), count(len(r.Refused), "entry", "entries"))
	case len(r.Refused) == 0 && len(r.Remaining) == 0:
		ew.printf("Repaired %s: no drift left.\n", count(len(r.Repaired), "entry", "entries"))
	default:
		ew.printf("Repaired %s; %s not repaired, %s left.\n", count(len(r.Repaired), "entry", "entries"),
			count(len(r.Refused), "entry", "entries"), count(len(r.Remaining), "difference", "differences"))
	}
	return ew.err
}

// stepLines is an action's steps, one line each: the entry, what the step
// writes (never content: its source and size), and the drift it resolves.
// An action with no step (what was to change is as declared by now) says
// so.
func stepLines(verb string, a *reconcile.Action) string {
	noun := actionNoun(a)
	if len(a.Steps) == 0 {
		return fmt.Sprintf("%s %s: nothing to write\n", verb, noun)
	}
	var b strings.Builder
	for _, s := range a.Steps {
		line := fmt.Sprintf("%s %s: %s", verb, noun, s.Says)
		if len(s.Resolves) > 0 {
			line += fmt.Sprintf(" [%s]", strings.Join(kindNames(s.Resolves), ", "))
		}
		b.WriteString(escape.Text(line) + "\n")
	}
	return b.String()
}

func kindNames(kinds []drift.Kind) []string {
	out := make([]string, len(kinds))
	for i, k := range kinds {
		out[i] = string(k)
	}
	return out
}

// actionNoun names an action's entry as drift messages do.
func actionNoun(a *reconcile.Action) string {
	e := &model.Entry{Kind: a.Entry, Path: a.Path, Unit: a.Unit, User: a.User}
	if a.Entry == model.KindUser || a.Entry == model.KindGroup {
		e.Account = &model.Account{Name: a.User + a.Group}
	}
	return drift.Noun(e)
}
