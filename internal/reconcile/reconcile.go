// Package reconcile puts declared entries back the way Ignition would have
// written them: the repair of what a check (package check) found.
//
// It promises:
//   - only declared paths are written, and only those whose entries have
//     drift: an undeclared path is never touched (its own temporary nodes
//     aside, which it removes);
//   - every path is resolved inside the root as checks resolve it
//     (ondisk.Root.LocateDir: openat2 RESOLVE_IN_ROOT, no symbolic link
//     followed that Ignition would not have followed, never the last
//     component): nothing is written outside the root or through a link
//     someone else put among the parents;
//   - every write is atomic and durable: a temporary node in the same
//     directory, its content, owner and mode set and synced before it is
//     renamed over the path, then the directory synced. A crash at any step
//     leaves the old node or the new one, never a partial one;
//   - a directory that is not empty is never removed: an entry that would
//     need that is refused, and says so;
//   - what it cannot repair is listed with the reason: content it does not
//     have the bytes of (remote sources), owners it cannot resolve, kernel
//     arguments (with the rpm-ostree command that would fix them), entries
//     the caller excluded, accounts only the image has;
//   - no value reaches an account tool that the account files would not
//     take as one field (model.AccountProblem);
//   - a dry run plans the steps a run takes: its account repairs are made
//     with the same tools in a copy of the account files (AccountPreview),
//     and the enablement of a unit whose files it writes is planned from
//     what it writes (enablement.Tree.Plan);
//   - what it writes is labelled where Ignition's setfiles labels it
//     (ondisk.Root.LabelPath), the directories it makes on the way and the
//     account files after the account tools included.
//
// It does not promise that the machine is clean afterwards: the caller checks
// again. Nor does it order the accounts before the nodes across a state: the
// caller repairs the accounts (Repair of the account entries), derives the
// state again, and repairs the nodes of that state. It does not take an
// inhibitor or tell systemd to reload: that is the caller's (package cli)
// job, around Repair.
package reconcile

import (
	"context"
	"errors"
	"fmt"
	"path"
	"sort"
	"strings"

	"github.com/drift-monitor/drift-monitor/internal/drift"
	"github.com/drift-monitor/drift-monitor/internal/enablement"
	"github.com/drift-monitor/drift-monitor/internal/escape"
	"github.com/drift-monitor/drift-monitor/internal/model"
	"github.com/drift-monitor/drift-monitor/internal/ondisk"
	"github.com/drift-monitor/drift-monitor/internal/selinux"
	"golang.org/x/sys/unix"
)

// UnitFiles enables and disables units through the running systemd (on a
// live host); nil writes the links as `systemctl --root` writes them.
type UnitFiles interface {
	EnableUnitFiles(ctx context.Context, units []string) error
	DisableUnitFiles(ctx context.Context, units []string) error
}

// Reconciler repairs entries inside one root.
type Reconciler struct {
	Root *ondisk.Root
	// Declared holds the links and directories of the whole state
	// (ondisk.Declare), which decide the links followed on the way to a
	// path, as for checks.
	Declared *ondisk.Declared
	// FS does the writing; nil is SysFS.
	FS FS
	// Entries is the whole state: a hard link whose target is rewritten
	// (a new inode) is linked again even when it had no drift.
	Entries []model.Entry
	// Leave, when set, names the host paths left alone (the exclusions:
	// exclude.Rules.Forbids): an entry whose repair would write one is
	// refused (leave.go), and such a hard link is not linked again either.
	Leave func(hostPath string) bool
	// Units, when set, enables and disables units through systemd.
	Units UnitFiles
	// Commands runs the shadow-utils tools that repair users and groups;
	// nil runs them from PATH.
	Commands Commands
	// DryRun says what would be done, and does nothing.
	DryRun bool
	// Accounts, when set, is where a dry run makes its account repairs
	// (the root's own files are left alone): the tools run on the copy,
	// and the nodes planned after them are planned against what they left
	// there, as a run plans them against the root's.
	Accounts *AccountPreview
	// Labels, when set, are the root's policy file contexts: what is
	// repaired is labelled with its default, as Ignition's setfiles -F
	// labels what it writes.
	Labels *selinux.Contexts

	// planned is what the unit files and drop-ins repaired so far will
	// hold, for planning the enablement after them.
	planned map[string]enablement.Planned
}

// Action is one entry's repair, done or refused.
type Action struct {
	Entry model.Kind `json:"entry"`
	Path  string     `json:"path"`
	Unit  string     `json:"unit,omitempty"`
	User  string     `json:"user,omitempty"`
	Group string     `json:"group,omitempty"`
	// Drift lists what differed.
	Drift []drift.Kind `json:"drift"`
	// Done says what was written (or, with DryRun, would be): the Says of
	// Steps. It never holds content: at most its size.
	Done []string `json:"done,omitempty"`
	// Steps is the plan (with DryRun) or what was done of it, in order.
	Steps []Step `json:"steps,omitempty"`
	// Problem says why the entry was not repaired.
	Problem string `json:"problem,omitempty"`
	// Command is what the admin can run to repair what reconcile cannot.
	Command string `json:"command,omitempty"`
	// ID is the entry's (model.Entry.ID).
	ID string `json:"-"`
	// newInode: a new node was put at Path (its hard links must follow).
	newInode bool
}

// Result is what Repair did.
type Result struct {
	Repaired []Action
	Refused  []Action
	// Units is set when unit files, drop-ins, masks or enablement were
	// written: a live systemd needs a daemon-reload.
	Units bool
}

// Clean reports whether everything with drift was repaired.
func (r *Result) Clean() bool { return len(r.Refused) == 0 }

// Refuse lists an entry as not repaired, with why: for entries the caller
// excludes.
func (r *Result) Refuse(e *model.Entry, kinds []drift.Kind, why string) {
	a := newAction(e, kinds)
	a.Problem = why
	r.Refused = append(r.Refused, a)
}

func newAction(e *model.Entry, kinds []drift.Kind) Action {
	a := Action{Entry: e.Kind, Path: e.Path, Unit: e.Unit, User: e.User, Drift: kinds, ID: e.ID()}
	if e.Kind == model.KindGroup {
		a.Group = e.Account.Name
	}
	return a
}

// Group maps drift to the entries it belongs to: the entries with drift, in
// entries' order, and what differs of each.
func Group(entries []model.Entry, ds []drift.Drift) ([]*model.Entry, map[string][]drift.Kind) {
	kinds := map[string][]drift.Kind{}
	for _, d := range ds {
		kinds[d.EntryID] = append(kinds[d.EntryID], d.Kind)
	}
	var out []*model.Entry
	for i := range entries {
		if _, ok := kinds[entries[i].ID()]; ok {
			out = append(out, &entries[i])
		}
	}
	return out, kinds
}

// order is when an entry is repaired: nodes from the shallowest path down
// (a directory before what it holds, as Ignition's getOrderedCreationList
// orders them), then hard links (their targets are in place by then), then
// enablement (its unit files and masks are), then what is only listed.
func order(e *model.Entry) int {
	switch e.Kind.Means().Repair {
	case model.RepairAccount: // IsAccount
		// Accounts first, groups (/etc/group) before users (/etc/passwd),
		// as Ignition's files stage creates them before any node
		// (internal/exec/stages/files/files.go: createPasswd first): a
		// node may be owned by a declared user.
		return -1
	case model.RepairEnablement:
		return 2
	case model.NoRepair:
		return 3
	}
	if e.Type == model.TypeHardLink {
		return 1
	}
	return 0
}

// IsAccount says whether an entry is a user or a group (its row of
// model.Kinds repairs it with the account tools): repaired first, before
// any node is planned.
func IsAccount(e *model.Entry) bool {
	return e.Kind.Means().Repair == model.RepairAccount
}

// Repair repairs the entries that have drift (as Group returns them).
func (r *Reconciler) Repair(ctx context.Context, entries []*model.Entry, kinds map[string][]drift.Kind) Result {
	sorted := append([]*model.Entry(nil), entries...)
	sort.SliceStable(sorted, func(i, j int) bool {
		a, b := sorted[i], sorted[j]
		if oa, ob := order(a), order(b); oa != ob {
			return oa < ob
		}
		if da, db := strings.Count(a.Path, "/"), strings.Count(b.Path, "/"); da != db {
			return da < db
		}
		return a.Path < b.Path
	})
	fs := r.FS
	if fs == nil {
		fs = SysFS{}
	}
	w := &writer{root: r.Root, decl: r.Declared, fs: fs}
	if r.Labels != nil {
		w.label = r.Labels.Lookup
	}
	r.planned = map[string]enablement.Planned{}
	var res Result
	// Paths given a new inode, and paths whose repair failed: the hard
	// links to them follow them, or are not made. Units whose files were
	// written: their enablement follows them.
	rewritten, failed, units := map[string]bool{}, map[string]bool{}, map[string]bool{}
	first := sort.Search(len(sorted), func(i int) bool { return order(sorted[i]) >= 1 })
	var extra map[string]bool
	for k := 0; ; k++ {
		if k == first {
			sorted = r.relink(sorted, k, kinds, rewritten)
		}
		if extra == nil && (k >= len(sorted) || order(sorted[k]) >= 2) {
			sorted, extra = r.reenable(sorted, k, kinds, units)
		}
		if k >= len(sorted) {
			break
		}
		e := sorted[k]
		a := newAction(e, kinds[e.ID()])
		switch {
		case ctx.Err() != nil:
			a.Problem = fmt.Sprintf("not repaired: %v", ctx.Err())
		case e.Type == model.TypeHardLink && failed[e.Target]:
			a.Problem = fmt.Sprintf("its target %q was not repaired: it is not linked to it", e.Target)
		default:
			r.repair(ctx, w, e, &a)
		}
		if extra[e.ID()] && (a.Problem != "" || len(a.Steps) == 0) {
			// Its unit's files were written, and it had no drift: as
			// declared, or (a unit without a unit file) nothing to do;
			// the check after the repair says if it is not so.
			continue
		}
		if a.Problem != "" {
			failed[e.Path] = true
			res.Refused = append(res.Refused, a)
			continue
		}
		if a.newInode {
			rewritten[e.Path] = true
		}
		r.noteUnits(e, a.Steps, units)
		res.Repaired = append(res.Repaired, a)
		if e.Kind.Means().Unit {
			res.Units = true
		}
	}
	return res
}

// noteUnits notes what a repaired unit file, drop-in, mask or unmask
// leaves at its path, for the enablement planned after it (which a dry
// run cannot read from the disk), and its unit.
func (r *Reconciler) noteUnits(e *model.Entry, steps []Step, units map[string]bool) {
	for _, s := range steps {
		switch {
		case s.Path != e.Path:
		case e.Kind == model.KindUnit || e.Kind == model.KindDropin:
			if s.Op == OpWrite {
				r.planned[e.Path] = enablement.Planned{Content: s.content}
			}
		case e.Kind == model.KindMask:
			if s.Op == OpSymlink {
				r.planned[e.Path] = enablement.Planned{Masked: true}
			}
		case e.Kind == model.KindUnmask:
			if s.Op == OpRemove {
				r.planned[e.Path] = enablement.Planned{Removed: true}
			}
		default:
			continue
		}
		units[e.Unit] = true
	}
}

// reenable inserts at k, where enablement begins, the enablement entries
// of the state whose units' files were written, if they are not there
// yet: a unit file put back with its [Install] section is enabled in the
// same run, as a unit Ignition writes is at first boot (it writes the
// preset, systemd applies it), rather than at the next. extra names them:
// they are listed only if they have steps (one that cannot be planned had
// no drift: what it lacks is for the check after the repair to say).
func (r *Reconciler) reenable(sorted []*model.Entry, k int, kinds map[string][]drift.Kind, units map[string]bool) ([]*model.Entry, map[string]bool) {
	extra := map[string]bool{}
	var add []*model.Entry
	for i := range r.Entries {
		e := &r.Entries[i]
		if e.Kind != model.KindEnablement || !units[e.Unit] || r.Leave != nil && r.Leave(e.Path) {
			continue
		}
		if _, ok := kinds[e.ID()]; ok {
			continue
		}
		kinds[e.ID()] = []drift.Kind{drift.Enablement}
		extra[e.ID()] = true
		add = append(add, e)
	}
	return append(sorted[:k:k], append(add, sorted[k:]...)...), extra
}

// relink inserts at k, where the hard links begin, the hard links of the
// state whose targets were given a new inode, if they are not there yet:
// a rename over a file breaks its hard links, which Ignition made.
func (r *Reconciler) relink(sorted []*model.Entry, k int, kinds map[string][]drift.Kind, rewritten map[string]bool) []*model.Entry {
	var extra []*model.Entry
	for i := range r.Entries {
		e := &r.Entries[i]
		if e.Type != model.TypeHardLink || !rewritten[e.Target] || r.Leave != nil && r.Leave(e.Path) {
			continue
		}
		if _, ok := kinds[e.ID()]; ok {
			continue
		}
		kinds[e.ID()] = []drift.Kind{drift.HardLink}
		extra = append(extra, e)
	}
	return append(sorted[:k:k], append(extra, sorted[k:]...)...)
}

// problem is an entry that is not repaired, and why; a plain error is a
// write that failed.
type problem struct{ why, command string }

func (p *problem) Error() string { return p.why }

func refuse(format string, args ...any) error {
	return &problem{why: fmt.Sprintf(format, args...)}
}

func (r *Reconciler) repair(ctx context.Context, w *writer, e *model.Entry, a *Action) {
	steps, err := r.plan(w, e, a.Drift)
	if err == nil {
		if err = r.leaves(steps); err != nil {
			steps = nil // none is done
		}
	}
	a.Steps = steps
	if err == nil && (!r.DryRun || r.Accounts != nil && IsAccount(e)) {
		a.Steps, err = r.apply(ctx, w, steps)
	}
	a.Done = says(a.Steps)
	for _, s := range a.Steps {
		switch s.Op {
		case OpWrite, OpMkdir, OpSymlink, OpHardLink:
			a.newInode = a.newInode || s.Path == e.Path
		}
	}
	if err == nil {
		return
	}
	var p *problem
	if errors.As(err, &p) {
		a.Problem, a.Command = p.why, p.command
		return
	}
	var d *DetourError
	if errors.As(err, &d) {
		a.Problem = err.Error()
		return
	}
	a.Problem = fmt.Sprintf("writing failed: %v", err)
}

// plan decides an entry's repair from what is there now: it reads, and
// writes nothing.
func (r *Reconciler) plan(w *writer, e *model.Entry, kinds []drift.Kind) ([]Step, error) {
	m := e.Kind.Means() // how its kind is repaired, if it is (model.Kinds)
	switch {
	case has(kinds, drift.Unreadable):
		return nil, refuse("it could not be examined (see the check's message); nothing is written over what cannot be read")
	case m.Repair == model.NoRepair:
		return nil, notRepaired(e, m)
	case m.Repair == model.RepairAccount:
		return r.planAccount(e, kinds)
	case m.Repair == model.RepairEnablement:
		return r.planEnablement(e, kinds)
	case m.Repair == model.RepairNamed:
		// What the image declares goes back only when named, by
		// reconcile --image (which hands its nodes here as declared
		// ones), never with what a config declares.
		return nil, refuse("only a path named to drift-monitor reconcile --image is put back as the OS image has it")
	case (has(kinds, drift.Owner) && e.OwnerProblem != "") || (has(kinds, drift.Group) && e.GroupProblem != ""):
		return nil, refuse("its owner cannot be resolved in the root: %s", strings.TrimSpace(e.OwnerProblem+" "+e.GroupProblem))
	}
	f, err := r.observeNode(w, e)
	if err != nil {
		return nil, err
	}
	return planNode(e, kinds, &f)
}

func has(kinds []drift.Kind, k drift.Kind) bool {
	for _, x := range kinds {
		if x == k {
			return true
		}
	}
	return false
}

// notRepaired is why an entry whose kind reconcile does not repair is left
// as it is (its row of model.Kinds), with the command that changes it for
// the next boot where there is one: kernel arguments belong to the boot
// loader, which rpm-ostree manages.
func notRepaired(e *model.Entry, m *model.Meaning) error {
	p := &problem{why: m.NotRepaired}
	if m.Source == model.FromCmdline {
		op := "--append"
		if !e.ArgPresent {
			op = "--delete"
		}
		p.command = fmt.Sprintf("rpm-ostree kargs %s=%s", op, shellQuote(e.Arg))
	}
	return p
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_=.,:/+@%") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// Ignition's defaults for nodes it creates (internal/exec/util/file.go:
// DefaultFilePermissions, DefaultDirectoryPermissions), owned by root
// (SetPermissions, ResolveNodeUidAndGid with the new node's owner: Ignition's).
const (
	defaultFileMode = 0o644
	defaultDirMode  = 0o755
)

// wantMeta is the owner and mode Ignition gives the node: what is declared,
// else what the node there had (Ignition keeps an existing node's owner,
// and its mode when none is declared: SetPermissions), else its defaults.
// Optional special bits (ModeOptional: declared by a spec older than 3.6.0)
// are left out, as Ignition v2.27 leaves them out (it translates every
// older spec to 3.6.0 with "& ^07000": config/v3_6/translate/translate.go),
// and as Ignition 2.14 does for spec 3.3.0.
func wantMeta(e *model.Entry, ob *ondisk.Observation, sameType bool, defMode uint32) meta {
	m := meta{mode: defMode}
	if sameType {
		m = meta{uid: ob.UID, gid: ob.GID, mode: ob.Mode}
	}
	if e.Mode != nil {
		m.mode = *e.Mode
	}
	if e.UID != nil {
		m.uid = *e.UID
	}
	if e.GID != nil {
		m.gid = *e.GID
	}
	return m
}

// parentMeta is what Ignition gives the directories it creates on the way
// to a path: 0755 and root (MkdirForFile), but for SSH keys 0700 and the
// user's (internal/exec/util/passwd.go, writeAuthKeysFile: as_user.MkdirAll
// with 0700).
func parentMeta(e *model.Entry) meta {
	if e.Kind == model.KindSSHKeys && e.UID != nil && e.GID != nil {
		return meta{uid: *e.UID, gid: *e.GID, mode: 0o700}
	}
	return meta{mode: defaultDirMode}
}

// observeNode reads what planning an entry of a path takes: the node
// there, whether a directory there is empty, the content to write, a hard
// link's target. It writes nothing.
func (r *Reconciler) observeNode(w *writer, e *model.Entry) (nodeFacts, error) {
	o := ondisk.NewObserver(r.Root)
	defer o.Close()
	o.Declare(r.Declared)
	f := nodeFacts{ob: o.Observe(e)}
	if r.Labels != nil {
		f.label = r.Labels.Lookup
	}
	ob := &f.ob
	if ob.Err != nil || ob.Detour != nil || e.Type == model.TypeNotMasked {
		return f, nil
	}
	if ob.Resolved == "" {
		// A parent is missing: where the node lands once it is made, for
		// its label.
		ob.Resolved = r.Root.ResolvePath(e.Path, r.Declared)
	}
	f.labelAt = r.Root.LabelPath(e, ob)
	if ob.Type == ondisk.Directory && e.Type != model.TypeDirectory {
		dir, err := w.dir(path.Dir(e.Path))
		if err != nil {
			return f, opError("opening directory", path.Dir(e.Path), err)
		}
		f.emptyDir, err = w.emptyDir(dir, path.Base(e.Path))
		unix.Close(dir)
		if err != nil {
			return f, opError("reading directory", e.Path, err)
		}
	}
	if e.Type == model.TypeRegular && rewrites(e, ob) {
		f.content, f.contentErr = r.content(w, e, ob)
	}
	if e.Type == model.TypeHardLink {
		f.targetType, f.targetErr = r.targetOf(e.Target)
	}
	return f, nil
}

// targetOf is what stands at a hard link's target, resolved through the
// root's links as Ignition resolves it (WriteLink: JoinPath). One missing
// is no error here: an earlier entry of the same repair may make it, and
// apply looks again.
func (r *Reconciler) targetOf(target string) (ondisk.FileType, error) {
	tdir, err := r.Root.OpenDir(path.Dir(target))
	if errors.Is(err, unix.ENOENT) {
		return ondisk.Absent, nil
	}
	if err != nil {
		return ondisk.Absent, err
	}
	defer unix.Close(tdir)
	var st unix.Stat_t
	err = unix.Fstatat(tdir, path.Base(target), &st, unix.AT_SYMLINK_NOFOLLOW)
	if errors.Is(err, unix.ENOENT) {
		return ondisk.Absent, nil
	}
	if err != nil {
		return ondisk.Absent, err
	}
	if st.Mode&unix.S_IFMT == unix.S_IFDIR {
		return ondisk.Directory, nil
	}
	return ondisk.Regular, nil
}

// content is what a regular file must hold, as Ignition writes it: the
// decoded contents with their append fragments, or, for a file that is
// only appended to (overwrite false, no contents), its base (what it held
// before Ignition ran, see appendBase) with the fragments appended
// (internal/exec/util/file.go, PerformFetch with Append: O_APPEND on the
// existing file).
func (r *Reconciler) content(w *writer, e *model.Entry, ob *ondisk.Observation) ([]byte, error) {
	c := e.Content
	switch {
	case c == nil:
		if ob.Type == ondisk.Absent {
			return []byte{}, nil // Ignition creates an empty file
		}
		return nil, refuse("no content is declared, and what stands there is %s", ob.Type)
	case c.Unverifiable != "":
		return nil, refuse("its content comes from a source drift-monitor never fetches (%s)", c.Unverifiable)
	case c.Hash != nil:
		return nil, refuse("its content comes from a remote source (verified by %s): drift-monitor does not have the bytes and never fetches them", c.Hash.Algorithm)
	}
	if c.Stored != nil {
		// Only a lazy state cache makes contents Stored, and `reconcile`
		// loads without a cache: a state that has them is not one to
		// write from.
		return nil, fmt.Errorf("the declared content of %s is not in memory (a lazily cached state)", e.Path)
	}
	if c.Exact != nil {
		return c.Exact, nil
	}
	// Appended to what the file held before Ignition ran: its base.
	if ob.Type != ondisk.Regular && ob.Type != ondisk.Absent && ob.Type != ondisk.Directory {
		// Ignition refuses to append to anything but a regular file.
		return nil, refuse("its content is appended to what is there, and what is there is %s", ob.Type)
	}
	base, err := r.appendBase(w, e, ob)
	if err != nil {
		return nil, err
	}
	return append(base, c.Suffix...), nil
}

// planEnablement enables or disables a unit: through systemd when Units
// is set, else with the links `systemctl --root` writes.
func (r *Reconciler) planEnablement(e *model.Entry, kinds []drift.Kind) ([]Step, error) {
	if e.Enabled == nil {
		return nil, nil
	}
	through := r.Units != nil
	if through && !has(kinds, drift.Enablement) {
		// Added after its unit's files (reenable): through systemd only
		// if the links say it is not as declared.
		steps, err := r.planLinks(e, kinds)
		if err != nil || len(steps) == 0 {
			return nil, err
		}
	}
	if through {
		if *e.Enabled {
			return []Step{{Op: OpEnable, Unit: e.Unit, Says: "enable it through systemd", Resolves: kinds}}, nil
		}
		return []Step{{Op: OpDisable, Unit: e.Unit, Says: "disable it through systemd", Resolves: kinds}}, nil
	}
	return r.planLinks(e, kinds)
}

// planLinks makes or removes the links `systemctl --root` enable or
// disable would, reading the unit files as the repair leaves them.
func (r *Reconciler) planLinks(e *model.Entry, kinds []drift.Kind) ([]Step, error) {
	t, err := enablement.New(r.Root)
	if err != nil {
		return nil, err
	}
	defer t.Close()
	t.Plan(r.planned)
	if *e.Enabled {
		links, err := t.EnableLinks(e.Unit)
		if err != nil {
			return nil, refuse("it cannot be enabled: %v", err)
		}
		return r.planEnableLinks(links, kinds)
	}
	links, err := t.DisableLinks(e.Unit)
	if err != nil {
		return nil, refuse("it cannot be disabled: %v", err)
	}
	var steps []Step
	for _, p := range links {
		steps = append(steps, Step{Op: OpRemove, Path: p, Says: fmt.Sprintf("remove %q", p), Resolves: kinds, prune: true})
	}
	return steps, nil
}

// planEnableLinks makes the links of an enable that are not there.
func (r *Reconciler) planEnableLinks(links []enablement.Link, kinds []drift.Kind) ([]Step, error) {
	var steps []Step
	for _, l := range links {
		e := &model.Entry{Kind: model.KindLink, Path: l.Path, Type: model.TypeSymlink, Target: l.Target}
		o := ondisk.NewObserver(r.Root)
		ob := o.Observe(e)
		o.Close()
		switch {
		case ob.Err != nil:
			return nil, refuse("%q cannot be examined: %v", l.Path, ob.Err)
		case ob.Detour != nil:
			return nil, &DetourError{Detour: *ob.Detour}
		case ob.Type == ondisk.Symlink && ob.Target == l.Target:
			continue
		case ob.Type != ondisk.Absent:
			// systemctl enable refuses too ("File exists") unless forced.
			return nil, refuse("%q is %s, not a link to %q: systemctl enable would refuse it too", l.Path, ob.Type, l.Target)
		}
		// systemd makes the .wants directories 0755, and labels them and
		// the link as the policy says (install.c, create_symlink:
		// mkdir_parents_label, symlink_atomic_label).
		if ob.Resolved == "" {
			ob.Resolved = r.Root.ResolvePath(l.Path, nil)
		}
		at := r.Root.LabelPath(e, &ob)
		steps = append(steps, Step{Op: OpSymlink, Path: l.Path, target: l.Target, parent: meta{mode: defaultDirMode}, labelAt: at,
			Says: fmt.Sprintf("link %q to %q", l.Path, l.Target), Resolves: kinds})
		if r.Labels == nil {
			continue
		}
		if want, ok := r.Labels.Lookup(at, selinux.Symlink); ok {
			steps = append(steps, Step{Op: OpLabel, Path: l.Path, label: want, Says: "set the SELinux label " + escape.Name(want)})
		}
	}
	return steps, nil
}

// InhibitorWho is who a reconcile's inhibitor names: the daemon journals
// what was repaired when it sees one released.
const InhibitorWho = "drift-monitor reconcile"
