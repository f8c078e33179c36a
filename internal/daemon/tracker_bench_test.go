package daemon

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"

	"github.com/drift-monitor/drift-monitor/internal/drift"
	"github.com/drift-monitor/drift-monitor/internal/journal"
	"github.com/drift-monitor/drift-monitor/internal/model"
)

// benchDrifts is one missing-file drift for each of n entries, behind paths
// of about 200 bytes.
func benchDrifts(n int) map[string][]drift.Drift {
	now := make(map[string][]drift.Drift, n)
	for i := range n {
		p := fmt.Sprintf("/etc/bench/%0180d/d%04d/f%06d.conf", 0, i/100, i)
		id := "file:" + p
		now[id] = []drift.Drift{{Kind: drift.Missing, Entry: model.KindFile, Path: p, EntryID: id,
			Message: fmt.Sprintf("file %q does not exist", p)}}
	}
	return now
}

func benchDaemon(b *testing.B, log *slog.Logger) *Daemon {
	b.Helper()
	d, err := New(Options{Root: b.TempDir(), Log: log})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(d.Close)
	return d
}

// BenchmarkDriftEvent is what the event loop does after an event that
// resolves one drift, and after the one that brings it back, while n drifts
// are known: the tracker's update, the status line (updateStatus) and the
// snapshot for the bus (publish, which renders the status line again). Its
// cost must not grow with n: a storm of n events over n drifts must not be
// O(n²).
func BenchmarkDriftEvent(b *testing.B) {
	for _, n := range []int{1000, 100000} {
		b.Run(fmt.Sprintf("drifts=%d", n), func(b *testing.B) {
			d := benchDaemon(b, slog.New(slog.DiscardHandler))
			now := benchDrifts(n)
			d.track.replace(now)
			ids := make([]string, 0, n)
			for id := range now {
				ids = append(ids, id)
			}
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				id := ids[i%len(ids)]
				d.track.update(id, nil)
				_ = d.status()
				_ = d.snapshot()
				d.track.update(id, now[id])
				_ = d.status()
				_ = d.snapshot()
			}
		})
	}
}

// BenchmarkFirstCheckOf100kDrifts is the bookkeeping of a full check that
// finds 100,000 drifts where none were known, and its 100,000 journal
// records (one each, none larger than its drift: plain lines to io.Discard).
func BenchmarkFirstCheckOf100kDrifts(b *testing.B) {
	now := benchDrifts(100000)
	d := benchDaemon(b, slog.New(journal.NewHandler(io.Discard, journal.WithNative(false))))
	b.ReportAllocs()
	for b.Loop() {
		d.track = newTracker()
		appeared, resolved := d.track.replace(now)
		d.report(context.Background(), appeared, resolved)
	}
}
