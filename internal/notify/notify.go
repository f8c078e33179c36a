// Package notify speaks sd_notify(3) for a Type=notify service: READY=1,
// STATUS=, RELOADING=1 with MONOTONIC_USEC, STOPPING=1, WATCHDOG=1 and
// EXTEND_TIMEOUT_USEC.
//
// It promises: every method is a no-op returning nil when the process was not
// started with NOTIFY_SOCKET (a terminal, a test); every message is sent as one
// datagram; a status line is always one line (control characters escaped, see
// Status) and short enough that systemd does not drop the datagram.
//
// It does not promise delivery: sd_notify is fire-and-forget. It does not keep
// children from inheriting NOTIFY_SOCKET; systemd ignores their messages
// unless the unit sets NotifyAccess=all (Type=notify defaults to "main").
// Methods are safe for concurrent use.
package notify

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/coreos/go-systemd/v22/daemon"
)

// MaxStatus is the most bytes of a status text that are sent. systemd ignores
// a notification datagram of more than 4096 bytes as a whole ("Received notify
// message exceeded maximum size. Ignoring.", observed on systemd 252), so a
// long status would silently leave the old one in place. Longer texts are cut
// between characters and end in "…".
const MaxStatus = 1024

// Notifier sends notifications to the service manager.
type Notifier struct {
	enabled     bool
	watchdog    time.Duration
	watchdogErr error
	send        func(state string) (bool, error)
}

// New returns a Notifier for the NOTIFY_SOCKET and WATCHDOG_USEC/WATCHDOG_PID
// of the environment as it is now. Without NOTIFY_SOCKET it is a no-op.
func New() *Notifier {
	wd, err := daemon.SdWatchdogEnabled(false)
	return &Notifier{
		enabled:     os.Getenv("NOTIFY_SOCKET") != "",
		watchdog:    wd,
		watchdogErr: err,
		send:        func(state string) (bool, error) { return daemon.SdNotify(false, state) },
	}
}

// Enabled reports whether a service manager listens (NOTIFY_SOCKET was set).
func (n *Notifier) Enabled() bool { return n.enabled }

func (n *Notifier) notify(state string) error {
	if !n.enabled {
		return nil
	}
	if _, err := n.send(state); err != nil {
		return fmt.Errorf("sd_notify %q: %w", firstLine(state), err)
	}
	return nil
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}

// Ready sends READY=1 and the status in one datagram: start-up (or a reload)
// is complete.
func (n *Notifier) Ready(status string) error {
	return n.notify(daemon.SdNotifyReady + "\nSTATUS=" + StatusText(status))
}

// Status sends STATUS=, the line `systemctl status` shows.
func (n *Notifier) Status(status string) error {
	return n.notify("STATUS=" + StatusText(status))
}

// Reloading sends RELOADING=1 and MONOTONIC_USEC=<CLOCK_MONOTONIC in µs> in
// one datagram, as Type=notify-reload requires and Type=notify accepts. Send
// Ready when the reload is done.
func (n *Notifier) Reloading() error {
	return n.notify(daemon.SdNotifyReloading + "\n" + daemon.SdNotifyMonotonicUsec())
}

// Stopping sends STOPPING=1: the service is shutting down.
func (n *Notifier) Stopping() error {
	return n.notify(daemon.SdNotifyStopping)
}

// Watchdog sends WATCHDOG=1. Send it at least every half WatchdogInterval.
func (n *Notifier) Watchdog() error {
	return n.notify(daemon.SdNotifyWatchdog)
}

// ExtendTimeout sends EXTEND_TIMEOUT_USEC=<d in µs>: the service manager
// moves the timeout of the state it is in (TimeoutStartSec= while
// starting) to d from now, if that is later than the timeout in force
// (systemd's service_extend_timeout, src/core/service.c: it never brings
// a timeout closer). Send it again within d to keep the state alive; a
// d under a microsecond is sent as one (zero would be ignored).
func (n *Notifier) ExtendTimeout(d time.Duration) error {
	return n.notify("EXTEND_TIMEOUT_USEC=" + strconv.FormatInt(max(d.Microseconds(), 1), 10))
}

// WatchdogInterval returns the watchdog timeout systemd enforces
// (WatchdogSec=, passed as WATCHDOG_USEC) and true, or false when there is no
// watchdog for this process: unset, meant for another PID (WATCHDOG_PID), or
// malformed (then its watchdogErr says why).
func (n *Notifier) WatchdogInterval() (time.Duration, bool) {
	return n.watchdog, n.watchdog > 0
}

// StatusText makes s safe as the value of STATUS=: the datagram is a list of
// newline-separated assignments, so a newline would end the status and start
// a bogus assignment. Control characters, non-printable runes, invalid bytes
// and backslashes are written as Go escapes (\n, \x1b, \\); a text longer
// than MaxStatus bytes is cut and ends in "…".
func StatusText(s string) string {
	var b strings.Builder
	cut := -1 // where to cut if the result is too long: between pieces, never inside a character or an escape
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		var piece string
		switch {
		case r == utf8.RuneError && size == 1:
			piece = fmt.Sprintf(`\x%02x`, s[i])
		case r == '\\':
			piece = `\\`
		case r == ' ' || strconv.IsPrint(r):
			piece = s[i : i+size]
		default:
			q := strconv.QuoteRune(r)
			piece = q[1 : len(q)-1]
		}
		i += size
		if cut < 0 && b.Len()+len(piece) > MaxStatus-len("…") {
			cut = b.Len()
		}
		if b.Len()+len(piece) > MaxStatus {
			return b.String()[:cut] + "…"
		}
		b.WriteString(piece)
	}
	return b.String()
}
