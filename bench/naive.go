package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"sort"

	"github.com/drift-monitor/drift-monitor/internal/check"
	"github.com/drift-monitor/drift-monitor/internal/desired"
	"github.com/drift-monitor/drift-monitor/internal/drift"
	"github.com/drift-monitor/drift-monitor/internal/enablement"
	"github.com/drift-monitor/drift-monitor/internal/escape"
	"github.com/drift-monitor/drift-monitor/internal/journal"
	"github.com/drift-monitor/drift-monitor/internal/memlimit"
	"github.com/drift-monitor/drift-monitor/internal/model"
	"github.com/drift-monitor/drift-monitor/internal/ondisk"
	"github.com/fsnotify/fsnotify"
)

// cmdNaive is `drift-bench naive --root R --config C`: the baseline, the
// original MCO Config Drift Monitor's strategy — fsnotify on the directories
// of the declared paths, and on every event a re-validation of every declared
// path (here with drift-monitor's own engine, check.Checker.All, so that only
// the strategy differs). It writes the same records as the daemon, on stderr,
// and sends READY=1 after its first check.
func cmdNaive(ctx context.Context, args []string) error {
	flags := newFlagSet("naive")
	root := flags.String("root", "", "fixture root")
	cfg := flags.String("config", "", "config")
	if err := flags.Parse(args); err != nil {
		return err
	}
	r, err := ondisk.OpenRoot(*root)
	if err != nil {
		return err
	}
	st, err := desired.LoadCached(nil, r, []string{*cfg}, memlimit.ConfigLoad)
	if err != nil {
		return err
	}
	c := &check.Checker{Root: r, Units: enablement.Offline{Root: r}}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return err
	}
	if err := watchDirs(w, *root, st.Entries); err != nil {
		return err
	}
	log := slog.New(journal.NewHandler(os.Stderr, journal.WithNative(false)))
	known := map[string]drift.Drift{}
	validate := func() { known = revalidate(ctx, log, c, st.Entries, known) }
	validate()
	if err := sdNotify("READY=1"); err != nil {
		return err
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case _, ok := <-w.Events:
			if !ok {
				return nil
			}
			validate()
		case err, ok := <-w.Errors:
			if !ok {
				return nil
			}
			log.Warn(fmt.Sprintf("fsnotify: %v", err))
			validate()
		}
	}
}

// watchDirs watches, under root, the directories of the declared paths.
func watchDirs(w *fsnotify.Watcher, root string, entries []model.Entry) error {
	dirs := map[string]bool{}
	for _, e := range entries {
		dirs[path.Dir(e.Path)] = true
	}
	sorted := make([]string, 0, len(dirs))
	for d := range dirs {
		sorted = append(sorted, d)
	}
	sort.Strings(sorted)
	for _, d := range sorted {
		if err := w.Add(filepath.Join(root, d)); err != nil {
			return fmt.Errorf("watching %s: %w", d, err)
		}
	}
	return nil
}

// revalidate checks every entry, logs the drift that is new since known and
// the drift that is gone, and returns the drift now known.
func revalidate(ctx context.Context, log *slog.Logger, c *check.Checker, entries []model.Entry, known map[string]drift.Drift) map[string]drift.Drift {
	res := c.All(ctx, entries)
	now := map[string]drift.Drift{}
	for _, d := range res.Drift {
		now[d.EntryID+"\x00"+d.Key()] = d
	}
	for k, d := range now {
		if _, ok := known[k]; !ok {
			log.LogAttrs(ctx, slog.LevelWarn, d.Message, attrs(journal.DriftDetected(d.Entry), &d)...)
		}
	}
	for k, d := range known {
		if _, ok := now[k]; !ok {
			log.LogAttrs(ctx, journal.LevelNotice, "Resolved: "+d.Message, attrs(journal.MsgDriftResolved, &d)...)
		}
	}
	return now
}

func attrs(id string, d *drift.Drift) []slog.Attr {
	return []slog.Attr{
		journal.MessageID(id), journal.Record(id),
		slog.String("DRIFT_KIND", string(d.Kind)),
		slog.String("DRIFT_ENTRY", string(d.Entry)),
		slog.String("DRIFT_PATH", escape.Name(d.Path)),
	}
}
