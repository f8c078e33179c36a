// Package systemd asks the running systemd, over D-Bus (org.freedesktop.systemd1
// on the system bus), what `systemctl is-enabled` would answer for units, says
// when that may have changed, and starts units.
//
// It promises:
//   - UnitFileStates answers with the words systemctl prints: "enabled",
//     "enabled-runtime", "linked", "linked-runtime", "alias", "masked",
//     "masked-runtime", "static", "indirect", "disabled", "generated",
//     "transient", "bad", and "not-found" (enablement.StateNotFound, the
//     words' one home) for a unit systemd has no file for. The words come
//     from systemd, unchanged; only "not-found" is made here (systemd
//     answers a method error for such a unit).
//   - WatchUnitFiles fires after every enable, disable, mask, unmask, link,
//     preset or revert made through systemd (systemctl, D-Bus) and after every
//     daemon-reload; the signals are accepted only from the owner of
//     org.freedesktop.systemd1.
//
// It does not promise to see unit files that an admin edits or symlinks by
// hand without `systemctl daemon-reload`: systemd itself does not notice them
// then. Watch /etc/systemd/system with inotify for that. It does not work
// offline (--root); enablement of a tree that is not running is computed from
// the unit files elsewhere.
package systemd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"strconv"
	"strings"
	"sync"
	"time"

	sddbus "github.com/coreos/go-systemd/v22/dbus"
	"github.com/drift-monitor/drift-monitor/internal/enablement"
	godbus "github.com/godbus/dbus/v5"
)

// DefaultTimeout bounds the calls that take no context (UnitFileState); it is
// D-Bus's customary method-call timeout.
const DefaultTimeout = 25 * time.Second

const (
	busName     = "org.freedesktop.systemd1"
	objectPath  = godbus.ObjectPath("/org/freedesktop/systemd1")
	managerIntf = "org.freedesktop.systemd1.Manager"
)

// Booted reports whether the machine runs systemd as its init (sd_booted(3):
// /run/systemd/system exists).
func Booted() bool {
	fi, err := os.Lstat("/run/systemd/system")
	return err == nil && fi.IsDir()
}

// Conn is a connection to systemd's manager. It is safe for concurrent use.
type Conn struct {
	// sd makes the method calls go-systemd wraps (and tracks start jobs).
	sd *sddbus.Conn
	// bus is ours: GetUnitFileState (go-systemd does not wrap it) and the
	// UnitFilesChanged/Reloading signals (go-systemd neither wraps them nor
	// lets a caller read signals from its own connection).
	bus *godbus.Conn
	mgr godbus.BusObject

	mu       sync.Mutex // guards watchers
	watchers int

	done     chan struct{} // closed when any of the connections ends
	doneOnce sync.Once
}

// JobError is returned by StartUnit when systemd finished the start job with
// a result other than "done".
type JobError struct {
	Unit string
	// Result is systemd's job result: canceled, timeout, failed, dependency,
	// skipped, invalid, assert or once.
	Result string
}

func (e *JobError) Error() string {
	return fmt.Sprintf("starting %s: job %s", e.Unit, e.Result)
}

// Connect connects to systemd on the system bus ($DBUS_SYSTEM_BUS_ADDRESS, or
// /run/dbus/system_bus_socket). ctx bounds connecting, not the connection.
func Connect(ctx context.Context) (*Conn, error) {
	return ConnectWith(ctx, dialSystemBus)
}

// ConnectWith connects through dial, which is called several times and must
// return independent connections on which authentication and Hello have
// succeeded (go-systemd's NewConnection contract) — for tests on a private
// bus. ctx bounds connecting, not the connection.
func ConnectWith(ctx context.Context, dial func() (*godbus.Conn, error)) (*Conn, error) {
	// go-systemd keeps the two connections it dials to itself; they are
	// kept here too, to know when one of them ends.
	var mu sync.Mutex
	var conns []*godbus.Conn
	d := func() (*godbus.Conn, error) {
		c, err := dialContext(ctx, dial)
		if c != nil {
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
		return c, err
	}
	sd, err := sddbus.NewConnection(d)
	if err != nil {
		return nil, fmt.Errorf("connecting to systemd: %w", err)
	}
	bus, err := d()
	if err != nil {
		sd.Close()
		return nil, fmt.Errorf("connecting to systemd: %w", err)
	}
	c := &Conn{sd: sd, bus: bus, mgr: bus.Object(busName, objectPath), done: make(chan struct{})}
	mu.Lock()
	defer mu.Unlock()
	for _, gc := range conns {
		go func() {
			<-gc.Context().Done() // godbus cancels it when the connection ends, lost or closed
			c.doneOnce.Do(func() { close(c.done) })
		}()
	}
	return c, nil
}

func dialSystemBus() (*godbus.Conn, error) {
	conn, err := godbus.SystemBusPrivate()
	if err != nil {
		return nil, err
	}
	// EXTERNAL with the numeric uid, as go-systemd does: no user lookup.
	if err := conn.Auth([]godbus.Auth{godbus.AuthExternal(strconv.Itoa(os.Getuid()))}); err != nil {
		conn.Close()
		return nil, err
	}
	if err := conn.Hello(); err != nil {
		conn.Close()
		return nil, err
	}
	return conn, nil
}

// dialContext gives up on dial when ctx is done (godbus's own WithContext
// would tie the connection's whole life to ctx); a connection that arrives
// late is closed.
func dialContext(ctx context.Context, dial func() (*godbus.Conn, error)) (*godbus.Conn, error) {
	type result struct {
		conn *godbus.Conn
		err  error
	}
	ch := make(chan result, 1)
	go func() {
		c, err := dial()
		ch <- result{c, err}
	}()
	select {
	case r := <-ch:
		return r.conn, r.err
	case <-ctx.Done():
		go func() {
			if r := <-ch; r.conn != nil {
				r.conn.Close()
			}
		}()
		return nil, ctx.Err()
	}
}

// Close closes the connection. Channels from WatchUnitFiles are closed.
func (c *Conn) Close() {
	c.sd.Close()
	c.bus.Close()
}

// Done is closed when the connection is lost (or closed): after that, every
// call fails.
func (c *Conn) Done() <-chan struct{} { return c.done }

// UnitFileStates returns, for each of units (full names: "kubelet.service"),
// the state `systemctl is-enabled` prints; see the package doc. It asks
// systemd once for all of them (ListUnitFilesByPatterns) and once more for
// each unit that has no file of its own in the unit search path: template
// instances ("getty@tty1.service") and units systemd does not know. An
// invalid unit name is an error.
func (c *Conn) UnitFileStates(ctx context.Context, units []string) (map[string]string, error) {
	states := make(map[string]string, len(units))
	if len(units) == 0 {
		return states, nil
	}
	// The names go in as patterns unchanged: unit names cannot contain
	// fnmatch's *, ? or [, and systemd matches with FNM_NOESCAPE (observed on
	// systemd 252: "foo\x2dbar.service" matches itself). Were a name not to
	// match itself, it would be missing from the answer and asked for below.
	files, err := c.sd.ListUnitFilesByPatternsContext(ctx, []string{}, units)
	if err != nil && dbusErrorName(err) != "org.freedesktop.DBus.Error.UnknownMethod" {
		return nil, fmt.Errorf("listing unit files %s: %w", strings.Join(units, " "), err)
	}
	// err != nil here means systemd older than 230: every unit is asked for
	// one by one.
	listed := make(map[string]string, len(files))
	for _, f := range files {
		listed[path.Base(f.Path)] = f.Type
	}
	for _, u := range units {
		if st, ok := listed[u]; ok {
			states[u] = st
			continue
		}
		st, err := c.getUnitFileState(ctx, u)
		if err != nil {
			return nil, err
		}
		states[u] = st
	}
	return states, nil
}

func (c *Conn) getUnitFileState(ctx context.Context, unit string) (string, error) {
	var st string
	err := c.mgr.CallWithContext(ctx, managerIntf+".GetUnitFileState", 0, unit).Store(&st)
	switch dbusErrorName(err) {
	case "":
		if err != nil {
			return "", fmt.Errorf("unit file state of %s: %w", unit, err)
		}
		return st, nil
	case "org.freedesktop.DBus.Error.FileNotFound", "org.freedesktop.systemd1.NoSuchUnit":
		// systemd maps ENOENT from unit_file_get_state to FileNotFound;
		// systemctl is-enabled prints "not-found" for it.
		return enablement.StateNotFound, nil
	default:
		return "", fmt.Errorf("unit file state of %s: %w", unit, err)
	}
}

// UnitFileState is UnitFileStates for one unit, bounded by DefaultTimeout.
func (c *Conn) UnitFileState(unit string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), DefaultTimeout)
	defer cancel()
	m, err := c.UnitFileStates(ctx, []string{unit})
	if err != nil {
		return "", err
	}
	return m[unit], nil
}

// WatchUnitFiles returns a channel that receives a value after systemd's
// manager emitted UnitFilesChanged (an enable, disable, mask… through
// systemd) or Reloading (daemon-reload, at its start and at its end). Values
// are coalesced: the channel holds at most one, and a burst of signals while
// it is full leaves just that one, so the receiver re-reads the states once
// per wake-up. The channel is closed when ctx is done or the connection is
// lost (or closed).
//
// On the system bus systemd emits these signals only while some client is
// subscribed (Manager.Subscribe); its private socket gets them always. So the
// first watcher subscribes this connection and the last one to end
// unsubscribes it.
func (c *Conn) WatchUnitFiles(ctx context.Context) (<-chan struct{}, error) {
	return c.watchUnitFiles(ctx, ctx)
}

// watchUnitFiles is WatchUnitFiles with the subscription bounded by sub and
// the watch by life.
func (c *Conn) watchUnitFiles(sub, life context.Context) (<-chan struct{}, error) {
	ctx := life
	sigs := make(chan *godbus.Signal, 16)
	c.bus.Signal(sigs)
	if err := c.subscribe(sub); err != nil {
		c.bus.RemoveSignal(sigs)
		return nil, err
	}
	out := make(chan struct{}, 1)
	go func() {
		defer close(out)
		defer c.unsubscribe()
		defer c.bus.RemoveSignal(sigs)
		for {
			select {
			case <-ctx.Done():
				return
			case s, ok := <-sigs:
				if !ok {
					return // connection lost or closed
				}
				if s.Path != objectPath {
					continue
				}
				switch s.Name {
				case managerIntf + ".UnitFilesChanged", managerIntf + ".Reloading":
					select {
					case out <- struct{}{}:
					default:
					}
				}
			}
		}
	}()
	return out, nil
}

// The match rules name systemd's bus name as sender: the bus then routes us
// only signals from its current owner, so no other client can fake them.
var watchRules = [][]godbus.MatchOption{
	{godbus.WithMatchSender(busName), godbus.WithMatchObjectPath(objectPath),
		godbus.WithMatchInterface(managerIntf), godbus.WithMatchMember("UnitFilesChanged")},
	{godbus.WithMatchSender(busName), godbus.WithMatchObjectPath(objectPath),
		godbus.WithMatchInterface(managerIntf), godbus.WithMatchMember("Reloading")},
}

func (c *Conn) subscribe(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.watchers > 0 {
		c.watchers++
		return nil
	}
	for i, rule := range watchRules {
		if err := c.bus.AddMatchSignalContext(ctx, rule...); err != nil {
			for _, r := range watchRules[:i] {
				_ = c.bus.RemoveMatchSignal(r...) // best effort; the rule dies with the connection anyway
			}
			return fmt.Errorf("watching systemd's unit files: %w", err)
		}
	}
	err := c.mgr.CallWithContext(ctx, managerIntf+".Subscribe", 0).Store()
	if err != nil && dbusErrorName(err) != "org.freedesktop.systemd1.AlreadySubscribed" {
		for _, r := range watchRules {
			_ = c.bus.RemoveMatchSignal(r...)
		}
		return fmt.Errorf("subscribing to systemd's signals: %w", err)
	}
	c.watchers = 1
	return nil
}

func (c *Conn) unsubscribe() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.watchers--
	if c.watchers > 0 {
		return
	}
	// Errors are ignored on purpose: they happen when the connection is
	// gone, and a subscription and match rules end with their connection.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = c.mgr.CallWithContext(ctx, managerIntf+".Unsubscribe", 0).Store()
	for _, r := range watchRules {
		_ = c.bus.RemoveMatchSignalContext(ctx, r...)
	}
}

// StartUnit starts name in mode "replace" and waits for the job's result
// until ctx is done: nil when the job is done, a *JobError when it ended
// otherwise (a Type=oneshot unit that failed: "failed"). Give ctx a deadline:
// a job can wait for a long time.
func (c *Conn) StartUnit(ctx context.Context, name string) error {
	done, err := c.startJob(ctx, name)
	if err != nil {
		return err
	}
	return waitJob(ctx, name, done)
}

// startJob asks systemd to start name; the job's result arrives on the
// channel.
func (c *Conn) startJob(ctx context.Context, name string) (<-chan string, error) {
	done := make(chan string, 1) // go-systemd blocks its signal loop on an unbuffered send
	if _, err := c.sd.StartUnitContext(ctx, name, "replace", done); err != nil {
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	return done, nil
}

func waitJob(ctx context.Context, name string, done <-chan string) error {
	select {
	case res := <-done:
		if res != "done" {
			return &JobError{Unit: name, Result: res}
		}
		return nil
	case <-ctx.Done():
		return fmt.Errorf("starting %s: waiting for the job: %w", name, ctx.Err())
	}
}

// dbusErrorName returns the D-Bus error name in err, or "".
func dbusErrorName(err error) string {
	var e godbus.Error
	if errors.As(err, &e) {
		return e.Name
	}
	var pe *godbus.Error
	if errors.As(err, &pe) {
		return pe.Name
	}
	return ""
}
