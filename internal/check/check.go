// Package check runs the comparison of a desired state with a machine: every
// entry in parallel for a full check, or one entry at a time for the daemon's
// event-driven re-checks.
//
// It promises that a full check spreads over the cores and that re-checking
// one entry costs the same however many entries the state has. With a
// ReadLimit it also promises that no entry costs more than reading that many
// bytes: a content comparison that would read more is deferred (Deferred,
// Outcome.Deferred) for ReadContent to finish on a goroutine that may take
// that long, and the check says which. It does not cache observations: every
// call looks at the disk again. In particular a full check compares every
// content by reading it, never by finding its file's stamp (inode, size,
// times) as an earlier check left it: the times can be made to repeat (a
// clock set back, a write below the filesystem), and a check that read
// nothing of the file would not see that change. (Only the one read a
// deferred comparison waits for, ReadContent, stands for the stamp it read.)
// A full check therefore costs at least a read of every declared file.
package check

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"sort"
	"sync"

	"github.com/drift-monitor/drift-monitor/internal/buslink"
	"github.com/drift-monitor/drift-monitor/internal/drift"
	"github.com/drift-monitor/drift-monitor/internal/enablement"
	"github.com/drift-monitor/drift-monitor/internal/model"
	"github.com/drift-monitor/drift-monitor/internal/ondisk"
	"github.com/drift-monitor/drift-monitor/internal/osstate"
)

// UnitStates answers what `systemctl is-enabled` would answer for a unit.
// An error wrapping buslink.ErrUnavailable means that there is no answer
// now (systemd cannot be reached): the entry's state is unknown, which is
// neither drift nor clean (see Result.Unknown). Any other error is drift:
// the state cannot be determined.
type UnitStates interface {
	UnitFileState(unit string) (string, error)
}

// Passes are UnitStates that read the unit files themselves
// (enablement.Offline): Pass returns one Tree for a check pass, which
// answers every unit of the pass from one reading of the unit search path.
// The Checker closes it when the pass is over.
type Passes interface {
	Pass() (*enablement.Tree, error)
}

// Cmdline returns the running kernel's command line; nil when the machine
// checked is not the live host (kernel arguments are then not checked).
type Cmdline func() (string, error)

// ProcCmdline reads /proc/cmdline.
func ProcCmdline() (string, error) {
	b, err := os.ReadFile("/proc/cmdline")
	return string(b), err
}

// Checker compares entries with what is inside Root.
type Checker struct {
	Root    *ondisk.Root
	Units   UnitStates
	Cmdline Cmdline
	// NextBoot, on a live host, reads the next boot's command line (nil: the
	// running kernel's is all there is). Declared kernel arguments are
	// checked against the next boot when it says; a running kernel that
	// differs is then a "reboot pending" notice, not drift.
	NextBoot NextBoot
	// Declared holds the links and directories of the state the entries
	// belong to (ondisk.Declare), which decide the symlinks followed on
	// the way to a path. All collects it from its entries when it is nil;
	// Entry needs it set.
	Declared *ondisk.Declared
	// Key keys the digests of content that must not be shown (see
	// model.Key); the zero Key leaves them out.
	Key model.Key
	// Store reads back the declared contents that the entries hold as
	// model.Stored (their state's Store), for a diff; nil when none are
	// stored. A load replaces it with the state's: it is read only while
	// entries of that state are checked (All, Outcome), never by
	// ReadContent.
	Store model.ContentStore
	// Commands, on a live host, runs systemctl and journalctl, which tell
	// the previous boot's ostree finalization failure (osstate.
	// FinalizationFailure); nil: it is not looked for.
	Commands osstate.Commands
	// WaitForAccountLocks makes an account entry's state unknown while a
	// live shadow-utils writer holds the account files' locks (see
	// ondisk.Accounts.Lock): the daemon re-checks it when the lock goes,
	// rather than report the half-way state of one useradd. A one-shot
	// check reads the files as they are.
	WaitForAccountLocks bool
	// Workers bounds the parallelism of a full check (default: 2 per core; the
	// work is mostly waiting on system calls).
	Workers int
	// ReadLimit bounds what a full check reads of one file to compare its
	// content (ondisk.Observer.ReadLimit): the content of a larger one is
	// deferred. Zero reads everything, as `drift-monitor check` does.
	ReadLimit int64
	// Exclude, when set, leaves out the drift and notices it is true of,
	// of every kind of entry: what the exclusions leave unreported
	// (exclude.Rules.DriftFilter).
	Exclude func(*drift.Drift) bool
	// Labels, when set, compares SELinux labels with the policy's defaults
	// (LoadLabels).
	Labels *Labels
	// NoDiff, when set, is true of an entry whose content drift would not
	// be shown: the daemon journals a drift's diff when the drift appears,
	// so one it knows already needs none. No diff is made of it then, nor
	// its declared bytes read back from the Store (under a write storm on
	// a drifted file every event would make one, of the whole file). A
	// full check calls it from its workers at once.
	NoDiff func(e *model.Entry) bool
	// NoMeta observes without the metadata (ondisk.Observer.NoMeta): only
	// to measure what it costs.
	NoMeta bool
}

// Observer returns an observer of c.Root with c's ReadLimit.
func (c *Checker) Observer() *ondisk.Observer {
	o := ondisk.NewObserver(c.Root)
	o.ReadLimit = c.ReadLimit
	o.NoMeta = c.NoMeta
	o.NoLabel = !c.Labels.checks()
	return o
}

// Result is the outcome of a check.
type Result struct {
	Drift   []drift.Drift
	Notices []drift.Drift
	Checked int
	// Unknown lists the IDs of the entries whose state could not be
	// determined now (see UnitStates): a caller that knew their state keeps
	// what it knew.
	Unknown []string
	// Deferred lists the entries whose content was not compared (ReadLimit):
	// Drift holds everything else found of them.
	Deferred []Deferred
	// AccountLock is the lock on the account files that left the user and
	// group entries unknown (WaitForAccountLocks); nil when none did.
	AccountLock *ondisk.AccountLock
}

// Deferred is an entry whose content comparison was deferred, and the
// version of its file that was seen.
type Deferred struct {
	Index int // in the entries checked
	Stamp ondisk.Stamp
}

// Outcome is one entry's check.
type Outcome struct {
	Drift []drift.Drift
	// Deferred: the content was not compared (the observer's ReadLimit);
	// Drift holds everything else, and ReadContent does the rest for the
	// version Stamp names.
	Deferred bool
	Stamp    ondisk.Stamp
	// Unknown: the state could not be determined now (see UnitStates);
	// Drift is then empty, and means nothing. Lock, for a user or group
	// entry, is the lock it waits for (WaitForAccountLocks).
	Unknown bool
	Lock    *ondisk.AccountLock
	// Notices are the entry's notices that depend on what is on disk (a
	// kept node's metadata: drift.MetaNotices; a unit declared enabled that
	// cannot be: drift.CannotEnableNotice).
	Notices []drift.Drift
}

// Clean reports whether no drift was found and every content compared: an
// entry whose content was deferred is not judged yet, and is not clean.
func (r *Result) Clean() bool { return len(r.Drift) == 0 && len(r.Deferred) == 0 }

// chunk is the number of consecutive entries a worker takes at once: entries
// are sorted by path, so a chunk mostly shares parent directories, which the
// worker's observer keeps open.
const chunk = 64

// All checks every entry. When ctx is done before every entry was checked,
// the result is partial (unchecked entries show no drift): callers must look
// at ctx.Err() before trusting it.
func (c *Checker) All(ctx context.Context, entries []model.Entry) Result {
	k := c.passKargs(ctx, entries)
	p := c.observeAll(ctx, entries, &k)
	return c.summarise(ctx, entries, &k, p)
}

// passKargs reads, once for a pass, what the entries' kinds are compared
// with beyond their files: command lines, the OS, the account files.
func (c *Checker) passKargs(ctx context.Context, entries []model.Entry) kargs {
	var k kargs
	if needs(entries, model.FromCmdline) {
		k = c.readKargs()
	}
	if needs(entries, model.FromOS) {
		k.os = c.readOS(ctx, entries)
	}
	if needs(entries, model.FromAccounts) {
		k.accounts = c.Root.ObserveAccounts()
	}
	return k
}

// passOutcomes are the Outcomes of a pass's entries, by index.
type passOutcomes struct {
	drift    [][]drift.Drift
	notices  [][]drift.Drift
	known    []bool
	deferred []Deferred // in no order
}

// workers is how many goroutines check n entries in chunks.
func (c *Checker) workers(n int) int {
	w := c.Workers
	if w <= 0 {
		w = 2 * runtime.GOMAXPROCS(0)
	}
	return min(w, (n+chunk-1)/chunk)
}

// observeAll checks every entry on c.workers goroutines, each taking chunks
// of consecutive entries, until ctx is done.
func (c *Checker) observeAll(ctx context.Context, entries []model.Entry, k *kargs) *passOutcomes {
	p := &passOutcomes{drift: make([][]drift.Drift, len(entries)), notices: make([][]drift.Drift, len(entries)),
		known: make([]bool, len(entries))}
	decl := c.Declared
	if decl == nil {
		decl = ondisk.Declare(entries)
	}
	units := c.newPass()
	defer units.close()
	next := make(chan int)
	var wg sync.WaitGroup
	var mu sync.Mutex // p.deferred
	for range c.workers(len(entries)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			o := c.Observer()
			defer o.Close()
			o.Declare(decl)
			for start := range next {
				for i := start; i < min(start+chunk, len(entries)); i++ {
					out := c.entry(o, &entries[i], k, nil, units)
					p.drift[i], p.known[i], p.notices[i] = out.Drift, !out.Unknown, out.Notices
					if out.Deferred {
						mu.Lock()
						p.deferred = append(p.deferred, Deferred{Index: i, Stamp: out.Stamp})
						mu.Unlock()
					}
				}
			}
		}()
	}
	for start := 0; start < len(entries) && ctx.Err() == nil; start += chunk {
		select {
		case next <- start:
		case <-ctx.Done():
		}
	}
	close(next)
	wg.Wait()
	return p
}

// summarise gathers a pass's outcomes into a Result, in the entries' order,
// with the notices that concern the pass or an entry's kind rather than
// what was observed of it.
func (c *Checker) summarise(ctx context.Context, entries []model.Entry, k *kargs, p *passOutcomes) Result {
	res := Result{Checked: len(entries), Deferred: p.deferred}
	if c.WaitForAccountLocks {
		res.AccountLock = k.accounts.Lock
	}
	trusted := ondisk.SeesTrusted()
	if n := c.Labels.notice(entries); n != nil {
		res.Notices = append(res.Notices, *n)
	}
	for i := range entries {
		e := &entries[i]
		res.Notices = append(res.Notices, p.notices[i]...)
		src := e.Kind.Means().Source
		if !trusted && src == model.FromNode && e.Type <= model.TypeSymlink {
			res.Notices = append(res.Notices, drift.TrustedUnchecked(e))
			trusted = true // said once
		}
		if src == model.FromNothing {
			res.Checked-- // a notice that something is not checked
		}
		res.Drift = append(res.Drift, p.drift[i]...)
		if !p.known[i] && ctx.Err() == nil {
			res.Unknown = append(res.Unknown, e.ID())
		}
		ns, notChecked := c.kindNotices(e, k)
		if notChecked {
			res.Checked-- // "not applicable" or "not checked" is no match
		}
		res.Notices = append(res.Notices, ns...)
	}
	if k.os != nil && k.os.finalization != nil {
		res.Notices = append(res.Notices, *k.os.finalization)
	}
	res.Notices = c.exclude(res.Notices) // those of the pass, not of one entry, too
	drift.Sort(res.Drift)
	sort.Slice(res.Deferred, func(i, j int) bool { return res.Deferred[i].Index < res.Deferred[j].Index })
	return res
}

// kindNotices are e's notices that follow from its kind and the pass's
// kargs, not from its observation; notChecked says one of them means it
// was not compared (a MachineConfig field not applicable or not checked).
func (c *Checker) kindNotices(e *model.Entry, k *kargs) (ns []drift.Drift, notChecked bool) {
	if n := drift.Notice(e); n != nil {
		ns = append(ns, *n)
	}
	src := e.Kind.Means().Source
	if src == model.FromCmdline && k.nextOK && k.nextErr == nil && k.runErr == nil {
		if n := drift.PendingReboot(e, k.running, k.next, k.nextSource); n != nil {
			ns = append(ns, *n)
		}
	}
	if src == model.FromOS {
		mc := k.os.compare(e).Notices
		notChecked = notCompared(mc)
		ns = append(ns, mc...)
	}
	if src == model.FromCmdline && c.Cmdline == nil {
		ns = append(ns, drift.Drift{Kind: drift.Unverifiable, Entry: e.Kind, Path: e.Path,
			Message: fmt.Sprintf("%s is not checked: kernel arguments are checked on the live host only", drift.Noun(e)), EntryID: e.ID()})
	}
	return ns, notChecked
}

// Outcome checks one entry with a fresh view of its parent directory, and
// says whether its content was deferred: with an observer that has a
// ReadLimit, a content too large to be compared is left out. Unknown says
// its state could not be determined now (see UnitStates): Drift is then
// empty, and means nothing. With read (a ReadContent of the entry), the content comparison
// is taken from it when the file is still the version it read; otherwise
// read is of no use and the content is compared, or deferred, afresh.
func (c *Checker) Outcome(o *ondisk.Observer, e *model.Entry, read *ContentRead) Outcome {
	b := c.NewBatch()
	defer b.Close()
	return c.OutcomeIn(b, o, e, read)
}

// A Batch is one reading of the unit files shared by the Outcomes of entries
// checked together (those a batch of events affects), as a full check
// shares one: make it with NewBatch, pass it to OutcomeIn, Close it after.
// It reads nothing until an enablement entry needs it.
type Batch struct{ units *passUnits }

// NewBatch starts a Batch.
func (c *Checker) NewBatch() *Batch { return &Batch{units: c.newPass()} }

// Close releases what the Batch read.
func (b *Batch) Close() { b.units.close() }

// OutcomeIn is Outcome with the unit files read once for the Batch b.
func (c *Checker) OutcomeIn(b *Batch, o *ondisk.Observer, e *model.Entry, read *ContentRead) Outcome {
	o.Declare(c.Declared)
	o.Forget()
	var k kargs
	switch e.Kind.Means().Source {
	case model.FromCmdline:
		k = c.readKargs()
	case model.FromAccounts:
		k.accounts = c.Root.ObserveAccounts()
	case model.FromOS:
		k.os = c.readOS(context.Background(), []model.Entry{*e})
	}
	return c.entry(o, e, &k, read, b.units)
}

// kargs are the command lines a check compares kernel arguments with.
type kargs struct {
	running    []string
	runErr     error
	next       []string
	nextSource string
	nextOK     bool
	nextErr    error
	// os is what a MachineConfig's fields beyond Ignition are checked
	// against (mcfields.go).
	os *osView
	// accounts is the account files, for user and group entries.
	accounts ondisk.Accounts
}

// needs reports whether an entry of entries is compared with src (its
// kind's row of model.Kinds): what a pass reads once for all of them.
func needs(entries []model.Entry, src model.Source) bool {
	// By index, and a kind's meaning looked up only where the kind changes:
	// entries of one kind come together, and a copy of each entry and a
	// lookup for each were a noticeable part of a large check's CPU.
	var last model.Kind
	for i := range entries {
		if k := entries[i].Kind; i == 0 || k != last {
			if k.Means().Source == src {
				return true
			}
			last = k
		}
	}
	return false
}

func (c *Checker) readKargs() kargs {
	var k kargs
	if c.Cmdline == nil {
		return k
	}
	s, err := c.Cmdline()
	k.running, k.runErr = model.SplitKernelArguments(s), err
	if c.NextBoot != nil {
		var next string
		next, k.nextSource, k.nextOK, k.nextErr = c.NextBoot()
		k.next = model.SplitKernelArguments(next)
	}
	return k
}

// ContentRead is a content comparison done by ReadContent, and the version
// of the file it was done on.
type ContentRead struct {
	Stamp   ondisk.Stamp
	Content ondisk.ContentResult
}

// ReadContent compares the content of an entry's file with no bound on what
// it reads: the comparison an Outcome deferred. It takes as long as reading
// the file takes (minutes for tens of GiB), so it belongs on a goroutine of
// its own, with an observer of its own (o's ReadLimit is ignored); it stops
// when ctx is done. Only Outcome makes sense of the result, nil when nothing
// was compared (ctx ended, the path is no longer a regular file).
func (c *Checker) ReadContent(ctx context.Context, o *ondisk.Observer, e *model.Entry) *ContentRead {
	o.Forget()
	limit := o.ReadLimit
	o.ReadLimit = 0
	defer func() { o.ReadLimit = limit }()
	ob := o.ObserveContext(ctx, e)
	if ctx.Err() != nil || ob.Err != nil || ob.Type != ondisk.Regular || ob.Content.State == ondisk.NotCompared {
		return nil
	}
	return &ContentRead{Stamp: ob.Stamp, Content: ob.Content}
}

// entry judges e, leaving out the drift and notices c.Exclude is true of,
// whatever e's kind: an account's drift is reported at the account file
// that holds the value (a password hash at /etc/shadow), not at its entry's
// path.
func (c *Checker) entry(o *ondisk.Observer, e *model.Entry, k *kargs, read *ContentRead, units *passUnits) Outcome {
	out := c.judge(o, e, k, read, units)
	out.Drift, out.Notices = c.exclude(out.Drift), c.exclude(out.Notices)
	return out
}

// exclude leaves out of ds what c.Exclude is true of.
func (c *Checker) exclude(ds []drift.Drift) []drift.Drift {
	if c.Exclude == nil {
		return ds
	}
	return slices.DeleteFunc(ds, func(d drift.Drift) bool { return c.Exclude(&d) })
}

func (c *Checker) judge(o *ondisk.Observer, e *model.Entry, k *kargs, read *ContentRead, units *passUnits) Outcome {
	// What the entry is compared with (its row of model.Kinds); the
	// cases only call the comparison of each.
	switch e.Kind.Means().Source {
	case model.FromUnitState:
		if c.Units == nil {
			return Outcome{}
		}
		state, err := units.state(e.Unit)
		if errors.Is(err, buslink.ErrUnavailable) {
			return Outcome{Unknown: true}
		}
		return units.enablement(e, state, err)
	case model.FromNothing:
		return Outcome{} // a notice only (kindNotices)
	case model.FromOS:
		return Outcome{Drift: k.os.compare(e).Drift}
	case model.FromCmdline:
		if c.Cmdline == nil {
			return Outcome{}
		}
		if k.nextErr != nil {
			return Outcome{Drift: drift.CompareKernelArg(e, nil, k.nextErr)}
		}
		if k.nextOK {
			return Outcome{Drift: drift.CompareKernelArgNextBoot(e, k.next, k.nextSource)}
		}
		return Outcome{Drift: drift.CompareKernelArg(e, k.running, k.runErr)}
	case model.FromAccounts:
		return c.account(e, &k.accounts)
	}
	ob := o.Observe(e)
	deferred := ob.Content.State == ondisk.Deferred
	if deferred && read != nil && read.Stamp == ob.Stamp {
		// The same version of the file: what was read of it still holds
		// (its metadata is this fresh observation's).
		ob.Content, deferred = read.Content, false
	}
	if c.NoDiff != nil && c.NoDiff(e) {
		// Without the bytes read there is nothing to diff (drift.Diffable),
		// nor a declared content to read back for it.
		ob.Content.Got = nil
	}
	out := Outcome{Drift: drift.Compare(c.declared(e, &ob), &ob, c.Key), Deferred: deferred, Stamp: ob.Stamp,
		Notices: drift.MetaNotices(e, &ob, c.Key)}
	c.Labels.compare(c.Root, e, &ob, &out)
	return out
}

// passUnits is what one check pass asks about units: the Checker's
// UnitStates, and one reading of the unit files (a Tree) for the whole pass,
// made when first needed. That Tree answers the states when the UnitStates
// read the unit files themselves (Passes), and, whoever answers the states,
// what `enabled: true` makes of them (enablement.Tree.WantEnabled, see
// enablement).
type passUnits struct {
	states UnitStates
	root   *ondisk.Root

	mu      sync.Mutex
	tree    *enablement.Tree
	treeErr error
}

func (c *Checker) newPass() *passUnits { return &passUnits{states: c.Units, root: c.Root} }

// reading returns the pass's Tree.
func (p *passUnits) reading() (*enablement.Tree, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.tree == nil && p.treeErr == nil {
		switch ps, ok := p.states.(Passes); {
		case ok:
			p.tree, p.treeErr = ps.Pass()
		case p.root != nil:
			p.tree, p.treeErr = enablement.New(p.root)
		default:
			p.treeErr = errors.New("no root to read unit files in")
		}
	}
	return p.tree, p.treeErr
}

func (p *passUnits) state(unit string) (string, error) {
	if _, ok := p.states.(Passes); !ok {
		return p.states.UnitFileState(unit)
	}
	t, err := p.reading()
	if err != nil {
		return "", err
	}
	return t.UnitFileState(unit)
}

func (p *passUnits) close() {
	if p.tree != nil {
		p.tree.Close()
	}
}

// declared is e with its declared bytes, when they are Stored and a diff
// would show them (drift.Compare reads nothing): read back through c.Store.
// A content that cannot be read back (the store is damaged) leaves e as it
// is, described by sizes and digests without a diff.
func (c *Checker) declared(e *model.Entry, ob *ondisk.Observation) *model.Entry {
	w := e.Content
	if w == nil || w.Stored == nil || c.Store == nil || !drift.Diffable(e, ob) {
		return e
	}
	b, err := c.Store.ReadStored(w.Stored)
	if err != nil {
		return e
	}
	withBytes, content := *e, *w
	content.Exact, content.Stored = b, nil
	withBytes.Content = &content
	return &withBytes
}
