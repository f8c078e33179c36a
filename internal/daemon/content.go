package daemon

import (
	"context"
	"slices"
	"sync"

	"github.com/drift-monitor/drift-monitor/internal/check"
	"github.com/drift-monitor/drift-monitor/internal/drift"
	"github.com/drift-monitor/drift-monitor/internal/model"
	"github.com/drift-monitor/drift-monitor/internal/ondisk"
)

// inlineReadLimit bounds what the event loop reads of one file to compare
// its content, in an event's re-check and in a full check alike: a moment
// of hashing even on a core without SHA extensions, far inside the
// watchdog. A file of exact content whose size differs is not
// read at all (ondisk); a larger comparison — a declared large file of the
// right size, or a verification hash over a remote-sourced file, whose
// length nothing declares — is left to contentReads.
const inlineReadLimit = 1 << 20

// contentReads does the content comparisons too large for the event loop,
// one at a time, on a goroutine of its own, and hands each result back to
// the loop as a message (done). One at a time: such a read costs a core's
// worth of hashing and the disk's bandwidth for as long as it lasts (tens
// of GiB take minutes), and a writer must not be able to multiply
// that; reads queued behind it wait, they are not dropped.
//
// The loop owns jobs and decides what a result is worth: a read whose entry
// was checked again since (the file changed: another version, another job)
// or whose state was replaced (a reload, an inhibitor) was cancelled and its
// result is dropped; Outcome applies a read only to the version of the file
// it read. Meanwhile the entry keeps the content drift known of it before,
// and the status line counts the reads under way.
type contentReads struct {
	checker *check.Checker
	// read is the worker's comparison (check.ReadContent); tests replace it.
	read func(context.Context, *ondisk.Observer, *model.Entry) *check.ContentRead
	done chan contentDone
	// jobs holds, by entry ID, every read queued or under way. Loop only.
	jobs map[string]*contentJob
	// verified holds, by entry ID, the version of the file whose content a
	// finished read judged against the current state. A read of another
	// version leaves its entry pending (nothing is known of it: the check
	// is not done), a read of that same version (a periodic check's) only
	// confirms what is known. Loop only; a load or an inhibitor clears it.
	verified map[string]ondisk.Stamp
	// setAside holds, by entry ID, the declared path of an entry whose
	// pending read (isPending) finished but whose result was set aside: a
	// writer had the file open, or it changed since it was read. Nothing is
	// known of that version yet; the check that follows the writer's close
	// or quiet time (a new read, or one on the loop) judges it. Loop only.
	setAside map[string]string

	mu     sync.Mutex
	order  []string               // entry IDs waiting, oldest first, each once
	queued map[string]*contentJob // the job waiting for each of them
	wake   chan struct{}
	ctx    context.Context // Run's: every job's parent
}

// contentJob is one entry's deferred comparison, of one version of its file.
type contentJob struct {
	id    string
	i     int // index in the daemon's entries; a load resets every job
	e     *model.Entry
	stamp ondisk.Stamp
	// decl is the state's declared links and directories, taken on the
	// loop when the job is made: a load replaces the checker's, and the
	// worker must not read that field while the loop writes it.
	decl   *ondisk.Declared
	ctx    context.Context
	cancel context.CancelFunc
}

// contentDone is a read's result, on its way to the loop.
type contentDone struct {
	job  *contentJob
	read *check.ContentRead
}

func newContentReads(c *check.Checker) *contentReads {
	return &contentReads{
		checker: c, read: c.ReadContent, done: make(chan contentDone),
		jobs: map[string]*contentJob{}, verified: map[string]ondisk.Stamp{}, setAside: map[string]string{}, queued: map[string]*contentJob{},
		wake: make(chan struct{}, 1), ctx: context.Background(),
	}
}

// start runs the worker until ctx ends; jobs submitted before wait for it.
func (c *contentReads) start(ctx context.Context) {
	c.mu.Lock()
	c.ctx = ctx
	c.mu.Unlock()
	go func() {
		o := ondisk.NewObserver(c.checker.Root)
		defer o.Close()
		for {
			j := c.next(ctx)
			if j == nil {
				return
			}
			o.Declare(j.decl)
			res := contentDone{job: j, read: c.read(j.ctx, o, j.e)}
			select {
			case c.done <- res:
			case <-ctx.Done():
				return
			}
		}
	}()
}

// next waits for a job that is still wanted; nil once ctx ended.
func (c *contentReads) next(ctx context.Context) *contentJob {
	for {
		c.mu.Lock()
		for len(c.order) > 0 {
			id := c.order[0]
			c.order = c.order[1:]
			j := c.queued[id]
			delete(c.queued, id)
			if j.ctx.Err() == nil {
				c.mu.Unlock()
				return j
			}
		}
		c.mu.Unlock()
		select {
		case <-c.wake:
		case <-ctx.Done():
			return nil
		}
	}
}

// submit asks for entry i's content to be compared on the version stamp
// names. A read of that very version already queued or under way is kept (a
// metadata storm on a large file does not restart it); one of another
// version is cancelled: its result would be stale.
func (c *contentReads) submit(i int, e *model.Entry, stamp ondisk.Stamp) {
	id := e.ID()
	delete(c.setAside, id) // the job stands for it now
	if j := c.jobs[id]; j != nil {
		if j.stamp == stamp && j.ctx.Err() == nil {
			j.i = i
			return
		}
		j.cancel()
	}
	c.mu.Lock()
	ctx, cancel := context.WithCancel(c.ctx)
	j := &contentJob{id: id, i: i, e: e, stamp: stamp, decl: c.checker.Declared, ctx: ctx, cancel: cancel}
	c.jobs[id] = j
	if _, waiting := c.queued[id]; !waiting {
		c.order = append(c.order, id)
	}
	c.queued[id] = j
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// drop cancels the read of an entry whose content is known without it.
func (c *contentReads) drop(id string) {
	delete(c.setAside, id) // judged on the loop, or no longer declared
	if j := c.jobs[id]; j != nil {
		j.cancel()
		delete(c.jobs, id)
	}
}

// keepOnly cancels every read but those of the entries in ids.
func (c *contentReads) keepOnly(ids map[string]bool) {
	for id := range c.jobs {
		if !ids[id] {
			c.drop(id)
		}
	}
	for id := range c.setAside {
		if !ids[id] {
			delete(c.setAside, id)
		}
	}
}

// reset cancels every read and forgets what they judged: the state they
// compare against was replaced, or monitoring is inhibited.
func (c *contentReads) reset() {
	c.keepOnly(nil)
	clear(c.verified)
	clear(c.setAside)
}

// take claims a result for the loop: false when its job was cancelled or
// replaced since (the result is stale).
func (c *contentReads) take(r contentDone) (*contentJob, bool) {
	j := r.job
	if c.jobs[j.id] != j {
		return nil, false
	}
	delete(c.jobs, j.id)
	j.cancel()
	return j, true
}

// underWay counts the entries whose content is being read.
func (c *contentReads) underWay() int { return len(c.jobs) }

// verify records that entry id's content was judged on the version stamp
// names.
func (c *contentReads) verify(id string, stamp ondisk.Stamp) {
	c.verified[id] = stamp
	delete(c.setAside, id)
}

// isPending reports whether j's entry is not judged yet: no read finished
// on the version of the file j reads.
func (c *contentReads) isPending(j *contentJob) bool {
	v, ok := c.verified[j.id]
	return !ok || v != j.stamp
}

// pendingCount counts the entries not judged yet (isPending, and those
// whose read was set aside).
func (c *contentReads) pendingCount() int {
	n := len(c.setAside)
	for _, j := range c.jobs {
		if c.isPending(j) {
			n++
		}
	}
	return n
}

// pending returns the first n declared paths, in order, of the entries not
// judged yet (pendingCount).
func (c *contentReads) pending(n int) []string {
	var ps []string
	for _, p := range c.setAside {
		ps = append(ps, p)
	}
	for _, j := range c.jobs {
		if c.isPending(j) {
			ps = append(ps, j.e.Path)
		}
	}
	slices.Sort(ps)
	return ps[:min(n, len(ps))]
}

// contentKind reports whether a content comparison finds drift of kind k.
func contentKind(k drift.Kind) bool { return k == drift.Content || k == drift.Unreadable }

// deferred completes what an entry's check found: when its content was left
// to a read, the read is submitted and the entry keeps the content drift
// known of it meanwhile (no "resolved" while nothing was compared); when it
// was compared, a read still under way is of no use any more.
func (d *Daemon) deferred(i int, ds []drift.Drift, out check.Outcome) []drift.Drift {
	e := &d.ix.entries[i]
	if !out.Deferred {
		d.reads.drop(e.ID())
		return ds
	}
	d.reads.submit(i, e, out.Stamp)
	for _, old := range d.track.byEntry[e.ID()] {
		if contentKind(old.Kind) {
			ds = append(ds, old)
		}
	}
	return ds
}

// contentRead takes a read's result on the loop.
func (d *Daemon) contentRead(ctx context.Context, r contentDone) {
	j, ok := d.reads.take(r)
	if !ok || d.inhibited() {
		return
	}
	if d.reads.isPending(j) {
		// Until checkEntryWith judges it (verify, or a read on the loop
		// or a new job replaces it): a result set aside below, or there,
		// leaves it pending, not clean.
		d.reads.setAside[j.id] = j.e.Path
	}
	if d.writes.inProgress(j.e.Path) {
		return // its writer's close, or quiet, re-checks it
	}
	d.checkEntryWith(ctx, j.i, r.read)
}
