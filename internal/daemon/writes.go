package daemon

import (
	"time"

	"github.com/drift-monitor/drift-monitor/internal/watch"
)

// writes follows the declared regular files with a write in progress, so
// that a file is checked when its writer is done with it: when the writer
// closes it or renames it into place, or, for a writer that never closes
// it, once it has been quiet for settle (the path then arrives on settled).
// The loop owns it; only the timers' sends run elsewhere.
type writes struct {
	settle  time.Duration
	pending map[string]*time.Timer // paths with a write in progress
	settled chan string
	done    <-chan struct{} // the loop ended: a timer no longer sends
}

func newWrites(settle time.Duration, done <-chan struct{}) *writes {
	return &writes{settle: settle, pending: map[string]*time.Timer{}, settled: make(chan string, 64), done: done}
}

// completes decides whether an event on a declared regular file is a moment
// to check it: yes when a write completed (close after write, a rename into
// place) or the file went away; not while a writer may still be going (it
// was created, truncated or written to and not yet closed) — that is what a
// shell redirection, cp or a slow writer look like half-way. regular says
// whether what is at p now is a regular file, asked only when p was created.
func (w *writes) completes(p string, op watch.Op, regular func(p string) bool) bool {
	switch {
	case op&(watch.Write|watch.MovedTo|watch.Remove) != 0:
		w.clear(p)
		return true
	case op&watch.Modify != 0:
		w.arm(p)
		return false
	case op&watch.Create != 0:
		// A new regular file may still be being written; a symlink, a
		// directory or a device is complete the moment it appears.
		if !regular(p) {
			return true
		}
		w.arm(p)
		return false
	}
	// Attributes changed: check now unless a write is still in progress.
	return !w.inProgress(p)
}

// arm starts, or restarts, the quiet time of a write to p.
func (w *writes) arm(p string) { w.armFor(p, w.settle) }

// armFor is arm with a quiet time of d.
func (w *writes) armFor(p string, d time.Duration) {
	if t, ok := w.pending[p]; ok {
		t.Reset(d)
		return
	}
	w.pending[p] = time.AfterFunc(d, func() {
		select {
		case w.settled <- p:
		case <-w.done:
		}
	})
}

// clear forgets the write to p (it completed).
func (w *writes) clear(p string) {
	if t, ok := w.pending[p]; ok {
		t.Stop()
		delete(w.pending, p)
	}
}

// reset forgets every write: the state they would be checked against was
// replaced, or they belong to an inhibited transition.
func (w *writes) reset() {
	for p := range w.pending {
		w.clear(p)
	}
}

// inProgress reports whether p has a write in progress.
func (w *writes) inProgress(p string) bool {
	_, ok := w.pending[p]
	return ok
}

// quiet takes the path a settle timer delivered: true when its write is
// still in progress (so it is to be checked now), false when it completed
// meanwhile and was checked then.
func (w *writes) quiet(p string) bool {
	if !w.inProgress(p) {
		return false
	}
	delete(w.pending, p)
	return true
}
