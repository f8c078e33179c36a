// Package mcdfollow is the daemon's part that follows the OpenShift
// machine-config daemon's updates (daemon --mcd): it feeds the state machine
// of package mcd with the MCD's journal lines (replayed at start, then
// followed), the renames of currentconfig and the MCD's transient reboot
// unit, and holds reports while the machine does, as one more inhibitor,
// "machine-config-daemon".
//
// It promises that every hold ends (the machine's timeouts), that what it
// could not follow is said (a record, and the status line in rename-only
// mode), and that a restart in the middle of an update holds as the run
// before did. It does not promise to see an update whose start line it
// cannot read before its first write: rename-only mode holds a new drift
// for the hold-down only.
package mcdfollow

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"
	"golang.org/x/sys/unix"

	"github.com/drift-monitor/drift-monitor/internal/daemon/part"
	"github.com/drift-monitor/drift-monitor/internal/escape"
	"github.com/drift-monitor/drift-monitor/internal/fsx"
	"github.com/drift-monitor/drift-monitor/internal/inhibit"
	"github.com/drift-monitor/drift-monitor/internal/journal"
	"github.com/drift-monitor/drift-monitor/internal/mcd"
)

// The machine-config daemon's record of the applied config, and
// HyperShift's (machine-config-operator pkg/daemon/constants:
// CurrentConfigPath; daemon.go:syncNodeHypershift).
const (
	CurrentConfig          = "/etc/machine-config-daemon/currentconfig"
	HypershiftConfig       = "/etc/mcd-currentconfig.json"
	mcdWho                 = "machine-config-daemon"
	mcdFile                = "(internal) machine-config-daemon"
	mcdJournalRetry        = 5 * time.Second
	mcdReplayTimeout       = 20 * time.Second
	mcdCurrentConfigSettle = 100 * time.Millisecond
)

// Follower is the part that follows the MCD's updates: the machine, the
// journal follower and the watch on currentconfig feed it through the loop
// (Host.Do); the machine's hold is one more inhibitor (part.Holder).
type Follower struct {
	o Options
	h part.Host
	m mcd.Machine
	// renameOnly says why the journal is not followed ("" : it is).
	renameOnly string
	// The file currentconfig was when last read, to tell a rewrite.
	dev, ino uint64
	timer    *time.Timer
	stops    []func()
	mu       sync.Mutex // guards timer against the AfterFunc goroutine
	// journaled are the keys (mcd.Note.Key) of the notes journaled in
	// this boot, oldest first, kept in Options.NotesFile.
	journaled  []string
	saveWarned bool
}

// Options configure a Follower.
type Options struct {
	// Path is the currentconfig to follow (CurrentConfig or
	// HypershiftConfig).
	Path string
	// Timeouts of the phases; zero fields take mcd.DefaultTimeouts'.
	Timeouts mcd.Timeouts
	// Journalctl is the journalctl binary ("" : on $PATH).
	Journalctl string
	// NotesFile keeps the keys of the notes journaled in this boot (in the
	// runtime directory, which a reboot empties), so that a restart's
	// replay of the journal does not journal them again; "" keeps none.
	NotesFile string
}

// maxNotes bounds the notes remembered: a boot has a handful.
const maxNotes = 64

// New makes the follower of o.Path; Start starts it.
func New(o Options) *Follower {
	f := &Follower{o: o}
	f.m.T = withDefaults(o.Timeouts)
	return f
}

// Path is the currentconfig to follow for the daemon's --config paths and
// --mcd mode ("auto" or "": when a config is currentconfig; "on"; "off"),
// "" when the follower is off.
func Path(configs []string, mode string) string {
	if mode == "off" {
		return ""
	}
	for _, c := range configs {
		if p := filepath.Clean(c); p == CurrentConfig || p == HypershiftConfig {
			return p
		}
	}
	if mode == "on" {
		return CurrentConfig
	}
	return ""
}

// Name is the part's name in the daemon's table.
func (f *Follower) Name() string { return "mcd" }

// Start starts following the MCD: the state is first recovered from the
// journal (this boot's MCD lines, and the previous boot's), so that a
// restart in the middle of an update holds reports as the run before did.
func (f *Follower) Start(ctx context.Context, h part.Host) {
	f.h = h
	f.loadJournaled()
	p := f.o.Path
	j := mcd.Journal{Journalctl: f.o.Journalctl}
	this, cursor, err := "", "", error(nil)
	if p == HypershiftConfig {
		f.renameOnly = "HyperShift's MCD journals no start line"
	} else {
		this, cursor, err = f.replay(ctx, j)
		if err != nil {
			f.renameOnly = err.Error()
		}
	}
	if f.renameOnly != "" {
		f.m = mcd.Machine{T: f.m.T, RenameOnly: true}
		f.h.Record(ctx, slog.LevelWarn, journal.MsgMCD, fmt.Sprintf("machine-config-daemon: following %s by its renames only, each held %s (%s): an update whose writing takes longer is reported as drift until its rename",
			p, f.m.T.HoldDown, escape.Name(f.renameOnly)))
	}
	name, dev, ino, rerr := readConfigName(p)
	if rerr != nil {
		f.h.Record(ctx, slog.LevelWarn, journal.MsgMCD, "machine-config-daemon: "+escape.Name(rerr.Error()))
	}
	f.dev, f.ino = dev, ino
	f.m.CurrentConfig(name, false, time.Now())
	f.m.Tick(time.Now())
	f.apply(ctx)
	f.watchCurrentConfig(ctx)
	// A reboot the MCD asked for before this start (the journal's
	// replay knows it too; without the journal only the unit tells).
	f.rebootUnit(ctx)
	if f.renameOnly == "" {
		f.followJournal(ctx, j, this, cursor)
	}
}

func withDefaults(t mcd.Timeouts) mcd.Timeouts {
	def := mcd.DefaultTimeouts
	for _, p := range []struct{ v, d *time.Duration }{{&t.Update, &def.Update}, {&t.Post, &def.Post},
		{&t.Reboot, &def.Reboot}, {&t.Boot, &def.Boot}, {&t.Quiet, &def.Quiet}, {&t.HoldDown, &def.HoldDown}} {
		if *p.v <= 0 {
			*p.v = *p.d
		}
	}
	return t
}

// replay feeds the machine the MCD's lines of the previous boot and of
// this one, and returns this boot's id and the cursor to follow from; an
// error means the journal cannot be read.
func (f *Follower) replay(ctx context.Context, j mcd.Journal) (this, cursor string, err error) {
	ctx, cancel := context.WithTimeout(ctx, mcdReplayTimeout)
	defer cancel()
	boot, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return "", "", fmt.Errorf("reading the boot id: %w", err)
	}
	this, prev, err := j.Boots(ctx, string(boot))
	if err != nil {
		return "", "", err
	}
	m := &f.m
	booted := bootTime()
	if prev != "" {
		recs, _, err := j.Read(ctx, prev)
		if err != nil {
			// Without the previous boot an update that rebooted is not
			// seen as one: said, but this boot's lines are still followed.
			f.h.Record(ctx, slog.LevelWarn, journal.MsgMCD, fmt.Sprintf("machine-config-daemon: the previous boot's journal cannot be read: %s", escape.Name(err.Error())))
		}
		for _, r := range recs {
			m.Line(r.Line, r.At)
			// The boot came after the previous one's last line (a
			// container's CLOCK_BOOTTIME is its host's).
			if r.At.After(booted) {
				booted = r.At
			}
		}
	}
	m.NewBoot(booted)
	// What the previous boot's lines had to say was that boot's to say.
	m.Notes()
	recs, cursor, err := j.Read(ctx, this)
	if err != nil {
		return "", "", err
	}
	for _, r := range recs {
		m.Line(r.Line, r.At)
	}
	f.notes(ctx)
	return this, cursor, nil
}

// bootTime is when this boot started (the realtime clock less the time
// since boot, suspend included).
func bootTime() time.Time {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts); err != nil {
		return time.Now()
	}
	return time.Now().Add(-time.Duration(ts.Nano()))
}

// followJournal hands the MCD's new lines to the loop, restarting
// journalctl from the last cursor if it exits.
func (f *Follower) followJournal(ctx context.Context, j mcd.Journal, this, cursor string) {
	fctx, cancel := context.WithCancel(ctx)
	f.stops = append(f.stops, cancel)
	recs := make(chan mcd.Record, 64)
	go func() {
		defer close(recs)
		for {
			var err error
			cursor, err = j.Follow(fctx, this, cursor, recs)
			if fctx.Err() != nil {
				return
			}
			f.h.Do(fctx, func(lctx context.Context) {
				f.h.Record(lctx, slog.LevelWarn, journal.MsgMCD, fmt.Sprintf("machine-config-daemon: following the journal: %s; again in %s", escape.Name(err.Error()), mcdJournalRetry))
			})
			select {
			case <-fctx.Done():
				return
			case <-time.After(mcdJournalRetry):
			}
		}
	}()
	go func() {
		for r := range recs {
			f.h.Do(fctx, func(lctx context.Context) { f.line(lctx, r) })
		}
	}()
}

// watchCurrentConfig follows the renames of currentconfig (fsnotify on its
// directory: the MCD renames a temporary file into place) and the MCD's
// transient reboot unit (its file in /run/systemd/transient: a reboot
// marker the journal need not be read for).
func (f *Follower) watchCurrentConfig(ctx context.Context) {
	w, err := fsnotify.NewWatcher()
	if err == nil {
		err = w.Add(filepath.Dir(f.o.Path))
	}
	if err != nil {
		f.h.Record(ctx, slog.LevelWarn, journal.MsgMCD, fmt.Sprintf("machine-config-daemon: cannot watch %s (its renames are seen at the next MCD line or reload only): %v", filepath.Dir(f.o.Path), err))
		if w != nil {
			w.Close()
		}
		return
	}
	transient := filepath.Dir(mcd.RebootUnit)
	if err := w.Add(transient); err != nil {
		// No transient unit yet this boot: systemd makes the directory
		// with the first one, in /run/systemd.
		if err := w.Add(filepath.Dir(transient)); err != nil {
			f.h.Log().Debug(fmt.Sprintf("machine-config-daemon: not watching %s: %v", transient, err))
		}
	}
	f.stops = append(f.stops, func() { w.Close() })
	go func() {
		var settle <-chan time.Time
		var config, unit bool
		for {
			select {
			case ev, ok := <-w.Events:
				if !ok {
					return
				}
				switch {
				case ev.Name == transient && ev.Has(fsnotify.Create):
					// Its first unit may be in it before the watch.
					_ = w.Add(transient)
					unit = true
				case ev.Name == f.o.Path:
					config = true
				case ev.Name == mcd.RebootUnit && !ev.Has(fsnotify.Remove) && !ev.Has(fsnotify.Rename):
					unit = true
				default:
					continue
				}
				settle = time.After(mcdCurrentConfigSettle)
			case _, ok := <-w.Errors:
				if !ok {
					return
				}
				config, settle = true, time.After(mcdCurrentConfigSettle)
			case <-settle:
				c, u := config, unit
				settle, config, unit = nil, false, false
				f.h.Do(ctx, func(lctx context.Context) {
					if c {
						f.ConfigChanged(lctx)
					}
					if u {
						f.rebootUnit(lctx)
					}
				})
			}
		}
	}()
}

// rebootUnit takes the MCD's transient reboot unit: the reboot into the
// config its description names.
func (f *Follower) rebootUnit(ctx context.Context) {
	fh, err := os.Open(mcd.RebootUnit)
	if err != nil {
		f.h.Log().Debug(fmt.Sprintf("machine-config-daemon: %v", err))
		return
	}
	defer fh.Close()
	b, err := io.ReadAll(io.LimitReader(fh, 64<<10))
	if err != nil {
		f.h.Log().Debug(fmt.Sprintf("machine-config-daemon: reading %s: %v", mcd.RebootUnit, err))
		return
	}
	l, ok := mcd.ParseRebootUnit(b)
	if !ok {
		return
	}
	f.refreshCurrentConfig()
	f.m.Line(l, time.Now())
	f.apply(ctx)
}

// Stop stops the follower's goroutines.
func (f *Follower) Stop() {
	f.mu.Lock()
	if f.timer != nil {
		f.timer.Stop()
	}
	f.mu.Unlock()
	for _, s := range f.stops {
		s()
	}
}

// line takes one MCD line: currentconfig is read first, since the MCD
// renames it before it says what follows.
func (f *Follower) line(ctx context.Context, r mcd.Record) {
	f.refreshCurrentConfig()
	f.m.Line(r.Line, r.At)
	f.apply(ctx)
}

// ConfigChanged takes a change of currentconfig (the daemon's watch of the
// desired-state files, or the follower's own).
func (f *Follower) ConfigChanged(ctx context.Context) {
	f.refreshCurrentConfig()
	f.apply(ctx)
}

func (f *Follower) refreshCurrentConfig() {
	name, dev, ino, err := readConfigName(f.o.Path)
	if err != nil {
		// Kept as it was (deleted by an admin, unreadable): the desired
		// state's own load says what is wrong with it.
		f.h.Log().Debug(fmt.Sprintf("machine-config-daemon: %v", err))
		return
	}
	rewritten := dev != f.dev || ino != f.ino
	f.dev, f.ino = dev, ino
	f.m.CurrentConfig(name, rewritten, time.Now())
}

// tick runs when a phase's time is up.
func (f *Follower) tick(ctx context.Context) {
	f.m.Tick(time.Now())
	f.apply(ctx)
}

// Activity: file events while held (a rollback writing files back).
func (f *Follower) Activity() { f.m.Activity(time.Now()) }

// HoldDrift decides, in rename-only mode, whether a drift that appeared
// outside a full check is held (HoldDown): it may be an update's first
// write. The release's full check reports it if it persists.
func (f *Follower) HoldDrift(ctx context.Context) bool {
	if !f.m.RenameOnly {
		return false
	}
	if f.m.Phase() == mcd.HoldDown {
		return true // taken by an entry before this one in the same batch
	}
	if !f.m.NewDrift(time.Now()) {
		return false
	}
	f.apply(ctx)
	return true
}

// notes journals what the machine had to say, each note once in a boot:
// a restart replays the journal, and the machine says again what it said
// before (a phase that timed out).
func (f *Follower) notes(ctx context.Context) {
	for _, n := range f.m.Notes() {
		if n.Key != "" && slices.Contains(f.journaled, n.Key) {
			f.h.Log().Debug("machine-config-daemon: journaled before in this boot: " + n.Text)
			continue
		}
		level := slog.LevelInfo
		if n.Warn {
			level = slog.LevelWarn
		}
		f.h.Record(ctx, level, journal.MsgMCD, "machine-config-daemon: "+escape.Name(n.Text))
		if n.Key != "" && !strings.ContainsAny(n.Key, "\n\x00") {
			f.journaled = append(f.journaled, n.Key)
			f.saveJournaled()
		}
	}
}

// loadJournaled reads the keys of the notes journaled in this boot.
func (f *Follower) loadJournaled() {
	if f.o.NotesFile == "" {
		return
	}
	b, err := readBounded(f.o.NotesFile, 64<<10)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			f.h.Log().Warn(fmt.Sprintf("machine-config-daemon: the notes of this boot cannot be read (a restart journals them again): %v", err))
		}
		return
	}
	for _, k := range strings.Split(string(b), "\n") {
		if k != "" {
			f.journaled = append(f.journaled, k)
		}
	}
}

// saveJournaled keeps the keys of the notes journaled, the newest
// maxNotes, in NotesFile (replaced whole).
func (f *Follower) saveJournaled() {
	if f.o.NotesFile == "" {
		return
	}
	if len(f.journaled) > maxNotes {
		f.journaled = slices.Clone(f.journaled[len(f.journaled)-maxNotes:])
	}
	err := writeNotes(f.o.NotesFile, strings.Join(f.journaled, "\n")+"\n")
	if err != nil && !f.saveWarned {
		f.saveWarned = true
		f.h.Log().Warn(fmt.Sprintf("machine-config-daemon: the notes of this boot cannot be kept (a restart journals them again): %v", err))
	}
}

// writeNotes replaces the file p with text (fsx's writer: a reader sees
// the old file or the new one; a power cut loses it with /run anyway).
func writeNotes(p, text string) error {
	dfd, err := unix.Open(filepath.Dir(p), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("writing %s: %w", p, err)
	}
	defer unix.Close(dfd)
	base := filepath.Base(p)
	if err := fsx.WriteFile(fsx.Sys{}, dfd, fsx.File{Name: base, Pattern: "." + base + ".*", Mode: 0o600, How: fsx.Replace, NoSync: true},
		fsx.Bytes([]byte(text))); err != nil {
		return fmt.Errorf("writing %s: %w", p, err)
	}
	return nil
}

// readBounded reads at most limit bytes of the file p.
func readBounded(p string, limit int64) ([]byte, error) {
	fh, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	return io.ReadAll(io.LimitReader(fh, limit))
}

// apply journals the machine's notes, has the daemon take its hold, and
// arms the timer of its next deadline.
func (f *Follower) apply(ctx context.Context) {
	f.notes(ctx)
	f.h.HoldChanged(ctx)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.timer != nil {
		f.timer.Stop()
		f.timer = nil
	}
	if dl, ok := f.m.Deadline(); ok {
		f.timer = time.AfterFunc(time.Until(dl), func() {
			f.h.Do(ctx, f.tick)
		})
	}
}

// Held is the machine's hold as an inhibitor.
func (f *Follower) Held() (inhibit.Inhibitor, bool) {
	on, why := f.m.Held()
	return inhibit.Inhibitor{Who: mcdWho, Why: why, File: mcdFile}, on
}

// Caveat is what the status line says of the follower ("" : nothing).
func (f *Follower) Caveat() string {
	if f.renameOnly == "" {
		return ""
	}
	return "machine-config-daemon followed by the renames of currentconfig only (" + escape.Name(f.renameOnly) + ")"
}

// readConfigName reads metadata.name of a MachineConfig, decoding no more
// than it must: the MCD writes metadata first (encoding/json of the typed
// object, storeCurrentConfigOnDisk), and the rest holds every declared
// file's contents.
func readConfigName(p string) (name string, dev, ino uint64, err error) {
	fh, err := os.Open(p)
	if err != nil {
		return "", 0, 0, err
	}
	defer fh.Close()
	var st unix.Stat_t
	if err := unix.Fstat(int(fh.Fd()), &st); err != nil {
		return "", 0, 0, fmt.Errorf("examining %s: %w", p, err)
	}
	dec := json.NewDecoder(io.LimitReader(fh, 64<<20))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return "", 0, 0, fmt.Errorf("%s: not a JSON object", p)
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return "", 0, 0, fmt.Errorf("reading %s: %w", p, err)
		}
		if k, _ := t.(string); k == "metadata" {
			var md struct {
				Name string `json:"name"`
			}
			if err := dec.Decode(&md); err != nil {
				return "", 0, 0, fmt.Errorf("reading %s: metadata: %w", p, err)
			}
			if md.Name == "" {
				return "", 0, 0, fmt.Errorf("%s: no metadata.name", p)
			}
			// Shown in the inhibitor's why, which the bus carries as it
			// is: escaped here.
			return escape.Name(md.Name), uint64(st.Dev), st.Ino, nil
		}
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return "", 0, 0, fmt.Errorf("reading %s: %w", p, err)
		}
	}
	return "", 0, 0, errors.New(strings.TrimSpace(p + ": no metadata"))
}
