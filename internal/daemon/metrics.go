package daemon

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"time"

	"github.com/drift-monitor/drift-monitor/internal/drift"
	"github.com/drift-monitor/drift-monitor/internal/escape"
	"github.com/drift-monitor/drift-monitor/internal/journal"
	"github.com/drift-monitor/drift-monitor/internal/metrics"
)

// metricsOut is the daemon's side of --metrics-textfile. The file is
// written by a goroutine of its own, from a snapshot the event loop hands
// it (Daemon.do): a stuck loop stops the writes, and the file's mtime,
// which node_exporter exports, stops moving — the textfile shows liveness,
// not just the last thing said.
type metricsOut struct {
	dirty chan struct{} // the metrics changed; nil: no textfile asked for
	// What the last snapshot was built from, to tell a change (cheaply: the
	// drift set by its generation).
	key      metricsKey
	kinds    map[drift.Kind]int // never changed once handed out: replaced
	kindsGen uint64
	// noticeGen is the Daemon.noticeGen kinds was counted at.
	noticeGen uint64
	// lastChange is when the drift set last changed (seenGen: as of which
	// generation); loadFailures counts failed loads (Daemon.load).
	lastChange   time.Time
	seenGen      uint64
	loadFailures uint64
}

type metricsKey struct {
	ix                               *index // a new state declares other kinds
	state                            string
	gen                              uint64
	paths, units, polled, inhibitors int
	excluded, internalInhibitors     int
	notices                          uint64 // Daemon.noticeGen
	exhausted, loadFailing           bool
	loadFailures                     uint64
	lastCheck                        time.Time
	attribution                      string
}

// metricsRefresh is how often the textfile is rewritten when nothing
// changed (the mtime is the liveness signal; the shipped rules call a file
// older than 5 minutes stale), and metricsSpacing the least time between two
// writes, so that a storm of changes costs a write a second, not one per event.
const (
	metricsRefresh = 30 * time.Second
	metricsSpacing = time.Second
)

// startMetrics starts writing the textfile, once the first full check is
// done (or the daemon started inhibited, which the state says): before it,
// nothing is known, and a restarted daemon on a drifted host must not
// publish "clean". The previous run's file is removed at start-up for the
// same reason (removeStaleMetrics).
func (d *Daemon) startMetrics(ctx context.Context) {
	if d.o.MetricsTextfile == "" {
		return
	}
	d.m.dirty = make(chan struct{}, 1)
	refresh := d.o.MetricsRefresh
	if refresh <= 0 {
		refresh = metricsRefresh
	}
	go func() {
		t := time.NewTicker(refresh)
		defer t.Stop()
		var failed metricsFailure // the last failure journaled, said once
		for {
			var s metrics.Snapshot
			if err := d.do(ctx, func(context.Context) error { s = d.metricsSnapshot(); return nil }); err != nil {
				return // stopping
			}
			failed = d.metricsWritten(ctx, metrics.WriteTextfile(d.o.MetricsTextfile, s, d.o.Version), failed)
			wrote := time.Now()
			select {
			case <-ctx.Done():
				return
			case <-d.done:
				return
			case <-t.C:
			case <-d.m.dirty:
				wait := time.NewTimer(time.Until(wrote.Add(metricsSpacing)))
				select {
				case <-wait.C:
				case <-ctx.Done():
					wait.Stop()
					return
				}
			}
		}
	}()
}

// removeStaleMetrics removes what a previous run wrote: it describes a
// host this run has not checked yet.
func (d *Daemon) removeStaleMetrics(ctx context.Context) {
	if d.o.MetricsTextfile == "" {
		return
	}
	if err := os.Remove(d.o.MetricsTextfile); err != nil && !errors.Is(err, fs.ErrNotExist) {
		d.record(ctx, slog.LevelError, journal.MsgMetricsFailed, escape.Name(fmt.Sprintf("removing the previous run's metrics: %v", err)),
			journal.MetricsFile(escape.Name(d.o.MetricsTextfile)))
	}
}

// metricsChanged notes when the drift set changed and tells the writer,
// without blocking the loop, that the metrics changed. Called with every
// publish.
func (d *Daemon) metricsChanged() {
	// Nothing earlier is known of the drift set than this run's first
	// check.
	if d.ready && (d.m.lastChange.IsZero() || d.track.gen != d.m.seenGen) {
		d.m.lastChange, d.m.seenGen = time.Now(), d.track.gen
	}
	if d.m.dirty == nil {
		return
	}
	k := d.metricsKey()
	if k == d.m.key {
		return
	}
	d.m.key = k
	select {
	case d.m.dirty <- struct{}{}:
	default: // a write is already due
	}
}

func (d *Daemon) metricsKey() metricsKey {
	return metricsKey{ix: d.ix, state: d.snapshotState(), gen: d.track.gen, notices: d.noticeGen, paths: d.ix.paths, units: d.ix.units,
		excluded: d.excl.paths, polled: len(d.polled()), inhibitors: len(d.inhibitors), internalInhibitors: d.internalInhibitors(), exhausted: d.exhausted,
		loadFailing: d.loadFailing(), loadFailures: d.m.loadFailures, lastCheck: d.lastCheck, attribution: d.attributionMetric()}
}

// metricsSnapshot runs on the loop. Drift is counted by kind only when the
// set changed: a storm of events that changes nothing costs nothing here.
func (d *Daemon) metricsSnapshot() metrics.Snapshot {
	if d.m.kinds == nil || d.m.kindsGen != d.track.gen || d.m.noticeGen != d.noticeGen {
		d.m.kinds, d.m.kindsGen, d.m.noticeGen = map[drift.Kind]int{}, d.track.gen, d.noticeGen
		for _, ds := range d.track.byEntry {
			for _, dr := range ds {
				d.m.kinds[dr.Kind]++
			}
		}
		// The notices are no drift (the tracker never holds them) but are
		// counted by kind too, as the metric's help says.
		for k, n := range d.noticeKinds {
			d.m.kinds[k] += n
		}
		d.partsCount(d.m.kinds)
	}
	return metrics.Snapshot{State: d.snapshotState(), Drift: d.m.kinds, Declared: d.partsKinds(d.ix.kinds), LastCheck: d.lastCheck, LastChange: d.m.lastChange,
		WatchedPaths: d.ix.paths, Units: d.ix.units, ExcludedPaths: d.excl.paths, PolledDirs: len(d.polled()), WatchesExhausted: d.exhausted,
		Inhibitors: len(d.inhibitors), InternalInhibitors: d.internalInhibitors(), LoadFailing: d.loadFailing(), LoadFailures: d.m.loadFailures, Attribution: d.attributionMetric()}
}

// loadFailing: what the daemon checks against is not what the files in
// place say, the desired state's or the exclusions' having been refused.
func (d *Daemon) loadFailing() bool { return d.loadErr != nil || d.excl.refused != nil }

// errNotChecked refuses metrics before the first full check: nothing is
// known yet, and "no drift counted" must not read as clean.
var errNotChecked = errors.New("the first check has not finished: nothing is known yet")

// MetricsText renders the metrics on request (the bus's GetMetrics), from
// the same snapshot as the textfile.
func (d *Daemon) MetricsText(ctx context.Context) ([]byte, error) {
	var s metrics.Snapshot
	err := d.do(ctx, func(context.Context) error {
		if !d.ready {
			return errNotChecked
		}
		s = d.metricsSnapshot()
		return nil
	})
	if err != nil {
		return nil, err
	}
	return metrics.Text(s, d.o.Version)
}
