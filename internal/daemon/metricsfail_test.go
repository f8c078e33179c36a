package daemon

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/drift-monitor/drift-monitor/internal/journal"
)

// TestMetricsWriteFailedOncePerCause: a write of the textfile that fails
// removes the file it last wrote (which said clean while the host drifted,
// on a full file system) and is journaled once per cause, however often it
// is retried, although each attempt names another random temporary file;
// after a success the next failure is journaled again.
func TestMetricsWriteFailedOncePerCause(t *testing.T) {
	ctx := context.Background()
	prom := filepath.Join(t.TempDir(), "drift-monitor.prom")
	d, _, log := syntheticDaemon(t, Options{MetricsTextfile: prom})
	if err := os.WriteFile(prom, []byte("drift_monitor_state{state=\"clean\"} 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	full := func(attempt int) error {
		tmp := fmt.Sprintf("%s%d", prom, 1000+attempt)
		return fmt.Errorf("writing metrics to %s: %w", prom, &fs.PathError{Op: "write", Path: tmp, Err: syscall.ENOSPC})
	}
	var last metricsFailure
	for i := range 5 {
		last = d.metricsWritten(ctx, full(i), last)
	}
	if _, err := os.Stat(prom); !os.IsNotExist(err) {
		t.Errorf("the textfile last written is still there after failed writes: %v", err)
	}
	if got := len(log.find(journal.MsgMetricsFailed, "")); got != 1 {
		t.Errorf("%d records for five failures of one cause, want 1", got)
	}
	last = d.metricsWritten(ctx, &os.LinkError{Op: "rename", Old: prom + "7", New: prom, Err: syscall.EROFS}, last)
	if got := len(log.find(journal.MsgMetricsFailed, "")); got != 2 {
		t.Errorf("%d records after another cause, want 2", got)
	}
	last = d.metricsWritten(ctx, nil, last)
	d.metricsWritten(ctx, full(9), last)
	if got := len(log.find(journal.MsgMetricsFailed, "")); got != 3 {
		t.Errorf("%d records after a success and a failure again, want 3", got)
	}
}
