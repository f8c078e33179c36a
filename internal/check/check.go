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
	"fmt"
	"os"
	"runtime"
	"sort"
	"sync"

	"github.com/drift-monitor/drift-monitor/internal/desired"
	"github.com/drift-monitor/drift-monitor/internal/drift"
	"github.com/drift-monitor/drift-monitor/internal/ondisk"
)

// UnitStates answers what `systemctl is-enabled` would answer for a unit.
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
	// NextBoot, on a live host, reads the next boot's command line (nil: the
	// running kernel's is all there is). Declared kernel arguments are
	// checked against the next boot when it says; a running kernel that
	// differs is then a "reboot pending" notice, not drift.
	NextBoot NextBoot
	// Workers bounds the parallelism of a full check (default: 2 per core; the
	// work is mostly waiting on system calls).
	Workers int
}

// Result is the outcome of a check.
type Result struct {
	Drift   []drift.Drift
	Notices []drift.Drift
	Checked int
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
	var k kargs
	if hasKernelArgs(entries) {
		k = c.readKargs()
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
					perEntry[i] = c.entry(o, &entries[i], &k)
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
		if entries[i].Kind == desired.KindConfig {
			res.Checked-- // a notice that something is not checked
		}
		res.Drift = append(res.Drift, perEntry[i]...)
		if n := drift.Notice(&entries[i]); n != nil {
			res.Notices = append(res.Notices, *n)
		}
		if e := &entries[i]; e.Kind == desired.KindKernelArg && k.nextOK && k.nextErr == nil && k.runErr == nil {
			if n := drift.PendingReboot(e, k.running, k.next, k.nextSource); n != nil {
				res.Notices = append(res.Notices, *n)
			}
		}
		if e := &entries[i]; e.Kind == desired.KindKernelArg && c.Cmdline == nil {
			res.Notices = append(res.Notices, drift.Drift{Kind: drift.Unverifiable, Entry: e.Kind, Path: e.Path,
				Message: fmt.Sprintf("%s is not checked: kernel arguments are checked on the live host only", drift.Noun(e)), EntryID: e.ID()})
		}
	}
	Sort(res.Drift)
	return res
}

// Entry checks one entry with a fresh view of its parent directory.
func (c *Checker) Entry(o *ondisk.Observer, e *desired.Entry) []drift.Drift {
	o.Forget()
	var k kargs
	if e.Kind == desired.KindKernelArg {
		k = c.readKargs()
	}
	return c.entry(o, e, &k)
}

// kargs are the command lines a check compares kernel arguments with.
type kargs struct {
	running    []string
	runErr     error
	next       []string
	nextSource string
	nextOK     bool
	nextErr    error
}

func hasKernelArgs(entries []desired.Entry) bool {
	for i := range entries {
		if entries[i].Kind == desired.KindKernelArg {
			return true
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
	k.running, k.runErr = drift.SplitCmdline(s), err
	if c.NextBoot != nil {
		var next string
		next, k.nextSource, k.nextOK, k.nextErr = c.NextBoot()
		k.next = drift.SplitCmdline(next)
	}
	return k
}

func (c *Checker) entry(o *ondisk.Observer, e *desired.Entry, k *kargs) []drift.Drift {
	switch e.Kind {
	case desired.KindEnablement:
		if c.Units == nil {
			return nil
		}
		state, err := c.Units.UnitFileState(e.Unit)
		return drift.CompareEnablement(e, state, err)
	case desired.KindKernelArg:
		if c.Cmdline == nil {
			return nil
		}
		if k.nextErr != nil {
			return drift.CompareKernelArg(e, nil, k.nextErr)
		}
		if k.nextOK {
			return drift.CompareKernelArgNextBoot(e, k.next, k.nextSource)
		}
		return drift.CompareKernelArg(e, k.running, k.runErr)
	}
	ob := o.Observe(e)
	return drift.Compare(e, &ob)
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
