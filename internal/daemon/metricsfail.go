package daemon

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"

	"github.com/drift-monitor/drift-monitor/internal/escape"
	"github.com/drift-monitor/drift-monitor/internal/journal"
)

// A textfile that cannot be written (a full file system, a directory gone
// or read-only) must not go on saying what it said last: node_exporter
// would export a clean host, as of its last write, for as long as the
// failure lasts, and only the staleness alert (minutes later) would tell.
// So the file is removed when a write fails, as the previous run's is at
// start-up (removeStaleMetrics): its series gone, the shipped rules report
// the daemon not reporting. And the failure is journaled once per cause, not once per
// attempt: the writer's temporary file has a new random name at each
// attempt, which the error's text holds.

// metricsFailure is why the last write of the textfile failed, as far as
// saying it again goes ("": it did not).
type metricsFailure string

// metricsCause is the cause of a failed write: the operation and the
// system's error, without the file names (the temporary one is random).
func metricsCause(err error) metricsFailure {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return metricsFailure(pe.Op + ": " + pe.Err.Error())
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		return metricsFailure(le.Op + ": " + le.Err.Error())
	}
	return metricsFailure(err.Error())
}

// metricsWritten takes the outcome of a write of the textfile, given the
// failure last journaled, and returns the one to remember: on a failure the
// stale file is removed, and the failure journaled unless its cause is the
// one last journaled.
func (d *Daemon) metricsWritten(ctx context.Context, err error, last metricsFailure) metricsFailure {
	if err == nil {
		return ""
	}
	msg := err.Error()
	if rerr := os.Remove(d.o.MetricsTextfile); rerr == nil {
		msg += "; removed the file it last wrote, which no longer says how the host is"
	} else if !errors.Is(rerr, fs.ErrNotExist) {
		msg += fmt.Sprintf("; and removing the file it last wrote: %v", rerr)
	}
	cause := metricsCause(err)
	if cause != last {
		d.record(ctx, slog.LevelError, journal.MsgMetricsFailed, escape.Name(msg), journal.MetricsFile(escape.Name(d.o.MetricsTextfile)))
	}
	return cause
}
