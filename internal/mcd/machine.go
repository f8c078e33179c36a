package mcd

import (
	"fmt"
	"time"
)

// Phase is where the machine stands in an MCD update.
type Phase int

const (
	// Idle: no update under way; reports go on against currentconfig.
	Idle Phase = iota
	// Updating(A→B): the start line was seen; the MCD drains, then writes
	// B's files, units and SSH keys and stages the OS. currentconfig still
	// names A.
	Updating
	// Written(B): currentconfig names B (the end of the writing); the MCD
	// has not yet said whether it reboots or reloads.
	Written
	// Rebooting(B): the MCD asked for the reboot into B.
	Rebooting
	// Settling(C): a new boot after an update (or an MCD restarted in the
	// middle of one): waiting for the MCD to validate the disk.
	Settling
	// RollingBack(A): currentconfig went back to A after naming B (the
	// MCD's rollback writes currentconfig first, then the files): held
	// until quiet. Also any change of currentconfig the machine did not
	// expect.
	RollingBack
	// HoldDown: rename-only mode (no journal), after a rename of
	// currentconfig or a new drift: held for Timeouts.HoldDown.
	HoldDown
)

var phaseNames = map[Phase]string{Idle: "idle", Updating: "updating", Written: "written", Rebooting: "rebooting",
	Settling: "settling", RollingBack: "rolling back", HoldDown: "hold-down"}

func (p Phase) String() string { return phaseNames[p] }

// Timeouts bound every phase, so that a stuck or failed MCD never holds
// reports for good.
type Timeouts struct {
	// Update bounds Updating, from the first start line of an A→B pair
	// (the MCD's retries repeat the line and do not extend it): the drain
	// alone may take an hour (pkg/daemon/drain.go), an OS image pull
	// minutes.
	Update time.Duration
	// Post bounds Written (from the rename to the MCD's next line) and
	// RollingBack.
	Post time.Duration
	// Reboot bounds Rebooting: a reboot that does not come.
	Reboot time.Duration
	// Boot bounds Settling: an MCD that does not validate after a boot.
	Boot time.Duration
	// Quiet ends RollingBack: this long without an MCD line, a rename or
	// a file event.
	Quiet time.Duration
	// HoldDown is rename-only mode's hold.
	HoldDown time.Duration
}

// DefaultTimeouts are the daemon's defaults.
var DefaultTimeouts = Timeouts{Update: 90 * time.Minute, Post: 15 * time.Minute, Reboot: 15 * time.Minute,
	Boot: 15 * time.Minute, Quiet: time.Minute, HoldDown: 10 * time.Second}

// Note is something the machine has to say: a phase that timed out, a
// rollback. Warn notes are warnings. Key names what it is about the same
// way in every run that replays the same journal (a phase's timeout is
// keyed by its update's start line, never by when it was noticed): the
// daemon journals each note of a boot once however often it restarts.
type Note struct {
	Warn bool
	Text string
	Key  string
}

// Machine follows the MCD's updates from its journal lines and the names
// currentconfig takes. It is pure: time comes in with every input (the
// journal record's timestamp, or the clock), so that replaying a journal
// gives the state a live run would have reached.
type Machine struct {
	T Timeouts
	// RenameOnly: no journal lines come in (not readable): the machine
	// follows the renames of currentconfig only, with a hold-down.
	RenameOnly bool

	phase    Phase
	from, to string // Updating/Written/Rebooting: the pair; Settling/RollingBack: to is what is awaited
	current  string // the name currentconfig had when last read; "" unknown
	started  time.Time
	since    time.Time
	last     time.Time
	// expired is a pair whose Update budget ran out, and expiredAt the
	// currentconfig it ran out under: its further start lines (the MCD
	// retrying a failing update) take nothing until currentconfig changes.
	expired   [2]string
	expiredAt string
	notes     []Note
}

// Phase is the current phase.
func (m *Machine) Phase() Phase { return m.phase }

// Held reports whether reports are held, and why (the inhibitor's why).
func (m *Machine) Held() (bool, string) {
	switch m.phase {
	case Updating:
		return true, fmt.Sprintf("update %s: draining and writing until currentconfig names %s (gives up %s)", m.pair(), m.to, stamp(m.started.Add(m.T.Update)))
	case Written:
		return true, fmt.Sprintf("update %s: currentconfig names %s, waiting for the MCD to reboot or finish (gives up %s)", m.pair(), m.to, stamp(m.since.Add(m.T.Post)))
	case Rebooting:
		return true, fmt.Sprintf("update %s: reboot pending (gives up %s)", m.pair(), stamp(m.since.Add(m.T.Reboot)))
	case Settling:
		return true, fmt.Sprintf("%s: waiting for the MCD to validate the disk (gives up %s)", m.settlingWhat(), stamp(m.since.Add(m.T.Boot)))
	case RollingBack:
		return true, fmt.Sprintf("currentconfig back to %s: rollback, held until quiet for %s", m.to, m.T.Quiet)
	case HoldDown:
		return true, fmt.Sprintf("currentconfig followed by its renames only (no journal): holding %s", m.T.HoldDown)
	}
	return false, ""
}

// pair is "A → B", or "to B" when the start was not seen.
func (m *Machine) pair() string {
	if m.from == "" {
		return "to " + m.to
	}
	return m.from + " → " + m.to
}

func (m *Machine) settlingWhat() string {
	if m.to != "" {
		return "config " + m.to
	}
	return "MCD restarted"
}

func stamp(t time.Time) string { return t.UTC().Format("15:04:05Z") }

// Deadline is when Tick must next be called; ok is false when no phase
// is timed.
func (m *Machine) Deadline() (t time.Time, ok bool) {
	switch m.phase {
	case Updating:
		return m.started.Add(m.T.Update), true
	case Written:
		return m.since.Add(m.T.Post), true
	case Rebooting:
		return m.since.Add(m.T.Reboot), true
	case Settling:
		return m.since.Add(m.T.Boot), true
	case RollingBack:
		q := m.last.Add(m.T.Quiet)
		if cap := m.since.Add(m.T.Post); cap.Before(q) {
			q = cap
		}
		return q, true
	case HoldDown:
		q := m.last.Add(m.T.HoldDown)
		if cap := m.since.Add(m.T.Post); cap.Before(q) {
			q = cap
		}
		return q, true
	}
	return time.Time{}, false
}

// Notes returns what the machine has to say since the last call.
func (m *Machine) Notes() []Note {
	n := m.notes
	m.notes = nil
	return n
}

func (m *Machine) note(warn bool, key string, format string, a ...any) {
	m.notes = append(m.notes, Note{Warn: warn, Text: fmt.Sprintf(format, a...), Key: key})
}

// timeoutKey names the timeout of the current phase: by the phase, the
// pair and the update's first start line (a journal record's time, the same
// in every replay), not by its deadline (some phases start when a run read
// currentconfig, which a restart reads again later).
func (m *Machine) timeoutKey() string {
	return fmt.Sprintf("timeout %s %s %s %d", m.phase, m.from, m.to, m.started.Unix())
}

// eventKey names a note about something that happened at at.
func eventKey(kind, from, to string, at time.Time) string {
	return fmt.Sprintf("%s %s %s %d", kind, from, to, at.UnixNano())
}

func (m *Machine) enter(p Phase, at time.Time) {
	m.phase, m.since, m.last = p, at, at
}

func (m *Machine) idle() { m.phase, m.from, m.to = Idle, "", "" }

// Tick ends the phases whose time is up at now.
func (m *Machine) Tick(now time.Time) {
	dl, ok := m.Deadline()
	if !ok || now.Before(dl) {
		return
	}
	switch m.phase {
	case Updating:
		m.note(true, m.timeoutKey(), "the machine-config daemon's update %s → %s did not reach its end within %s (a stuck or failed MCD?): reporting again, against currentconfig (%s); its retries of the same update are not held until currentconfig changes",
			m.from, m.to, m.T.Update, orUnknown(m.current))
		m.expired, m.expiredAt = [2]string{m.from, m.to}, m.current
	case Written:
		m.note(true, m.timeoutKey(), "currentconfig names %s, but the machine-config daemon said neither that it reboots nor that it is done within %s: reporting again, against %s", m.to, m.T.Post, m.to)
	case Rebooting:
		m.note(true, m.timeoutKey(), "the machine-config daemon asked for a reboot into %s, but none came within %s: reporting again, against %s", m.to, m.T.Reboot, orUnknown(m.current))
	case Settling:
		m.note(true, m.timeoutKey(), "the machine-config daemon did not validate the disk within %s of the boot or of its restart: reporting again, against %s", m.T.Boot, orUnknown(m.current))
	case RollingBack:
		m.note(false, eventKey("quiet", m.from, m.to, dl), "the machine-config daemon's rollback to %s is quiet: checking against it", m.to)
	}
	m.idle()
}

func orUnknown(s string) string {
	if s == "" {
		return "currentconfig as it is"
	}
	return s
}

// Line takes one of the MCD's journal lines, logged at at.
func (m *Machine) Line(l Line, at time.Time) {
	m.Tick(at)
	m.last = at
	switch l.Kind {
	case Start:
		if m.expired == [2]string{l.From, l.To} && m.expiredAt == m.current {
			return
		}
		if m.phase == Updating && m.from == l.From && m.to == l.To {
			return // a retry: the budget runs from the first attempt
		}
		m.from, m.to = l.From, l.To
		m.enter(Updating, at)
		m.started = at
	case Reboot:
		switch {
		case (m.phase == Updating || m.phase == Written) && (l.Config == "" || l.Config == m.to):
			// The MCD reboots only after currentconfig names the target
			// (update.go: storeCurrentConfigOnDisk comes before
			// performPostConfigChangeNodeDisruptionAction).
			m.enter(Rebooting, at)
		case m.phase == Rebooting:
		case l.Config != "":
			// A reboot into a config whose start the machine did not see
			// (or, without the journal, the MCD's reboot unit).
			m.from, m.to = "", l.Config
			m.enter(Rebooting, at)
		}
	case RebootFailed:
		if m.phase == Rebooting {
			m.note(true, eventKey("reboot-failed", m.from, m.to, at), "the machine-config daemon could not reboot into %s: reporting again, against %s", m.to, orUnknown(m.current))
			m.idle()
		}
	case Rebootless, Done:
		if (m.phase == Updating || m.phase == Written) && l.Config == m.to {
			// Logged only after currentconfig was renamed to the target.
			m.finish(at)
		} else if m.phase == Settling && (l.Kind == Done || l.Config == m.to) {
			// After a boot or an MCD restart the MCD finishes against the
			// on-disk currentconfig, whatever it names.
			m.idle()
		}
	case Validated:
		switch m.phase {
		case Updating, Written, Rebooting, Settling:
			// The MCD validated the disk against the on-disk
			// currentconfig (daemon.go:checkStateOnFirstRun): whatever
			// it names is the state now.
			m.idle()
		}
	case Managing:
		switch m.phase {
		case Updating, Written, Rebooting:
			// The MCD restarted in the middle of an update: it validates
			// the disk against the on-disk currentconfig first.
			to := m.to
			if m.phase == Updating {
				to = ""
			}
			m.enter(Settling, at)
			m.from, m.to = "", to
		}
	}
}

// finish ends an update whose target the MCD says is in place: released
// when currentconfig names it; otherwise currentconfig went back (a
// rollback raced the line), which is held until quiet.
func (m *Machine) finish(at time.Time) {
	if m.current == "" || m.current == m.to {
		m.idle()
		return
	}
	m.rollback(m.current, at)
}

func (m *Machine) rollback(to string, at time.Time) {
	m.note(false, eventKey("rollback", to, m.to, at), "currentconfig went back to %s during the update to %s: a rollback, held until quiet", to, m.to)
	m.from, m.to = "", to
	m.enter(RollingBack, at)
}

// CurrentConfig takes the name currentconfig has now, read at at;
// rewritten says the file was replaced since it was last read (a new
// inode), which is how a re-apply of the same config ends.
func (m *Machine) CurrentConfig(name string, rewritten bool, at time.Time) {
	m.Tick(at)
	prev := m.current
	m.current = name
	changed := prev != "" && name != prev
	if changed && m.expiredAt != name {
		m.expired, m.expiredAt = [2]string{}, ""
	}
	if m.RenameOnly {
		if m.phase == Rebooting && !changed {
			return
		}
		if changed || rewritten {
			if m.phase != HoldDown {
				m.enter(HoldDown, at)
			}
			m.last = at
		}
		return
	}
	switch m.phase {
	case Idle:
		if changed {
			// A change the journal did not announce.
			m.note(false, eventKey("unannounced", prev, name, at), "currentconfig changed from %s to %s without a start line of the machine-config daemon: held until quiet", prev, name)
			m.from, m.to = "", name
			m.enter(RollingBack, at)
		}
	case Updating:
		switch {
		case name == m.to && (prev == "" || changed || (rewritten && m.from == m.to)):
			m.enter(Written, at)
		case changed, rewritten && m.from != m.to:
			// Rewritten under the source's name: the MCD renamed B into
			// place and A back (its rollback) before the machine read the
			// file in between. It writes currentconfig for nothing else
			// during an update.
			m.rollback(name, at)
		}
	case Written, Rebooting:
		if changed {
			m.rollback(name, at)
		}
	case RollingBack:
		if changed || rewritten {
			m.to = name
			m.last = at
		}
	case Settling:
		if changed {
			m.to = name
			m.last = at
		}
	}
}

// Activity is a file event in a watched directory while held: a rollback
// writing A's files back is not quiet yet.
func (m *Machine) Activity(at time.Time) {
	if m.phase == RollingBack {
		m.last = at
	}
}

// NewDrift is a drift that appeared outside a full check; in rename-only
// mode it is held for HoldDown (it may be an update's first write, whose
// rename is seconds away), and reported at the release if it persists.
// It says whether it took the hold.
func (m *Machine) NewDrift(at time.Time) bool {
	m.Tick(at)
	if !m.RenameOnly || m.phase != Idle {
		return false
	}
	m.enter(HoldDown, at)
	return true
}

// NewBoot marks the start of a boot (at: when it started) after the lines
// of the previous one: an update that reached its reboot, or was cut by
// one, settles until the MCD validates the disk.
func (m *Machine) NewBoot(at time.Time) {
	m.expired, m.expiredAt = [2]string{}, ""
	switch m.phase {
	case Updating:
		m.from, m.to = "", ""
		m.enter(Settling, at)
	case Written, Rebooting, RollingBack:
		to := m.to
		m.from = ""
		m.enter(Settling, at)
		m.to = to
	case Settling:
		m.enter(Settling, at)
	default:
		m.idle()
	}
}
