// Package dbusapi exports the daemon on the system bus as
// org.driftmonitor.DriftMonitor1 at /org/driftmonitor/DriftMonitor1:
//
//	methods    Check() → (clean b, drift u)          root only
//	           Reload()                              root only
//	           Inhibit(who s, why s) → (fd h)        root only
//	           GetDrift(offset u, limit u) → (generation t, total u,
//	                    drift a(sssss))              anyone
//	           GetDriftEx(offset u, limit u) → (generation t, total u,
//	                    drift a(sssssa{sv}))         anyone (DriftEx: the
//	                    writers, beside what GetDrift gives)
//	           GetMetrics() → (text s)               anyone (Prometheus text)
//	properties State s (StateStarting, StateClean, StateDrifted, StateInhibited,
//	           StateError, StateChecking, StateUnconfigured: "starting", "clean",
//	           "drifted", "inhibited", "error", "checking", "unconfigured")
//	           StatusText s, DriftCount u, Drift a(sssss) (kind, entry, path,
//	           unit, message: the first MaxDrift), Inhibitors a(ssu) (who,
//	           why, pid), LastCheck t (µs since the epoch), WatchedPaths u,
//	           Units u, Version s
//	           — all but Version emit PropertiesChanged, one signal for all
//	           that changed together
//	signal     DriftChanged(a(sssss)) when the set of drift changes: the new
//	           first MaxDrift, as Drift
//
// What goes on the bus is bounded, whatever the drift: a message above the
// bus's limit (dbus-daemon's max_message_size, 32 MiB on the system bus,
// /usr/share/dbus-1/system.conf) gets its sender disconnected. Drift and
// DriftChanged carry the first MaxDrift (100) drifts in the daemon's order
// (path, entry, kind); DriftCount says how many there are in all. GetDrift
// pages through all of them: it returns at most limit (at most MaxPage,
// 1000; 0 means MaxPage) from offset on, fewer when their strings would pass
// MaxBytes (at least one), with the total and the generation of the set
// they come from. A client reads pages until it has total, and starts over
// when the generation changes (the set changed between two pages). Every
// string is valid UTF-8 (invalid bytes become U+FFFD, as D-Bus requires) and
// at most MaxField bytes (longer ones are cut, ending in "…").
//
// The connection comes back: when the bus restarts or the connection is
// lost, the server connects again with backoff (package buslink), exports
// the object again and claims the name again; Events says when it is off
// the bus and when it is back. Update never blocks on the bus and never
// fails: a snapshot published while the bus is away is what the next
// connection shows.
//
// Introspection data is generated from the exported Go methods and the
// property table. Who may call what is the bus policy's job
// (packaging/org.driftmonitor.DriftMonitor1.conf: only root may own the name
// or call Check, Reload and Inhibit); those methods check the caller's uid
// again.
//
// Inhibit returns a descriptor of a locked inhibitor file (see package
// inhibit): the inhibitor lasts until the caller closes it or dies. The
// daemon keeps no copy: it sends the reply itself and closes its descriptor
// only once the reply is written, because godbus would reply only after the
// method returns, too late to close the descriptor safely.
//
// It does not promise that a property read right after a change already
// shows it, nor a signal for every intermediate state: the daemon publishes
// snapshots from its event loop, and signals carry the latest one.
package dbusapi

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"

	"github.com/drift-monitor/drift-monitor/internal/buslink"
	"github.com/drift-monitor/drift-monitor/internal/escape"
	"github.com/godbus/dbus/v5"
)

// The bus name, object path and interface.
const (
	BusName   = "org.driftmonitor.DriftMonitor1"
	Path      = dbus.ObjectPath("/org/driftmonitor/DriftMonitor1")
	Interface = "org.driftmonitor.DriftMonitor1"
)

// Error names.
const (
	ErrAccessDenied = "org.driftmonitor.DriftMonitor1.Error.AccessDenied"
	ErrFailed       = "org.driftmonitor.DriftMonitor1.Error.Failed"
)

// Bounds of what goes on the bus; see the package doc.
const (
	MaxDrift = 100
	MaxPage  = 1000
	MaxBytes = 4 << 20
	MaxField = 64 << 10
)

// Drift is one drift as the bus carries it: (sssss).
type Drift struct {
	Kind, Entry, Path, Unit, Message string
}

// Inhibitor as the bus carries it: (ssu).
type Inhibitor struct {
	Who, Why string
	PID      uint32
}

// Snapshot is the daemon's state at one moment.
type Snapshot struct {
	State      string
	StatusText string
	// Drift is the first drift, in order (at most MaxDrift are kept);
	// DriftCount is how many there are; DriftGeneration changes whenever
	// the set does.
	Drift           []Drift
	DriftCount      uint32
	DriftGeneration uint64
	Inhibitors      []Inhibitor
	LastCheck       uint64
	WatchedPaths    uint32
	Units           uint32
}

// Daemon is what the methods act on; calls arrive on bus goroutines and the
// implementation hands them to its event loop.
type Daemon interface {
	CheckNow(ctx context.Context) (clean bool, drift int, err error)
	ReloadNow(ctx context.Context) error
	// DriftPage returns at most limit drifts from offset on, in order,
	// with the total and the generation of the set.
	DriftPage(ctx context.Context, offset, limit int) (generation uint64, total int, page []Drift, err error)
}

// Options configure a Server.
type Options struct {
	InhibitDir string
	Version    string
	// Address is the bus's address; "" is the system bus
	// ($DBUS_SYSTEM_BUS_ADDRESS, or the default socket).
	Address string
	// Link tunes reconnecting (tests: a short backoff).
	Link buslink.Options
}

// Server keeps the exported object on the bus; see the package doc.
type Server struct {
	d    Daemon
	o    Options
	link *buslink.Link[*session]

	ctx    context.Context
	cancel context.CancelFunc

	mu     sync.Mutex
	values map[string]any // the properties now
	gen    uint64         // DriftGeneration of values
	wake   chan struct{}
	done   chan struct{}
}

// Serve starts keeping the API on the bus; the first attempt is made before
// it returns. It runs until ctx ends or Close.
func Serve(ctx context.Context, d Daemon, o Options) *Server {
	s := &Server{d: d, o: o, wake: make(chan struct{}, 1), done: make(chan struct{})}
	s.ctx, s.cancel = context.WithCancel(ctx)
	s.values = s.propertyValues(Snapshot{State: StateStarting}, nil, 0)
	s.link = buslink.Start(s.ctx, o.Link, s.connect)
	go s.emitter()
	return s
}

// Events says when the server is off the bus and when it is back.
func (s *Server) Events() <-chan buslink.Event { return s.link.Events() }

// Close takes the server off the bus.
func (s *Server) Close() {
	s.cancel()
	s.link.Close()
	<-s.done
}

// Update publishes a snapshot: properties that changed emit
// PropertiesChanged, and DriftChanged fires when the drift set changed. It
// returns at once: the signals are sent by a goroutine of the server.
func (s *Server) Update(snap Snapshot) {
	s.mu.Lock()
	old, oldGen := s.values, s.gen
	s.mu.Unlock()
	v := s.propertyValues(snap, old, oldGen)
	s.mu.Lock()
	s.values, s.gen = v, snap.DriftGeneration
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

func (s *Server) current() (map[string]any, uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.values, s.gen
}

// session is one connection with the object exported on it.
type session struct {
	s    *Server
	conn *dbus.Conn

	mu sync.Mutex
	// selfReply: calls to Inhibit whose reply this package sends itself
	// (sender + serial → the caller wanted a reply).
	selfReply map[callKey]bool
	// What this connection's signals last said (emitter only).
	emitted    map[string]any
	emittedGen uint64
}

func (ss *session) Done() <-chan struct{} { return ss.conn.Context().Done() }
func (ss *session) Close()                { ss.conn.Close() }

// connect makes one connection: it dials, exports the object, and claims
// the name. A connection that loses the name later is not noticed: the
// policy lets only root own it, and only one drift-monitor runs.
func (s *Server) connect(ctx context.Context) (*session, error) {
	ss := &session{s: s, selfReply: map[callKey]bool{}}
	conn, err := dialBus(ctx, s.o.Address, dbus.WithIncomingInterceptor(ss.intercept))
	if err != nil {
		return nil, fmt.Errorf("connecting to the system bus: %w", err)
	}
	ss.conn = conn
	if err := ss.export(); err != nil {
		conn.Close()
		return nil, err
	}
	// From here on the clients that call by name reach this connection and
	// read the properties now; signals tell them what changes after.
	reply, err := conn.RequestName(BusName, dbus.NameFlagDoNotQueue)
	switch {
	case err == nil && reply == dbus.RequestNameReplyPrimaryOwner:
	case err == nil:
		conn.Close()
		return nil, &NameError{Err: errors.New("the name is taken (another drift-monitor is running?)")}
	case errorName(err) == "org.freedesktop.DBus.Error.AccessDenied":
		conn.Close()
		return nil, &NameError{Err: err}
	default:
		conn.Close()
		return nil, fmt.Errorf("requesting %s: %w", BusName, err)
	}
	ss.emitted, ss.emittedGen = s.current()
	select {
	case s.wake <- struct{}{}: // a snapshot may have come meanwhile
	default:
	}
	return ss, nil
}

// dialBus connects, authenticates and says Hello, giving up when ctx ends
// (godbus's WithContext would tie the connection's whole life to ctx, and
// its Auth does not look at a context: closing the connection unblocks it).
func dialBus(ctx context.Context, addr string, opts ...dbus.ConnOption) (*dbus.Conn, error) {
	var conn *dbus.Conn
	var err error
	if addr == "" {
		conn, err = dbus.SystemBusPrivate(opts...)
	} else {
		conn, err = dbus.Dial(addr, opts...)
	}
	if err != nil {
		return nil, err
	}
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	if err = conn.Auth(nil); err == nil {
		err = conn.Hello()
	}
	if !stop() {
		err = errors.Join(ctx.Err(), err)
	}
	if err != nil {
		conn.Close()
		return nil, err
	}
	return conn, nil
}

// emitter sends the signals for what Update changed, on the current
// connection, never on the caller's goroutine: a bus that does not read
// (stopped, overloaded) blocks this goroutine, not the daemon's loop.
func (s *Server) emitter() {
	defer close(s.done)
	for {
		select {
		case <-s.wake:
		case <-s.ctx.Done():
			return
		}
		ss, ok, _ := s.link.Current()
		if !ok {
			continue // the next connection starts from the values then
		}
		values, gen := s.current()
		changed := map[string]dbus.Variant{}
		for name, v := range values {
			if name == "Version" {
				continue // EmitsChangedSignal=const
			}
			if name == "Drift" && gen == ss.emittedGen {
				continue // the same set: no need to compare 100 items
			}
			if !reflect.DeepEqual(ss.emitted[name], v) {
				changed[name] = dbus.MakeVariant(v)
			}
		}
		var err error
		if len(changed) > 0 {
			err = ss.conn.Emit(Path, "org.freedesktop.DBus.Properties.PropertiesChanged", Interface, changed, []string{})
		}
		if err == nil && gen != ss.emittedGen {
			err = ss.conn.Emit(Path, Interface+".DriftChanged", values["Drift"])
		}
		if err != nil {
			// Only a lost connection makes Emit fail here (everything is
			// bounded and valid UTF-8): the link sees the loss, and the
			// next connection is read afresh.
			continue
		}
		ss.emitted, ss.emittedGen = values, gen
	}
}

// propertyValues are the properties for a snapshot, bounded; the Drift of
// old is kept when the generation is that of old.
func (s *Server) propertyValues(snap Snapshot, old map[string]any, oldGen uint64) map[string]any {
	var drift []Drift
	if d, ok := old["Drift"].([]Drift); ok && oldGen == snap.DriftGeneration {
		drift = d
	} else {
		drift = bound(snap.Drift[:min(len(snap.Drift), MaxDrift)])
	}
	ins := make([]Inhibitor, len(snap.Inhibitors))
	for i, in := range snap.Inhibitors {
		ins[i] = Inhibitor{Who: busString(in.Who), Why: busString(in.Why), PID: in.PID}
	}
	return map[string]any{
		"State":        snap.State,
		"StatusText":   busString(snap.StatusText),
		"DriftCount":   snap.DriftCount,
		"Drift":        drift,
		"Inhibitors":   ins,
		"LastCheck":    snap.LastCheck,
		"WatchedPaths": snap.WatchedPaths,
		"Units":        snap.Units,
		"Version":      busString(s.o.Version),
	}
}

// bound returns what of ds fits in MaxBytes (at least one), with every
// string made fit for the bus.
func bound(ds []Drift) []Drift {
	out := make([]Drift, 0, len(ds))
	size := 0
	for _, d := range ds {
		d = Drift{busString(d.Kind), busString(d.Entry), busString(d.Path), busString(d.Unit), busString(d.Message)}
		// Each string costs its bytes, a length and a NUL (and padding).
		size += len(d.Kind) + len(d.Entry) + len(d.Path) + len(d.Unit) + len(d.Message) + 5*8
		if size > MaxBytes && len(out) > 0 {
			break
		}
		out = append(out, d)
	}
	return out
}

// busString makes s valid UTF-8 of at most MaxField bytes.
func busString(s string) string {
	return escape.Cut(strings.ToValidUTF8(s, "\uFFFD"), MaxField)
}

// NameError is why a connection to a bus that answered could not claim
// BusName: the bus policy refuses it (not installed?) or another process
// owns it. It is a matter of configuration, not the bus being away; the
// server keeps trying all the same.
type NameError struct{ Err error }

func (e *NameError) Error() string { return fmt.Sprintf("cannot own %s: %v", BusName, e.Err) }
func (e *NameError) Unwrap() error { return e.Err }

// errorName is the D-Bus error name in err, or "". godbus delivers an error
// reply as a dbus.Error value (callTracker.handleDBusError in its conn.go).
func errorName(err error) string {
	var e dbus.Error
	if errors.As(err, &e) {
		return e.Name
	}
	return ""
}

// ErrUnreachable: the daemon is not on the bus.
var ErrUnreachable = errors.New("drift-monitor is not running (or not reachable on the system bus)")
