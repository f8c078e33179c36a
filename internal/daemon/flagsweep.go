package daemon

import (
	"context"
	"slices"
	"time"

	"github.com/drift-monitor/drift-monitor/internal/drift"
	"github.com/drift-monitor/drift-monitor/internal/ondisk"
)

// The flag sweep: between full checks, a cheap look at the immutable and
// append-only flags of every declared node, because no inotify event ever
// tells of them.
//
// Kernel facts (torvalds/linux fs/file_attr.c, the home of the FS_IOC_*
// handlers since 6.17; fs/ioctl.c before): chattr's FS_IOC_SETFLAGS and
// FS_IOC_FSSETXATTR, and the file_setattr(2) system call, all end in
// vfs_fileattr_set, which calls the filesystem's ->fileattr_set and no
// fsnotify hook — unlike notify_change (chmod, chown) and setxattr, which
// raise IN_ATTRIB; ext4's handler (fs/ext4/ioctl.c, ext4_ioctl_setflags)
// only sets the flags, the ctime and the inode dirty. Verified on 6.18 with
// inotify watches on both the directory and the file itself, on ext4 and
// tmpfs: chattr +i/-i/+a/-a raise only IN_OPEN and IN_CLOSE_NOWRITE
// (chattr opening the file to issue the ioctl), never IN_ATTRIB; a watch
// on the file gets no more than its directory's. So:
//   - a watch on each file would cost a watch per declared path and see
//     nothing more;
//   - IN_OPEN/IN_CLOSE_NOWRITE on the directories would wake the daemon at
//     every read of anything in /etc (every exec reads ld.so.cache), its
//     own reads included, and still miss file_setattr(2), which opens
//     nothing;
//   - fanotify's FAN_ATTRIB rides on the same fsnotify hooks, so it sees
//     nothing either (and needs CAP_SYS_ADMIN, which the unit's
//     CapabilityBoundingSet=CAP_DAC_READ_SEARCH in
//     units/drift-monitor.service does not grant).
//
// What remains is statx, which reports both flags (stx_attributes) without
// opening the node: one statx per declared node, through the directory
// descriptors the observer already resolves inside the root. A sweep runs
// every flagSweep.every (--fileattr-interval), spaced further apart so that
// it costs at most 1/flagSweepDuty of the loop's time however many entries
// there are (see BenchmarkFlags in internal/ondisk for the cost of one
// statx), not while an inhibitor is held, and not while file events wait
// to be handled (a storm: the events come first, the sweep at the next
// tick). A node whose flags changed since the last sweep is re-checked as
// an event would have it checked: the drift record, and its resolution,
// are the usual ones.
type flagSweep struct {
	every time.Duration // 0: no sweep
	timer *time.Timer
	// ix is the index last was taken of: a new index (a load) starts a new
	// baseline. last holds, per entry of ix, flagSeen|flags at the last
	// sweep, or 0 where nothing could be examined (or not swept yet).
	ix   *index
	last []uint8
	// putOff counts the sweeps put off in a row by waiting events.
	putOff int
}

// flagSeen marks a flag reading as taken.
const flagSeen = 0x80

// flagSweepDuty bounds a sweep's share of the time: the next sweep starts
// no sooner than flagSweepDuty times the last one's duration. The sweep is
// the only thing an idle daemon does on its own, and the idle daemon's
// target is under 0.1% of a CPU (bench/idle.go): a two-thousandth keeps
// the sweep at half of that however many entries there are, which spaces
// sweeps seconds apart at tens of thousands of declared nodes (the cost of
// one: BenchmarkFlags in internal/ondisk).
const flagSweepDuty = 2000

// flagSweepMaxWait bounds the spacing, whatever one sweep took (a stall
// of the machine during one must not put the next off for hours); at
// 100,000 declared nodes the duty alone spaces them less.
const flagSweepMaxWait = 5 * time.Minute

// flagSweepPutOff is how many sweeps in a row waiting events put off.
const flagSweepPutOff = 5

// nextSweep is how long to wait after a sweep that took took.
func nextSweep(every, took time.Duration) time.Duration {
	return max(every, min(flagSweepDuty*took, flagSweepMaxWait))
}

// compare takes one sweep's readings (read returns the flags of entry i, ok
// false where nothing could be examined) and returns the entries to
// re-check, in index order. Against a reading of the last sweep, an entry
// is re-checked when its flags changed; without one (a new baseline, or a
// node that was absent), when what it carries disagrees with what is known
// of it (known: a fileattr drift is tracked for it), so that a change made
// between the last check and this first reading is not missed. An entry
// whose flags stay as they are is never re-checked again, whatever the
// check made of them (an excluded kind, a kept node's notice).
func (s *flagSweep) compare(ix *index, read func(i int) (ondisk.Flags, bool), known func(i int) bool) []int {
	if s.ix != ix {
		s.ix, s.last = ix, make([]uint8, len(ix.entries))
	}
	var is []int
	for i := range ix.entries {
		if !ondisk.HasMeta(&ix.entries[i]) {
			continue
		}
		f, ok := read(i)
		prev := s.last[i]
		if !ok {
			s.last[i] = 0
			continue
		}
		s.last[i] = flagSeen | uint8(f)
		if prev != 0 && prev != s.last[i] || prev == 0 && (f != 0) != known(i) {
			is = append(is, i)
		}
	}
	return is
}

// startFlagSweep arms the first sweep; it returns the channel that says
// when one is due (nil with no sweep).
func (d *Daemon) startFlagSweep(s *sources) <-chan time.Time {
	if d.o.FileattrInterval <= 0 {
		return nil
	}
	d.flags.every = d.o.FileattrInterval
	d.flags.timer = time.NewTimer(d.flags.every)
	s.stops = append(s.stops, func() { d.flags.timer.Stop() })
	return d.flags.timer.C
}

// sweepFlags runs a sweep when it is due and the daemon active and not
// behind, re-checks what changed, and arms the next one. Like an event, a
// sweep looks at the inhibitor locks first (syncInhibitors: a tool that
// locks, then runs chattr, is not reported), and leaves a node with a
// write in progress to its settling, reading its flags again next time.
// Events waiting put a sweep off, flagSweepPutOff times at the most: a
// steady stream of events does not keep it off for good.
func (d *Daemon) sweepFlags(ctx context.Context, s *sources) {
	wait := d.flags.every
	if len(s.events) > 0 && d.flags.putOff < flagSweepPutOff {
		d.flags.putOff++
	} else if !d.inhibited() && d.syncInhibitors(ctx, s) {
		d.flags.putOff = 0
		start := time.Now()
		d.obs.Forget() // directories may have been replaced since the last look
		d.obs.Declare(d.checker.Declared)
		is := d.flags.compare(d.ix,
			func(i int) (ondisk.Flags, bool) { return d.obs.Flags(d.ix.entries[i].Path) },
			func(i int) bool { return d.tracksFileattr(d.ix.entries[i].ID()) })
		// Only the statx pass paces the sweeps: a re-check that waits for
		// systemd or a slow disk is not the sweep's cost.
		wait = nextSweep(d.flags.every, time.Since(start))
		is = slices.DeleteFunc(is, func(i int) bool {
			if d.writes.inProgress(d.ix.entries[i].Path) {
				d.flags.last[i] = 0 // read afresh at the next sweep
				return true
			}
			return false
		})
		if len(is) > 0 {
			d.checkEntries(ctx, is)
		}
	}
	d.flags.timer.Reset(wait)
}

// tracksFileattr reports whether a fileattr drift is known of the entry.
func (d *Daemon) tracksFileattr(id string) bool {
	for _, dr := range d.track.byEntry[id] {
		if dr.Kind == drift.FileAttr {
			return true
		}
	}
	return false
}
