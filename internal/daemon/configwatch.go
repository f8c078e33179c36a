package daemon

import (
	"errors"
	"strings"
	"sync/atomic"

	"golang.org/x/sys/unix"
	"path"
	"path/filepath"
	"time"

	"github.com/drift-monitor/drift-monitor/internal/desired/discover"
	"github.com/drift-monitor/drift-monitor/internal/model"
	"github.com/drift-monitor/drift-monitor/internal/ondisk"
	"github.com/fsnotify/fsnotify"
)

// configDebounce lets a burst of changes to the desired-state files (an
// editor's temporary file, a package installing several fragments) settle
// into one reload.
const configDebounce = 250 * time.Millisecond

// configWatch watches the desired-state locations with fsnotify: its
// portable create/write/remove/rename events are all a reload needs.
type configWatch struct {
	targets []string // host paths (inside root) of config dirs and files
	fw      *fsnotify.Watcher
	out     chan struct{}
	stop    chan struct{}
	blind   atomic.Bool
}

// The targets are named lexically (root.Join): inotify watches a name. A
// location behind a link in the root is then watched at the name's host-side
// target, if any, and changes there are seen on the next reload only; what
// is read is always read inside the root.
func newConfigWatch(root *ondisk.Root, explicit []string, excludeFile string) (*configWatch, error) {
	c := &configWatch{out: make(chan struct{}, 1), stop: make(chan struct{})}
	if len(explicit) == 0 {
		for _, d := range model.DefaultDirs {
			c.targets = append(c.targets, root.Join(d))
		}
	} else {
		for _, p := range explicit {
			abs, err := filepath.Abs(p)
			if err != nil {
				return c, err
			}
			c.targets = append(c.targets, abs)
		}
	}
	if excludeFile != "" {
		c.targets = append(c.targets, root.Join(excludeFile))
	}
	fw, err := fsnotify.NewWatcher()
	if err != nil {
		return c, err
	}
	c.fw = fw
	c.add()
	go c.loop()
	return c, nil
}

// add watches each target, or its nearest existing ancestor.
func (c *configWatch) add() {
	blind := false
	for _, t := range c.targets {
		for p := t; ; p = filepath.Dir(p) {
			err := c.fw.Add(p)
			if err == nil {
				break
			}
			if errors.Is(err, unix.ENOSPC) {
				// Out of inotify watches: say so (Blind) and retry later.
				blind = true
				break
			}
			if p == "/" || p == "." {
				break
			}
		}
	}
	c.blind.Store(blind)
}

// Blind reports whether some desired-state location has no watch (the inotify
// limit was reached): changes there are seen only on reload.
func (c *configWatch) Blind() bool { return c != nil && c.blind.Load() }

// relevant: the event touches a target, a fragment inside a target
// directory, or a directory on the way to one; or another file in a target
// directory that is not hidden: a file that is not loaded is named by the
// reload it causes (Daemon.noticeIgnored). Hidden files are editors' and
// atomic writers' temporaries, renamed to their name or removed in a
// moment.
func (c *configWatch) relevant(name string) bool {
	for _, t := range c.targets {
		if name == t || under(t, name) {
			return true
		}
		if base := path.Base(name); path.Dir(name) == t && (discover.IsFragmentName(base) || !strings.HasPrefix(base, ".")) {
			return true
		}
	}
	return false
}

func (c *configWatch) loop() {
	var timer *time.Timer
	var fire <-chan time.Time
	for {
		select {
		case <-c.stop:
			return
		case ev, ok := <-c.fw.Events:
			if !ok {
				return
			}
			if !c.relevant(ev.Name) {
				continue
			}
			if ev.Has(fsnotify.Create) {
				c.add() // a directory on the way may have appeared
			}
			if timer == nil {
				timer = time.NewTimer(configDebounce)
			} else {
				timer.Reset(configDebounce)
			}
			fire = timer.C
		case <-c.fw.Errors:
			// Overflow or a vanished watch: reload to be sure.
			select {
			case c.out <- struct{}{}:
			default:
			}
		case <-fire:
			fire = nil
			select {
			case c.out <- struct{}{}:
			default:
			}
		}
	}
}

// Changed delivers a value when the desired-state files changed.
func (c *configWatch) Changed() <-chan struct{} {
	if c == nil {
		return nil
	}
	return c.out
}

// Rewatch re-adds watches (after a reload, directories may have appeared;
// after inotify watches were exhausted, some may be free again). It is
// synchronous, so that Blind is current when it returns; fsnotify's Add may
// be called from any goroutine.
func (c *configWatch) Rewatch() {
	if c == nil || c.fw == nil {
		return
	}
	c.add()
}

// Close stops watching.
func (c *configWatch) Close() {
	if c == nil || c.fw == nil {
		return
	}
	close(c.stop)
	c.fw.Close()
}

// under reports whether p is prefix or lies beneath it.
func under(p, prefix string) bool {
	return p == prefix || prefix == "/" || strings.HasPrefix(p, prefix+"/")
}
