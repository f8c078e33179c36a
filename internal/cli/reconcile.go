package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path"
	"strings"
	"time"

	"github.com/drift-monitor/drift-monitor/internal/check"
	"github.com/drift-monitor/drift-monitor/internal/daemon"
	"github.com/drift-monitor/drift-monitor/internal/desired"
	"github.com/drift-monitor/drift-monitor/internal/drift"
	"github.com/drift-monitor/drift-monitor/internal/escape"
	"github.com/drift-monitor/drift-monitor/internal/inhibit"
	"github.com/drift-monitor/drift-monitor/internal/ondisk"
	"github.com/drift-monitor/drift-monitor/internal/reconcile"
	"github.com/drift-monitor/drift-monitor/internal/systemd"
)

// ReconcileWho is who the inhibitor of a reconcile names: the daemon
// journals what was repaired when it sees one released.
const ReconcileWho = reconcile.InhibitorWho

// reconcileOptions are reconcile's flags and arguments.
type reconcileOptions struct {
	configs, excludes  multiFlag
	format             formatFlag
	root, inhibitDir   string
	dryRun, checkCerts bool
	names              []string // the paths and units named, none for all
}

// parseReconcile parses reconcile's command line; when it returns false the
// command exits with code.
func parseReconcile(args []string, std Stdio) (o reconcileOptions, code int, ok bool) {
	fs := newFlags("reconcile", std.Err)
	o.format = formatFlag("text")
	fs.Var(&o.configs, "config", "desired config `PATH` (file or directory; repeatable); replaces the default locations")
	fs.StringVar(&o.root, "root", "/", "repair the tree mounted at `DIR` as if it were /")
	fs.BoolVar(&o.dryRun, "dry-run", false, "say what would be repaired, and write nothing")
	fs.Var(&o.format, "format", "output `FORMAT`: text or json")
	fs.Var(&o.excludes, "exclude", "leave declared paths matching `PATTERN` alone (repeatable; as the daemon's --exclude)")
	fs.StringVar(&o.inhibitDir, "inhibit-dir", inhibit.Dir, "`DIR` of inhibitor lock files (the live host's)")
	fs.BoolVar(&o.checkCerts, checkMCDCertsFlag, false, checkMCDCertsUsage+"; without it, reconcile leaves them to the MCD")
	fs.Usage = func() {
		fmt.Fprintf(std.Err, "usage: drift-monitor reconcile [--config PATH]... [--root DIR] [--dry-run] [--format text|json] [PATH|UNIT]...\n\n"+
			"Puts back what check reports as drift (all of it, or only the named paths and units),\n"+
			"as Ignition would have written it (root only). Exit status: 0 nothing left to repair,\n"+
			"1 something could not be repaired, 2 could not run.\n\n")
		fs.PrintDefaults()
	}
	if code, ok := parse(fs, args); !ok {
		return o, code, false
	}
	o.names = fs.Args()
	return o, 0, true
}

// checkExcludes refuses an --exclude pattern that is not absolute or not a
// pattern.
func checkExcludes(excludes []string) error {
	for _, x := range excludes {
		if !strings.HasPrefix(x, "/") {
			return fmt.Errorf("--exclude %q: not an absolute path pattern", x)
		}
		if _, err := path.Match(x, "/"); err != nil {
			return fmt.Errorf("--exclude %q: %v", x, err)
		}
	}
	return nil
}

func runReconcile(ctx context.Context, args []string, std Stdio) int {
	o, code, ok := parseReconcile(args, std)
	if !ok {
		return code
	}
	fail := func(format string, a ...any) int {
		fmt.Fprintf(std.Err, "drift-monitor reconcile: %s\n", escape.Text(fmt.Sprintf(format, a...)))
		return ExitFailed
	}
	if err := checkExcludes(o.excludes); err != nil {
		return fail("%v", err)
	}
	if os.Geteuid() != 0 {
		return fail("only root can reconcile: it writes declared files with their owners")
	}
	key, err := hostKey()
	if err != nil {
		fmt.Fprintf(std.Err, "drift-monitor reconcile: warning: %s: secret contents get no digests\n", escape.Text(err.Error()))
	}
	// The state is parsed afresh: what is written must be what the config
	// says now, not what a cache entry says it said.
	r, err := openRoot(o.root)
	if err != nil {
		return fail("%v", err)
	}
	defer r.Close()
	sel := selection{names: o.names, excludes: o.excludes}
	state, before, err := checkBeforeRepair(ctx, o, r, key, sel, std.Err)
	if err != nil {
		return fail("%v", err)
	}
	entries, kinds := reconcile.Group(state.Entries, sel.drift(before.Drift, state.Entries))
	todo, res := setExcludedAside(entries, kinds, sel)

	done, end, err := repair(ctx, o, r, state, sel, todo, kinds, std.Err)
	if err != nil {
		return fail("%v", err)
	}
	defer end() // after the second check
	res.Repaired = done.Repaired
	res.Refused = append(res.Refused, done.Refused...)
	remaining := sel.drift(before.Drift, state.Entries)
	if !o.dryRun {
		after, err := checkState(ctx, r, state, key)
		if err != nil {
			return fail("checking again after the repair: %v", err)
		}
		remaining = sel.drift(after.Drift, state.Entries)
	}
	rep := reconcileReport{Root: o.root, DryRun: o.dryRun, Repaired: res.Repaired, Refused: res.Refused, Remaining: remaining}
	if err := rep.write(std.Out, o.format); err != nil {
		return fail("writing the report: %v", err)
	}
	if len(res.Refused) > 0 || (!o.dryRun && len(remaining) > 0) {
		return ExitDrift
	}
	return ExitClean
}

// checkBeforeRepair loads the desired state and checks it, and refuses a
// name in sel that it does not declare.
func checkBeforeRepair(ctx context.Context, o reconcileOptions, r *ondisk.Root, key drift.Key, sel selection, warn io.Writer) (*desired.State, check.Result, error) {
	state, err := loadDesired(nil, r, o.configs, "reconcile", warn)
	if err != nil {
		return nil, check.Result{}, err
	}
	state.Entries = desired.ApplyMCDExemptions(state.Entries, !o.checkCerts)
	before, err := checkState(ctx, r, state, key)
	if err != nil {
		return nil, check.Result{}, err
	}
	if n := sel.undeclared(state.Entries); n != "" {
		return nil, check.Result{}, fmt.Errorf("%q is not a declared path or unit: reconcile writes only what the desired configuration declares", n)
	}
	return state, before, nil
}

// setExcludedAside returns the entries to repair, and a result that
// refuses those --exclude leaves alone.
func setExcludedAside(entries []*desired.Entry, kinds map[string][]drift.Kind, sel selection) (todo []*desired.Entry, res reconcile.Result) {
	for _, e := range entries {
		if sel.excluded(e.Path) {
			res.Refuse(e, kinds[e.ID()], "excluded (--exclude): left alone")
			continue
		}
		todo = append(todo, e)
	}
	return todo, res
}

// write writes the report in format (text or json).
func (r *reconcileReport) write(w io.Writer, format formatFlag) error {
	if format == "json" {
		return r.writeJSON(w)
	}
	return r.writeText(w)
}

// repair repairs todo, through systemd on a live host, then has systemd
// reload if units were written. What it holds (the inhibitor, the
// connection) is kept until end is called.
func repair(ctx context.Context, o reconcileOptions, r *ondisk.Root, state *desired.State, sel selection,
	todo []*desired.Entry, kinds map[string][]drift.Kind, warn io.Writer) (done reconcile.Result, end func(), err error) {
	rec := &reconcile.Reconciler{Root: r, Declared: ondisk.Declare(state.Entries), Entries: state.Entries, Leave: sel.excluded, DryRun: o.dryRun}
	var conn *systemd.Conn
	end = func() {}
	if r.IsHost() && len(todo) > 0 {
		if conn, end, err = startLiveRepair(ctx, o, warn); err != nil {
			return done, nil, err
		}
		if conn != nil {
			rec.Units = conn
		}
	}
	done = rec.Repair(ctx, todo, kinds)
	if done.Units && conn != nil && !o.dryRun {
		// Units were written: systemd reads them again.
		if err := conn.Reload(ctx); err != nil {
			fmt.Fprintf(warn, "drift-monitor reconcile: %s\n", escape.Text(err.Error()))
		}
	}
	return done, end, nil
}

// startLiveRepair prepares a repair of the live host: the connection to
// systemd, when it runs (nil otherwise), and, unless dry-run, the
// inhibitor, held until end is called: while writing and until the second
// check is done, so that the daemon does not report the repair in flight;
// it re-reads and checks everything when it is released.
func startLiveRepair(ctx context.Context, o reconcileOptions, warn io.Writer) (conn *systemd.Conn, end func(), err error) {
	var ends []func()
	end = func() {
		for i := len(ends) - 1; i >= 0; i-- {
			ends[i]()
		}
	}
	if systemd.Booted() {
		if conn, err = systemd.Connect(ctx); err != nil {
			return nil, nil, fmt.Errorf("%w (enablement and daemon-reload go through systemd on a live host)", err)
		}
		ends = append(ends, conn.Close)
	}
	if o.dryRun {
		return conn, end, nil
	}
	if err := inhibit.EnsureDir(o.inhibitDir); err != nil {
		end()
		return nil, nil, err
	}
	lock, err := inhibit.Take(o.inhibitDir, ReconcileWho, reconcileWhy(), os.Getpid())
	if err != nil {
		end()
		return nil, nil, err
	}
	ends = append(ends, func() { lock.Release() })
	if conn != nil {
		if err := daemonSeesInhibitor(ctx, conn, os.Getpid()); err != nil {
			fmt.Fprintf(warn, "drift-monitor reconcile: warning: %s\n", escape.Text(err.Error()))
		}
	}
	return conn, end, nil
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
// command line names (paths, or units), minus exclusions.
type selection struct {
	names    []string
	excludes []string
}

// drift is the drift of the named paths and units: a drift's own path, or
// its entry's (a user's shell and password are kept in /etc/passwd and
// /etc/shadow: naming either repairs what differs of that user there, and
// /etc/passwd, the user's entry, all of it).
func (s selection) drift(ds []drift.Drift, entries []desired.Entry) []drift.Drift {
	if len(s.names) == 0 {
		return ds
	}
	entryPath := map[string]string{}
	for i := range entries {
		if k := entries[i].Kind; k == desired.KindUser || k == desired.KindGroup {
			entryPath[entries[i].ID()] = entries[i].Path
		}
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
func (s selection) undeclared(entries []desired.Entry) string {
	for _, n := range s.names {
		found := false
		for i := range entries {
			if e := &entries[i]; e.Unit == n || (strings.HasPrefix(n, "/") && e.Path == path.Clean(n)) || isAccountFile(e, n) {
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

// isAccountFile reports whether n is an account file e, a user or group,
// is judged by (where its drift may be reported).
func isAccountFile(e *desired.Entry, n string) bool {
	if e.Kind != desired.KindUser && e.Kind != desired.KindGroup {
		return false
	}
	for _, f := range desired.AccountFiles {
		if path.Clean(n) == f {
			return true
		}
	}
	return false
}

// excluded matches a path against the patterns as the daemon's --exclude
// does.
func (s selection) excluded(p string) bool { return daemon.Excluded(s.excludes, p) }

type reconcileReport struct {
	Root      string             `json:"root"`
	DryRun    bool               `json:"dry_run"`
	Clean     bool               `json:"clean"`
	Repaired  []reconcile.Action `json:"repaired"`
	Refused   []reconcile.Action `json:"not_repaired"`
	Remaining []drift.Drift      `json:"remaining"`
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
	for _, a := range r.Repaired {
		ew.printf("%s %s: %s\n", verb, actionNoun(&a), escape.Text(strings.Join(a.Done, "; ")))
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
	switch {
	case len(r.Repaired)+len(r.Refused) == 0 && len(r.Remaining) == 0:
		ew.printf("Nothing to repair.\n")
	case r.DryRun:
		ew.printf("Dry run: %s to repair, %s not repairable.\n", count(len(r.Repaired), "entry", "entries"), count(len(r.Refused), "entry", "entries"))
	case len(r.Refused) == 0 && len(r.Remaining) == 0:
		ew.printf("Repaired %s: no drift left.\n", count(len(r.Repaired), "entry", "entries"))
	default:
		ew.printf("Repaired %s; %s not repaired, %s left.\n", count(len(r.Repaired), "entry", "entries"),
			count(len(r.Refused), "entry", "entries"), count(len(r.Remaining), "difference", "differences"))
	}
	return ew.err
}

// actionNoun names an action's entry as drift messages do.
func actionNoun(a *reconcile.Action) string {
	e := &desired.Entry{Kind: a.Entry, Path: a.Path, Unit: a.Unit, User: a.User}
	if a.Entry == desired.KindUser || a.Entry == desired.KindGroup {
		e.Account = &desired.Account{Name: a.User + a.Group}
	}
	return drift.Noun(e)
}
