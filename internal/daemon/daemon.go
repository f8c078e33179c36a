// Package daemon is the long-running monitor: it loads the desired state,
// watches the directories that hold declared paths, re-checks exactly the
// entries an event can affect, and reports each drift once when it appears
// and once when it is resolved — to journald, to systemd's status line and to
// whoever asks — and each notice (what it cannot verify) once when it
// appears, to journald.
//
// One goroutine, the event loop, owns all state; inotify, fsnotify, D-Bus
// signals, timers, signals and the background reader of large files only
// send it messages. The watchdog is fed only when that loop answers, so a
// stuck loop gets the service restarted; and nothing the loop does reads
// more than inlineReadLimit of one file, so no file can stall it.
//
// It promises: a file being written is checked when its writer closes it (or
// renames it into place), never in between; a write that never completes is
// checked after Settle of quiet; a desired state that fails to load never
// replaces the last good one. It does not promise to notice changes while an
// inotify watch could not be placed faster than PollInterval.
package daemon

import (
	"context"
	"log/slog"
	"time"

	"github.com/drift-monitor/drift-monitor/internal/buslink"
	"github.com/drift-monitor/drift-monitor/internal/check"
	"github.com/drift-monitor/drift-monitor/internal/daemon/attribution"
	"github.com/drift-monitor/drift-monitor/internal/daemon/part"
	"github.com/drift-monitor/drift-monitor/internal/dbusapi"
	"github.com/drift-monitor/drift-monitor/internal/desired/statekey"
	"github.com/drift-monitor/drift-monitor/internal/drift"
	"github.com/drift-monitor/drift-monitor/internal/enablement"
	"github.com/drift-monitor/drift-monitor/internal/exclude"
	"github.com/drift-monitor/drift-monitor/internal/firstboot"
	"github.com/drift-monitor/drift-monitor/internal/image"
	"github.com/drift-monitor/drift-monitor/internal/inhibit"
	"github.com/drift-monitor/drift-monitor/internal/model"
	"github.com/drift-monitor/drift-monitor/internal/ondisk"
	"github.com/drift-monitor/drift-monitor/internal/osstate"
	"github.com/drift-monitor/drift-monitor/internal/watch"
)

// Notifier speaks sd_notify.
type Notifier interface {
	Ready(status string) error
	Status(status string) error
	Reloading() error
	Stopping() error
	Watchdog() error
	WatchdogInterval() (time.Duration, bool)
	// ExtendTimeout asks for the timeout of the state the service is in
	// (its start) to end no sooner than d from now (EXTEND_TIMEOUT_USEC).
	ExtendTimeout(d time.Duration) error
}

// Units answers for unit enablement and says when unit files changed.
type Units interface {
	// UnitFileState fails with an error wrapping buslink.ErrUnavailable
	// while systemd cannot be asked: the state is then unknown (see
	// check.UnitStates).
	UnitFileState(unit string) (string, error)
	// Events delivers what happened to the connection to systemd: lost,
	// back (Missed: a change may have gone unseen), and unit files that may
	// have changed (Changed: enable, disable, mask, daemon-reload); nil
	// when not observable.
	Events() <-chan buslink.Event
}

// Starter starts a systemd unit (the on-drift hook).
type Starter interface {
	StartUnit(ctx context.Context, name string) error
}

// Options configure the daemon.
type Options struct {
	Root    string
	Configs []string
	// Cache keeps derived states across loads and runs (statecache); nil
	// parses every time.
	Cache statekey.Cache
	// Interval between periodic full checks (the safety net); 0 disables.
	Interval time.Duration
	// FileattrInterval paces the sweep of the immutable and append-only
	// flags, which no inotify event tells of (flagsweep.go); 0 disables.
	FileattrInterval time.Duration
	// Settle is how long a file that is being written (modified, not yet
	// closed) must stay quiet before it is checked anyway.
	Settle time.Duration
	// PollInterval paces the polling of directories that could not be
	// watched because the inotify limit was reached.
	PollInterval time.Duration
	// Exclude says what the daemon leaves alone: --exclude's patterns and
	// the exclusion file, read inside Root on every load (package
	// exclude, the rules every command shares).
	Exclude exclude.Options
	// CheckMCDCertificates checks a MachineConfig's files that the
	// machine-config daemon's certificate writer owns
	// (machineconfig.MCDCertificatePaths) like any other; otherwise each is a
	// not-checked notice.
	CheckMCDCertificates bool
	// LabelFull compares whole SELinux contexts, not only type and range.
	LabelFull bool
	// InhibitDir is where inhibitor lock files are followed ("" disables).
	InhibitDir string
	// OnDrift names a unit to start when drift appears.
	OnDrift string
	Version string
	// MetricsTextfile is where Prometheus metrics are written for
	// node_exporter's textfile collector ("" writes none); MetricsRefresh
	// how often it is rewritten when nothing changed (0: 30s).
	MetricsTextfile string
	MetricsRefresh  time.Duration
	// MCD follows the OpenShift machine-config daemon's updates (the
	// part mcdfollow).
	MCD MCDOptions
	// DigestKey keys the digests of content that must not be shown (see
	// model.Key); the zero Key leaves them out.
	DigestKey model.Key
	// FirstBoot is the first-boot record the daemon uses on every load
	// (package firstboot); the zero Use reads none.
	FirstBoot firstboot.Use
	// Image is what to make of the differences of /etc from the OS
	// image (the part imagewatch): image.ModeNotice, ModeDrift or
	// ModeOff; "" follows the settings file (image.SettingsFile).
	Image image.Mode

	// Attribution is how drift is attributed to its writers: "audit"
	// (the part attribution) or "off" (""). AuditKey is the key of its audit
	// rules ("": audit.Key).
	Attribution string
	AuditKey    string
	// AuditCanary is a file the daemon writes to prove that audit records
	// arrive (in the state directory; "" proves nothing, and says so).
	AuditCanary string
	// Sessions answers login sessions (logind); nil: writers are named
	// without their session's user and remote host.
	Sessions attribution.Sessions

	Log    *slog.Logger
	Notify Notifier
	Units  Units   // nil: enablement computed offline from the unit files
	Hook   Starter // required when OnDrift is set
}

// Daemon is a running monitor; see Run. Its fields are grouped by job; the
// event loop (loop.go) owns all of them but the channels.
type Daemon struct {
	o   Options
	log *slog.Logger
	gc  *gcTuner
	// closeWait is how long Close waits for a load under way
	// (closeLoadWait; tests shorten it).
	closeWait time.Duration

	// What is checked, and how (checks.go).
	root    *ondisk.Root
	checker *check.Checker
	labels  check.LabelPolicy // the SELinux policy, read again when it changes (labelpolicy.go)
	obs     *ondisk.Observer
	ix      *index
	files   []string // config files of the current state
	// loadErr is why the last load was refused (nil when it was not): the
	// state in force is then the last good one, if there is one (good).
	loadErr error
	good    goodState
	// loads is the reload under way off the loop (loader.go).
	loads loads
	// startExt is how the start's timeout is extended (startextend.go).
	startExt startExtend
	// acct is the lock on the account files the user and group entries
	// wait for (accountlock.go).
	acct accountWait
	// excl is what the exclusions leave alone (exclusions.go).
	excl exclusions
	// nothing says where no config file was found when the state in force
	// has none ("" when it has one): nothing to watch, which is not clean.
	nothing string
	// ignored holds the files of the desired-state directories that are
	// not loaded, each journaled once when it appears.
	ignored map[string]bool
	// unitFiles is the enablement source when it reads unit files itself
	// (offline): a change under them may change what it answers. Nil when
	// systemd answers and says itself when unit files changed.
	unitFiles unitFileReader

	// The event sources (sources.go).
	w         eventSource
	cfg       *configWatch
	exhausted bool                       // inotify watches ran out: some directories are polled
	requests  chan func(context.Context) // calls from the bus, run by the loop
	done      chan struct{}

	// What is known, and what is on its way (tracker.go, writes.go,
	// content.go).
	track     *tracker
	writes    *writes
	reads     *contentReads // content too large to compare on the loop
	lastCheck time.Time
	flags     flagSweep // the immutable and append-only flags between full checks
	// notices holds the keys (drift.Drift.Key) of the last full check's
	// notices: each is journaled once when it appears.
	notices map[string]bool
	// noticeKinds counts them by kind, for the metrics; noticeGen changes
	// whenever it does.
	noticeKinds map[drift.Kind]int
	noticeGen   uint64

	// inhibitors are those held: the lock files' (locks, as the monitor
	// last said) and the parts' holds (withHolds).
	inhibitors []inhibit.Inhibitor
	locks      []inhibit.Inhibitor
	// inhibitDir is how the inhibitor directory was last said to be
	// followed (inhibitDirStatus).
	inhibitDir inhibit.DirStatus
	// reconcilers are the `drift-monitor reconcile` runs released while
	// another inhibitor was still held: their repair is journaled when the
	// last one goes.
	reconcilers []inhibit.Inhibitor

	// Status and publishing (status.go, publish.go, bus.go).
	ready      bool
	lastStatus string
	pub        Publisher
	// Which bus connections are down: systemd's (enablement is not
	// checked meanwhile) and the API's (drift-monitor status cannot
	// answer).
	unitsDown, apiDown bool
	apiRefused         bool // the bus refused the API its name (said once)
	// busHead is the first of the drift as the bus shows it, for the
	// tracker's generation busGen: most events change nothing of it.
	busHead []dbusapi.Drift
	busGen  uint64
	m       metricsOut // --metrics-textfile (metrics.go)
	// judged: the first check is done, every declared entry judged once
	// (noteJudged); until then a content still being read keeps the state
	// starting, never clean.
	judged bool

	// said is what the journal said of each drift's writers, by busKey
	// (noteWriters), for the bus.
	said map[string]part.Writers

	// parts are the optional features (parts.go): the MCD's follower,
	// attribution, the image's comparison.
	parts parts
}

// unitFileReader is a source of unit enablement that reads the unit files
// itself (enablement.Offline).
type unitFileReader interface {
	// ChangedBy reports whether a change at host path p may change what
	// it answers.
	ChangedBy(p string) bool
}

// New prepares a daemon; Run starts it. Close releases what New opened
// (Run does not).
func New(o Options) (*Daemon, error) {
	return newDaemon(o, func(r *ondisk.Root) (eventSource, error) { return watch.New(r) })
}

// newDaemon is New with the file events taken from the source newSource
// opens on the root: inotify, or a test's synthetic events.
func newDaemon(o Options, newSource func(*ondisk.Root) (eventSource, error)) (*Daemon, error) {
	if o.Root == "" {
		o.Root = "/"
	}
	if o.Settle <= 0 {
		o.Settle = 3 * time.Second
	}
	if o.PollInterval <= 0 {
		o.PollInterval = 10 * time.Second
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	root, err := ondisk.OpenRoot(o.Root)
	if err != nil {
		return nil, err
	}
	w, err := newSource(root)
	if err != nil {
		root.Close()
		return nil, err
	}
	done := make(chan struct{})
	d := &Daemon{
		o: o, log: o.Log, gc: newGCTuner(), root: root, w: w, obs: ondisk.NewObserver(root),
		track: newTracker(), writes: newWrites(o.Settle, done),
		done: done, ix: newIndex(nil), requests: make(chan func(context.Context)),
	}
	d.loads.done, d.loads.slow = make(chan loaded, 1), loadSlow
	d.startExt = startExtend{step: startExtension, max: startExtendMax}
	d.checker = &check.Checker{Root: root, ReadLimit: inlineReadLimit, Key: o.DigestKey, WaitForAccountLocks: true, NoDiff: d.contentDriftKnown}
	d.obs.ReadLimit = inlineReadLimit
	d.reads = newContentReads(d.checker)
	d.parts = newParts(o, d)
	if o.Units != nil {
		d.checker.Units = o.Units
	} else {
		offline := enablement.Offline{Root: root}
		d.checker.Units, d.unitFiles = offline, offline
	}
	if root.IsHost() {
		d.checker.Cmdline = check.ProcCmdline
		d.checker.NextBoot = check.BootLoaderEntries(check.BootEntriesDir)
		d.checker.Commands = osstate.Run
	}
	return d, nil
}

// closeLoadWait is how long a stop waits for a load under way: well
// inside the unit's TimeoutStopSec=, long enough for a small config's load
// to end and everything to be closed in order.
const closeLoadWait = 3 * time.Second

// Close releases the daemon's root, watches and descriptors.
func (d *Daemon) Close() {
	// A load under way reads the root, and nothing cancels it: a stop
	// waits for it a moment, then leaves it to the process's exit with
	// everything it may use still open, rather than hold the stop past
	// systemd's TimeoutStopSec= and end in SIGKILL.
	loaded := make(chan struct{})
	go func() { d.loads.wg.Wait(); close(loaded) }()
	wait := d.closeWait
	if wait == 0 {
		wait = closeLoadWait
	}
	select {
	case <-loaded:
	case <-time.After(wait):
		d.log.Warn("stopping while the desired configuration loads: loading the desired configuration was abandoned", "waited", wait.String())
		return
	}
	d.noteAccountLock(nil)
	d.gc.close()
	d.obs.Close()
	d.w.Close()
	d.root.Close()
}

// SetPublisher makes the daemon publish its state (the D-Bus API). Call it
// before Run.
func (d *Daemon) SetPublisher(p Publisher) { d.pub = p }

// Publisher receives the daemon's state after every change. Update must
// not block.
type Publisher interface {
	Update(dbusapi.Snapshot)
	// Events says when the publisher is off the bus and back; nil when not
	// observable.
	Events() <-chan buslink.Event
}

// Run runs a daemon until ctx ends; reload delivers SIGHUP-style reload
// requests.
func Run(ctx context.Context, o Options, reload <-chan struct{}) error {
	d, err := New(o)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Run(ctx, reload)
}
