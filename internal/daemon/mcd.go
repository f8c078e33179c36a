package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"
	"golang.org/x/sys/unix"

	"github.com/drift-monitor/drift-monitor/internal/escape"
	"github.com/drift-monitor/drift-monitor/internal/inhibit"
	"github.com/drift-monitor/drift-monitor/internal/journal"
	"github.com/drift-monitor/drift-monitor/internal/mcd"
)

// The machine-config daemon's record of the applied config, and
// HyperShift's (machine-config-operator pkg/daemon/constants:
// CurrentConfigPath; daemon.go:syncNodeHypershift).
const (
	MCDCurrentConfig       = "/etc/machine-config-daemon/currentconfig"
	MCDHypershiftConfig    = "/etc/mcd-currentconfig.json"
	mcdWho                 = "machine-config-daemon"
	mcdFile                = "(internal) machine-config-daemon"
	mcdJournalRetry        = 5 * time.Second
	mcdReplayTimeout       = 20 * time.Second
	mcdCurrentConfigSettle = 100 * time.Millisecond
)

// MCDOptions configure the internal inhibitor that follows the MCD's
// updates (package mcd).
type MCDOptions struct {
	// Mode: "auto" (on when a --config is the MCD's currentconfig), "on",
	// "off"; "" is auto.
	Mode string
	// Timeouts of the phases; zero fields take mcd.DefaultTimeouts'.
	Timeouts mcd.Timeouts
	// Journalctl is the journalctl binary ("" : on $PATH).
	Journalctl string
}

// mcdFollower is the daemon's side of the MCD's updates: the machine, the
// journal follower and the watch on currentconfig feed it through the
// loop (Daemon.do); the machine's hold is one more inhibitor.
type mcdFollower struct {
	path string
	m    mcd.Machine
	// renameOnly says why the journal is not followed ("" : it is).
	renameOnly string
	// The file currentconfig was when last read, to tell a rewrite.
	dev, ino uint64
	timer    *time.Timer
	stops    []func()
	mu       sync.Mutex // guards timer against the AfterFunc goroutine
}

// mcdPath is the currentconfig to follow, "" when the follower is off.
func mcdPath(o Options) string {
	mode := o.MCD.Mode
	if mode == "off" {
		return ""
	}
	for _, c := range o.Configs {
		if p := filepath.Clean(c); p == MCDCurrentConfig || p == MCDHypershiftConfig {
			return p
		}
	}
	if mode == "on" {
		return MCDCurrentConfig
	}
	return ""
}

// followMCD starts following the MCD, when asked to: the state is first
// recovered from the journal (this boot's MCD lines, and the previous
// boot's), so that a restart in the middle of an update holds reports as
// the run before did.
func (d *Daemon) followMCD(ctx context.Context) {
	p := mcdPath(d.o)
	if p == "" {
		return
	}
	f := &mcdFollower{path: p}
	f.m.T = withDefaults(d.o.MCD.Timeouts)
	d.mcd = f
	j := mcd.Journal{Journalctl: d.o.MCD.Journalctl}
	this, cursor, err := "", "", error(nil)
	if p == MCDHypershiftConfig {
		f.renameOnly = "HyperShift's MCD journals no start line"
	} else {
		this, cursor, err = d.replayMCD(ctx, j)
		if err != nil {
			f.renameOnly = err.Error()
		}
	}
	if f.renameOnly != "" {
		f.m = mcd.Machine{T: f.m.T, RenameOnly: true}
		d.record(ctx, slog.LevelWarn, journal.MsgMCD, fmt.Sprintf("machine-config-daemon: following %s by its renames only, each held %s (%s): an update whose writing takes longer is reported as drift until its rename",
			p, f.m.T.HoldDown, escape.Name(f.renameOnly)))
	}
	name, dev, ino, rerr := readConfigName(p)
	if rerr != nil {
		d.record(ctx, slog.LevelWarn, journal.MsgMCD, "machine-config-daemon: "+escape.Name(rerr.Error()))
	}
	f.dev, f.ino = dev, ino
	f.m.CurrentConfig(name, false, time.Now())
	f.m.Tick(time.Now())
	d.mcdApply(ctx)
	d.watchCurrentConfig(ctx, f)
	// A reboot the MCD asked for before this start (the journal's
	// replay knows it too; without the journal only the unit tells).
	d.mcdRebootUnit(ctx)
	if f.renameOnly == "" {
		d.followMCDJournal(ctx, j, this, cursor)
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

// replayMCD feeds the machine the MCD's lines of the previous boot and of
// this one, and returns this boot's id and the cursor to follow from; an
// error means the journal cannot be read.
func (d *Daemon) replayMCD(ctx context.Context, j mcd.Journal) (this, cursor string, err error) {
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
	m := &d.mcd.m
	booted := bootTime()
	if prev != "" {
		recs, _, err := j.Read(ctx, prev)
		if err != nil {
			// Without the previous boot an update that rebooted is not
			// seen as one: said, but this boot's lines are still followed.
			d.record(ctx, slog.LevelWarn, journal.MsgMCD, fmt.Sprintf("machine-config-daemon: the previous boot's journal cannot be read: %s", escape.Name(err.Error())))
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
	recs, cursor, err := j.Read(ctx, this)
	if err != nil {
		return "", "", err
	}
	for _, r := range recs {
		m.Line(r.Line, r.At)
	}
	d.mcdNotes(ctx)
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

// followMCDJournal hands the MCD's new lines to the loop, restarting
// journalctl from the last cursor if it exits.
func (d *Daemon) followMCDJournal(ctx context.Context, j mcd.Journal, this, cursor string) {
	fctx, cancel := context.WithCancel(ctx)
	d.mcd.stops = append(d.mcd.stops, cancel)
	recs := make(chan mcd.Record, 64)
	go func() {
		defer close(recs)
		for {
			var err error
			cursor, err = j.Follow(fctx, this, cursor, recs)
			if fctx.Err() != nil {
				return
			}
			d.do(fctx, func(lctx context.Context) error {
				d.record(lctx, slog.LevelWarn, journal.MsgMCD, fmt.Sprintf("machine-config-daemon: following the journal: %s; again in %s", escape.Name(err.Error()), mcdJournalRetry))
				return nil
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
			r := r
			d.do(fctx, func(lctx context.Context) error { d.mcdLine(lctx, r); return nil })
		}
	}()
}

// watchCurrentConfig follows the renames of currentconfig (fsnotify on its
// directory: the MCD renames a temporary file into place) and the MCD's
// transient reboot unit (its file in /run/systemd/transient: a reboot
// marker the journal need not be read for).
func (d *Daemon) watchCurrentConfig(ctx context.Context, f *mcdFollower) {
	w, err := fsnotify.NewWatcher()
	if err == nil {
		err = w.Add(filepath.Dir(f.path))
	}
	if err != nil {
		d.record(ctx, slog.LevelWarn, journal.MsgMCD, fmt.Sprintf("machine-config-daemon: cannot watch %s (its renames are seen at the next MCD line or reload only): %v", filepath.Dir(f.path), err))
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
			d.log.Debug(fmt.Sprintf("machine-config-daemon: not watching %s: %v", transient, err))
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
				case ev.Name == f.path:
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
				d.do(ctx, func(lctx context.Context) error {
					if c {
						d.mcdCurrentConfig(lctx)
					}
					if u {
						d.mcdRebootUnit(lctx)
					}
					return nil
				})
			}
		}
	}()
}

// mcdRebootUnit takes the MCD's transient reboot unit: the reboot into the
// config its description names.
func (d *Daemon) mcdRebootUnit(ctx context.Context) {
	fh, err := os.Open(mcd.RebootUnit)
	if err != nil {
		d.log.Debug(fmt.Sprintf("machine-config-daemon: %v", err))
		return
	}
	defer fh.Close()
	b, err := io.ReadAll(io.LimitReader(fh, 64<<10))
	if err != nil {
		d.log.Debug(fmt.Sprintf("machine-config-daemon: reading %s: %v", mcd.RebootUnit, err))
		return
	}
	l, ok := mcd.ParseRebootUnit(b)
	if !ok {
		return
	}
	d.refreshCurrentConfig(ctx)
	d.mcd.m.Line(l, time.Now())
	d.mcdApply(ctx)
}

// stopMCD stops the follower's goroutines.
func (d *Daemon) stopMCD() {
	if d.mcd == nil {
		return
	}
	d.mcd.mu.Lock()
	if d.mcd.timer != nil {
		d.mcd.timer.Stop()
	}
	d.mcd.mu.Unlock()
	for _, s := range d.mcd.stops {
		s()
	}
}

// mcdLine takes one MCD line: currentconfig is read first, since the MCD
// renames it before it says what follows.
func (d *Daemon) mcdLine(ctx context.Context, r mcd.Record) {
	d.refreshCurrentConfig(ctx)
	d.mcd.m.Line(r.Line, r.At)
	d.mcdApply(ctx)
}

// mcdCurrentConfig takes a change of currentconfig.
func (d *Daemon) mcdCurrentConfig(ctx context.Context) {
	if d.mcd == nil {
		return
	}
	d.refreshCurrentConfig(ctx)
	d.mcdApply(ctx)
}

func (d *Daemon) refreshCurrentConfig(ctx context.Context) {
	f := d.mcd
	name, dev, ino, err := readConfigName(f.path)
	if err != nil {
		// Kept as it was (deleted by an admin, unreadable): the desired
		// state's own load says what is wrong with it.
		d.log.Debug(fmt.Sprintf("machine-config-daemon: %v", err))
		return
	}
	rewritten := dev != f.dev || ino != f.ino
	f.dev, f.ino = dev, ino
	f.m.CurrentConfig(name, rewritten, time.Now())
}

// mcdTick runs when a phase's time is up.
func (d *Daemon) mcdTick(ctx context.Context) {
	d.mcd.m.Tick(time.Now())
	d.mcdApply(ctx)
}

// mcdActivity: file events while held (a rollback writing files back).
func (d *Daemon) mcdActivity() {
	if d.mcd != nil {
		d.mcd.m.Activity(time.Now())
	}
}

// mcdHoldDown decides, in rename-only mode, whether a drift that appeared
// at entry id outside a full check is held (HoldDown): it may be an
// update's first write. The release's full check reports it if it
// persists.
func (d *Daemon) mcdHoldDown(ctx context.Context, id string) bool {
	f := d.mcd
	if f == nil || !f.m.RenameOnly || len(d.track.byEntry[id]) > 0 {
		return false
	}
	if f.m.Phase() == mcd.HoldDown {
		return true // taken by an entry before this one in the same batch
	}
	if !f.m.NewDrift(time.Now()) {
		return false
	}
	d.mcdApply(ctx)
	return true
}

// mcdNotes journals what the machine had to say.
func (d *Daemon) mcdNotes(ctx context.Context) {
	for _, n := range d.mcd.m.Notes() {
		level := slog.LevelInfo
		if n.Warn {
			level = slog.LevelWarn
		}
		d.record(ctx, level, journal.MsgMCD, "machine-config-daemon: "+escape.Name(n.Text))
	}
}

// mcdApply journals the machine's notes, makes its hold the internal
// inhibitor's, and arms the timer of its next deadline.
func (d *Daemon) mcdApply(ctx context.Context) {
	f := d.mcd
	d.mcdNotes(ctx)
	d.setInhibitors(ctx, d.inhibitors)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.timer != nil {
		f.timer.Stop()
		f.timer = nil
	}
	if dl, ok := f.m.Deadline(); ok {
		f.timer = time.AfterFunc(time.Until(dl), func() {
			d.do(ctx, func(lctx context.Context) error { d.mcdTick(lctx); return nil })
		})
	}
}

// withMCD is the held set with the MCD's inhibitor in it when its machine
// holds reports (setInhibitors' input is the lock files').
func (d *Daemon) withMCD(held []inhibit.Inhibitor) []inhibit.Inhibitor {
	out := make([]inhibit.Inhibitor, 0, len(held)+1)
	for _, h := range held {
		if h.File != mcdFile {
			out = append(out, h)
		}
	}
	if d.mcd == nil {
		return out
	}
	if on, why := d.mcd.m.Held(); on {
		out = append(out, inhibit.Inhibitor{Who: mcdWho, Why: why, File: mcdFile})
	}
	return out
}

// mcdStatus is what the status line says of the follower ("" : nothing).
func (d *Daemon) mcdStatus() string {
	if d.mcd == nil || d.mcd.renameOnly == "" {
		return ""
	}
	return "machine-config-daemon followed by the renames of currentconfig only (" + escape.Name(d.mcd.renameOnly) + ")"
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
