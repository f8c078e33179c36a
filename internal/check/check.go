// Package check runs the comparison of a desired state with a machine: every
// entry in parallel for a full check, or one entry at a time for the daemon's
// event-driven re-checks.
//
// It promises that a full check spreads over the cores and that re-checking
// one entry costs the same however many entries the state has. It does not
// cache observations: every call looks at the disk again.
package check

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"sort"
	"sync"

	"github.com/drift-monitor/drift-monitor/internal/buslink"
	"github.com/drift-monitor/drift-monitor/internal/desired"
	"github.com/drift-monitor/drift-monitor/internal/drift"
	"github.com/drift-monitor/drift-monitor/internal/ondisk"
)

// UnitStates answers what `systemctl is-enabled` would answer for a unit.
// An error wrapping buslink.ErrUnavailable means that there is no answer
// now (systemd cannot be reached): the entry's state is unknown, which is
// neither drift nor clean (see Result.Unknown). Any other error is drift:
// the state cannot be determined.
type UnitStates interface {
	UnitFileState(unit string) (string, error)
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
	// Workers bounds the parallelism of a full check (default: 2 per core; the
	// work is mostly waiting on system calls).
	Workers int
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
}

// Clean reports whether no drift was found.
func (r *Result) Clean() bool { return len(r.Drift) == 0 }

// chunk is the number of consecutive entries a worker takes at once: entries
// are sorted by path, so a chunk mostly shares parent directories, which the
// worker's observer keeps open.
const chunk = 64

// All checks every entry. When ctx is done before every entry was checked,
// the result is partial (unchecked entries show no drift): callers must look
// at ctx.Err() before trusting it.
func (c *Checker) All(ctx context.Context, entries []desired.Entry) Result {
	res := Result{Checked: len(entries)}
	perEntry := make([][]drift.Drift, len(entries))
	known := make([]bool, len(entries))
	var cmdline []string
	var cmdErr error
	if c.Cmdline != nil {
		var s string
		s, cmdErr = c.Cmdline()
		cmdline = drift.SplitCmdline(s)
	}
	workers := c.Workers
	if workers <= 0 {
		workers = 2 * runtime.GOMAXPROCS(0)
	}
	if n := (len(entries) + chunk - 1) / chunk; workers > n {
		workers = n
	}
	next := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			o := ondisk.NewObserver(c.Root)
			defer o.Close()
			for start := range next {
				end := min(start+chunk, len(entries))
				for i := start; i < end; i++ {
					perEntry[i], known[i] = c.entry(o, &entries[i], cmdline, cmdErr)
				}
			}
		}()
	}
	for start := 0; start < len(entries); start += chunk {
		select {
		case next <- start:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
	}
	close(next)
	wg.Wait()
	for i := range entries {
		res.Drift = append(res.Drift, perEntry[i]...)
		if !known[i] && ctx.Err() == nil {
			res.Unknown = append(res.Unknown, entries[i].ID())
		}
		if n := drift.Notice(&entries[i]); n != nil {
			res.Notices = append(res.Notices, *n)
		}
		if e := &entries[i]; e.Kind == desired.KindKernelArg && c.Cmdline == nil {
			res.Notices = append(res.Notices, drift.Drift{Kind: drift.Unverifiable, Entry: e.Kind, Path: e.Path,
				Message: fmt.Sprintf("%s is not checked: kernel arguments are checked on the live host only", drift.Noun(e)), EntryID: e.ID()})
		}
	}
	Sort(res.Drift)
	return res
}

// Entry checks one entry with a fresh view of its parent directory. known is
// false when its state could not be determined now (see UnitStates): ds is
// then empty, and means nothing.
func (c *Checker) Entry(o *ondisk.Observer, e *desired.Entry) (ds []drift.Drift, known bool) {
	o.Forget()
	var cmdline []string
	var cmdErr error
	if e.Kind == desired.KindKernelArg && c.Cmdline != nil {
		var s string
		s, cmdErr = c.Cmdline()
		cmdline = drift.SplitCmdline(s)
	}
	return c.entry(o, e, cmdline, cmdErr)
}

func (c *Checker) entry(o *ondisk.Observer, e *desired.Entry, cmdline []string, cmdErr error) ([]drift.Drift, bool) {
	switch e.Kind {
	case desired.KindEnablement:
		if c.Units == nil {
			return nil, true
		}
		state, err := c.Units.UnitFileState(e.Unit)
		if errors.Is(err, buslink.ErrUnavailable) {
			return nil, false
		}
		return drift.CompareEnablement(e, state, err), true
	case desired.KindKernelArg:
		if c.Cmdline == nil {
			return nil, true
		}
		return drift.CompareKernelArg(e, cmdline, cmdErr), true
	}
	ob := o.Observe(e)
	return drift.Compare(e, &ob), true
}

// Sort orders drift by path, then entry, then kind: output is deterministic.
func Sort(ds []drift.Drift) {
	sort.SliceStable(ds, func(i, j int) bool {
		a, b := &ds[i], &ds[j]
		if a.Path != b.Path {
			return a.Path < b.Path
		}
		if a.Entry != b.Entry {
			return a.Entry < b.Entry
		}
		return a.Kind < b.Kind
	})
}
