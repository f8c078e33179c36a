package daemon

import (
	"errors"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/drift-monitor/drift-monitor/internal/desired/discover"
	"github.com/drift-monitor/drift-monitor/internal/model"
	"github.com/drift-monitor/drift-monitor/internal/ondisk"
	"github.com/drift-monitor/drift-monitor/internal/watch"
)

// configDebounce lets a burst of changes to the desired-state files (an
// editor's temporary file, a package installing several fragments) settle
// into one reload.
const configDebounce = 250 * time.Millisecond

// configWatch watches the desired-state locations with inotify (package
// watch, as the declared paths are watched) and says when they changed,
// once every write to them is complete: a config file is read when its
// writer closes it or renames it into place, never half-way (a writer that
// pauses mid-file, as curl -o on a slow link does, had the daemon load the
// first half: refused as broken, or loaded as a state that lacks the rest);
// one that is never closed is read after Settle of quiet, as a declared
// file is checked then (writes.go). While a config file is being written,
// no reload is signalled, and a reload that something else asked for (a
// signal, the bus, the release of an inhibitor) and that is refused is not
// reported: the close signals a reload again (Writing, loader.go).
type configWatch struct {
	targets []string // host paths (inside root) of config dirs and files
	w       *watch.Watcher
	machine *ondisk.Root // the watcher's root: this machine's "/"
	out     chan struct{}
	stop    chan struct{}
	blind   atomic.Bool
	// writing counts the config files with a write in progress (the
	// goroutine's writes, loop).
	writing atomic.Int32
	settle  time.Duration
	wg      sync.WaitGroup
}

// The targets are named lexically (root.Join): inotify watches a name. A
// location behind a link in the root is then watched at the name's host-side
// target, if any, and changes there are seen on the next reload only; what
// is read is always read inside the root. So the watcher's root is this
// machine's own "/", where those names are.
func newConfigWatch(root *ondisk.Root, explicit []string, excludeFile string, settle time.Duration) (*configWatch, error) {
	c := &configWatch{out: make(chan struct{}, 1), stop: make(chan struct{}), settle: settle}
	var dirs []string // the directories whose names are watched
	if len(explicit) == 0 {
		for _, d := range model.DefaultDirs {
			c.targets = append(c.targets, root.Join(d))
			dirs = append(dirs, root.Join(d))
		}
	} else {
		for _, p := range explicit {
			abs, err := filepath.Abs(p)
			if err != nil {
				return c, err
			}
			c.targets = append(c.targets, abs)
			dirs = append(dirs, watchedDir(abs))
		}
	}
	if excludeFile != "" {
		f := root.Join(excludeFile)
		c.targets = append(c.targets, f)
		dirs = append(dirs, path.Dir(f))
	}
	machine, err := ondisk.OpenRoot("/")
	if err != nil {
		return c, err
	}
	w, err := watch.New(machine)
	if err != nil {
		machine.Close()
		return c, err
	}
	c.machine, c.w = machine, w
	if err := w.Watch(dirs); errors.Is(err, watch.ErrExhausted) {
		c.blind.Store(true)
	}
	c.wg.Add(1)
	go c.loop()
	return c, nil
}

// watchedDir is the directory whose names tell of an explicit config path:
// itself when it is a directory, else the one that holds it.
func watchedDir(p string) string {
	if fi, err := os.Stat(p); err == nil && fi.IsDir() {
		return p
	}
	return path.Dir(p)
}

// Blind reports whether some desired-state location has no watch (the inotify
// limit was reached): changes there are seen only on reload.
func (c *configWatch) Blind() bool { return c != nil && c.blind.Load() }

// Writing reports whether a config file has a write in progress: a config
// refused now may be half-written, and its writer's close reloads it.
func (c *configWatch) Writing() bool { return c != nil && c.writing.Load() > 0 }

// relevant: the event touches a target, a fragment inside a target
// directory, or a directory on the way to one; or another file in a target
// directory that is not hidden: a file that is not loaded is named by the
// reload it causes (Daemon.noticeIgnored). Hidden files are editors' and
// atomic writers' temporaries, renamed to their name or removed in a
// moment.
func (c *configWatch) relevant(name string) bool {
	for _, t := range c.targets {
		if under(t, name) {
			return true
		}
		if base := path.Base(name); path.Dir(name) == t && (discover.IsFragmentName(base) || !strings.HasPrefix(base, ".")) {
			return true
		}
	}
	return false
}

// loop follows the events until Close: each burst of relevant ones ends in
// a signal on out, once no write to a config file is in progress.
func (c *configWatch) loop() {
	defer c.wg.Done()
	reads := make(chan readResult)
	go readFrom(c.w, reads, c.stop)
	writes := newWrites(c.settle, c.stop)
	defer writes.reset()
	var timer *time.Timer
	var fire <-chan time.Time
	for {
		changed := false
		select {
		case <-c.stop:
			return
		case r := <-reads:
			if errors.Is(r.err, watch.ErrExhausted) {
				c.blind.Store(true)
			}
			for _, ev := range r.evs {
				changed = c.event(writes, ev) || changed
			}
		case p := <-writes.settled:
			// Quiet for Settle, still open: read as it is.
			changed = writes.quiet(p)
		case <-fire:
			fire = nil
			if len(writes.pending) == 0 {
				select {
				case c.out <- struct{}{}:
				default:
				}
			}
			// Else the last write's completion signals.
		}
		c.writing.Store(int32(len(writes.pending)))
		if changed {
			if timer == nil {
				timer = time.NewTimer(configDebounce)
			} else {
				timer.Reset(configDebounce)
			}
			fire = timer.C
		}
	}
}

// event takes one event: whether it is a change to reload for (now or once
// every write is complete).
func (c *configWatch) event(writes *writes, ev watch.Event) bool {
	if ev.Op&watch.Overflow != 0 {
		writes.reset() // what they were waiting for may be lost: reload
		return true
	}
	if !c.relevant(ev.Path) {
		return false
	}
	if ev.IsDir || ev.Op&watch.Rewatched != 0 {
		return true
	}
	return writes.completes(ev.Path, ev.Op, isRegularFile)
}

// isRegularFile reports whether p, a path of this machine, is a regular
// file now (not a link to one).
func isRegularFile(p string) bool {
	fi, err := os.Lstat(p)
	return err == nil && fi.Mode().IsRegular()
}

// Changed delivers a value when the desired-state files changed.
func (c *configWatch) Changed() <-chan struct{} {
	if c == nil {
		return nil
	}
	return c.out
}

// Rewatch tries again to watch the locations that could not be watched
// (inotify watches ran out); directories that appear or go are followed
// without it. It is synchronous, so that Blind is current when it returns.
func (c *configWatch) Rewatch() {
	if c == nil || c.w == nil || !c.blind.Load() {
		return
	}
	if c.w.Retry() == nil {
		c.blind.Store(false)
	}
}

// Close stops watching.
func (c *configWatch) Close() {
	if c == nil || c.w == nil {
		return
	}
	close(c.stop)
	c.w.Close()
	c.wg.Wait()
	c.machine.Close()
}

// under reports whether p is prefix or lies beneath it.
func under(p, prefix string) bool {
	return p == prefix || prefix == "/" || strings.HasPrefix(p, prefix+"/")
}
