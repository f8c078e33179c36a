package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path"
	"time"

	"github.com/drift-monitor/drift-monitor/internal/buslink"
	"github.com/drift-monitor/drift-monitor/internal/inhibit"
	"github.com/drift-monitor/drift-monitor/internal/journal"
	"github.com/drift-monitor/drift-monitor/internal/model"
	"github.com/drift-monitor/drift-monitor/internal/ondisk"
	"github.com/drift-monitor/drift-monitor/internal/watch"
)

// eventSource delivers the file events of the watched directories:
// inotify (watch.Watcher), or a test's synthetic events.
type eventSource interface {
	// Read blocks until events arrive; it returns os.ErrClosed after
	// Close. An error wrapping watch.ErrExhausted may come with events.
	Read(buf []byte) ([]watch.Event, error)
	// Watch makes the set of watched directories exactly dirs; it fails
	// with watch.ErrExhausted (wrapped) when some must be polled instead.
	Watch(dirs []string) error
	// Polled lists the directories that could not be watched; Retry tries
	// to watch them again.
	Polled() []string
	Retry() error
	Close() error
}

// readResult is one Read of the event source, handed to the loop.
type readResult struct {
	evs []watch.Event
	err error
}

// sources are the channels the event loop waits on, besides the daemon's
// own (settled writes, background reads, bus requests); a nil channel
// never delivers.
type sources struct {
	events  chan readResult
	inhibit <-chan []inhibit.Inhibitor
	// inhibitDir says how the monitor follows its directory.
	inhibitDir <-chan inhibit.DirStatus
	// inhibitors is the monitor behind inhibit, for syncInhibitors.
	inhibitors *inhibit.Monitor
	reload     <-chan struct{}
	units      <-chan buslink.Event
	api        <-chan buslink.Event
	periodic   <-chan time.Time
	flags      <-chan time.Time // a flag sweep is due (flagsweep.go)
	pings      chan chan struct{}
	// poll paces the polling of unwatched directories; nil while every
	// directory is watched.
	poll  *time.Ticker
	stops []func()
}

// pollC is the polling ticker's channel, nil when there is none.
func (s *sources) pollC() <-chan time.Time {
	if s.poll == nil {
		return nil
	}
	return s.poll.C
}

// stop releases the tickers and watchers, last opened first.
func (s *sources) stop() {
	if s.poll != nil {
		s.poll.Stop()
	}
	for i := len(s.stops) - 1; i >= 0; i-- {
		s.stops[i]()
	}
}

// readEvents hands the event source's reads to the loop until the source
// is closed or the loop has ended.
func (d *Daemon) readEvents(out chan<- readResult) { readFrom(d.w, out, d.done) }

// readFrom hands the reads of src to out until src is closed or done is.
func readFrom(src interface {
	Read([]byte) ([]watch.Event, error)
}, out chan<- readResult, done <-chan struct{}) {
	buf := make([]byte, watch.ReadBufferSize)
	for {
		evs, err := src.Read(buf)
		if errors.Is(err, os.ErrClosed) {
			return
		}
		select {
		case out <- readResult{evs, err}:
		case <-done:
			return
		}
	}
}

// followInhibitors starts following the inhibitor lock files, and takes
// the ones held already (inhibitors survive restarts).
func (d *Daemon) followInhibitors(ctx context.Context, s *sources) {
	if d.o.InhibitDir == "" {
		return
	}
	m, err := inhibit.Watch(d.o.InhibitDir)
	if err != nil {
		d.record(ctx, slog.LevelError, journal.MsgInhibitorsUnwatched, fmt.Sprintf("cannot follow inhibitors in %s: %v", d.o.InhibitDir, err))
		return
	}
	s.stops = append(s.stops, func() { m.Close() })
	s.inhibit = m.Changes()
	s.inhibitDir = m.DirStatus()
	s.inhibitors = m
	d.setInhibitors(ctx, m.Held())
}

// followConfig starts watching the desired-state files. Without the watch
// the daemon still runs: a reload (SIGHUP) applies changes.
func (d *Daemon) followConfig(ctx context.Context, s *sources) {
	cfg, err := newConfigWatch(d.root, d.o.Configs, d.o.Exclude.File, d.o.Settle)
	d.cfg = cfg
	s.stops = append(s.stops, cfg.Close)
	if err != nil {
		d.record(ctx, slog.LevelWarn, journal.MsgConfigUnwatched, fmt.Sprintf("cannot watch the desired-state locations (reload with SIGHUP): %v", err))
	}
}

// pacePolling keeps a polling ticker while some directories could not be
// watched (the declared paths' or a part's), says when they first are, and
// says when every directory is watched again.
func (d *Daemon) pacePolling(ctx context.Context, s *sources) {
	n := len(d.polled())
	if n > 0 && s.poll == nil {
		s.poll = time.NewTicker(d.o.PollInterval)
	} else if n == 0 && s.poll != nil {
		s.poll.Stop()
		s.poll = nil
	}
	if n > 0 && !d.exhausted {
		// A part's watch ran out (the declared paths' says so at once,
		// watchError).
		d.noteExhausted(ctx, fmt.Errorf("watching the image's directories: %w", watch.ErrExhausted))
	}
	if d.exhausted && n == 0 {
		// Every wanted directory has a watch again, whether a poll's
		// retry placed it or a reload or a vanished directory freed
		// watches: say so, so that running out again is said again.
		d.exhausted = false
		d.cfg.Rewatch()
		d.record(ctx, slog.LevelInfo, journal.MsgWatchesRestored, "Every directory is watched again: polling stopped")
	}
}

// watchError reports an error of the event source: running out of
// watches is said once, until every directory is watched again.
func (d *Daemon) watchError(ctx context.Context, err error) {
	if errors.Is(err, watch.ErrExhausted) {
		d.noteExhausted(ctx, err)
		return
	}
	d.record(ctx, slog.LevelError, journal.MsgCheckFailed, fmt.Sprintf("inotify: %v", err))
}

// noteExhausted says, once until every directory is watched again, that
// inotify watches ran out and what is polled instead.
func (d *Daemon) noteExhausted(ctx context.Context, err error) {
	if d.exhausted {
		return
	}
	d.exhausted = true
	d.record(ctx, slog.LevelWarn, journal.MsgWatchesExhausted,
		fmt.Sprintf("%v: polling %d directories every %s instead; raise fs.inotify.max_user_watches", err, len(d.polled()), d.o.PollInterval))
}

// pollUnwatched checks the entries in directories that could not be watched,
// and tries to watch them again; the parts look at theirs.
func (d *Daemon) pollUnwatched(ctx context.Context) {
	d.pollParts(ctx)
	polled := d.w.Polled()
	_ = d.w.Retry() // ErrExhausted while some still cannot be watched: they stay polled, and the loop says when none is left
	if d.cfg.Blind() {
		d.cfg.Rewatch()
	}
	seen := map[int]bool{}
	now := time.Now()
	for _, dir := range polled {
		// The entries judged by a file in dir though their own paths lie
		// elsewhere: users and groups by /usr/lib/passwd (nss-altfiles),
		// hard links by their targets.
		for t, is := range d.ix.targets {
			if path.Dir(t) != dir {
				continue
			}
			d.obs.Forget()
			if typ, mtime := d.obs.Stat(t); typ == ondisk.Regular && now.Sub(mtime) < d.o.Settle {
				continue // maybe half written: the next poll (see below)
			}
			for _, i := range is {
				if !seen[i] {
					seen[i] = true
					d.checkEntry(ctx, i)
				}
			}
		}
		d.ix.affected(dir, true, func(i int) {
			e := &d.ix.entries[i]
			if seen[i] || path.Dir(e.Path) != dir {
				return
			}
			seen[i] = true
			// Without inotify there is no close-after-write to wait for: a
			// regular file modified within the settle time may be half
			// written, so it waits for the next poll (as a file that keeps
			// being written waits for quiet under inotify).
			if e.Type == model.TypeRegular {
				d.obs.Forget()
				if typ, mtime := d.obs.Stat(e.Path); typ == ondisk.Regular && now.Sub(mtime) < d.o.Settle {
					return
				}
			}
			d.checkEntry(ctx, i)
		})
	}
}

// syncInhibitors looks at the inhibitor locks now, before a file event, a
// quiet write or a config change is acted on, and reports whether the
// daemon is still active. The monitor reads an inotify instance of its
// own: an update tool that locks and then writes a declared file may have
// its write's event here before its lock's event there, and the write
// would be judged half-way.
func (d *Daemon) syncInhibitors(ctx context.Context, s *sources) bool {
	if s.inhibitors != nil {
		d.setInhibitors(ctx, s.inhibitors.Sync())
	}
	return !d.inhibited()
}
