// Package dbusapi exports the daemon on the system bus as
// org.driftmonitor.DriftMonitor1 at /org/driftmonitor/DriftMonitor1:
//
//	methods    Check() → (clean b, drift u)          root only
//	           Reload()                              root only
//	           Inhibit(who s, why s) → (fd h)        root only
//	properties State s ("starting", "clean", "drifted", "inhibited", "error")
//	           StatusText s, Drift a(sssss) (kind, entry, path, unit, message),
//	           Inhibitors a(ssu) (who, why, pid), LastCheck t (µs since the
//	           epoch), WatchedPaths u, Units u, Version s
//	           — all emit org.freedesktop.DBus.Properties.PropertiesChanged
//	signal     DriftChanged(a(sssss)) when the set of drift changes
//
// Introspection data is generated from the exported Go methods and the
// property table. Who may call what is the bus policy's job
// (packaging/org.driftmonitor.DriftMonitor1.conf: only root may own the name
// or call the methods); the methods check the caller's uid again.
//
// Inhibit returns a descriptor of a locked inhibitor file (see package
// inhibit): the inhibitor lasts until the caller closes it or dies. The
// daemon keeps no copy: it sends the reply itself and closes its descriptor
// only once the reply is written, because godbus would reply only after the
// method returns, too late to close the descriptor safely.
//
// It does not promise that a property read right after a change already
// shows it: the daemon publishes snapshots from its event loop.
package dbusapi

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/drift-monitor/drift-monitor/internal/inhibit"
	"github.com/godbus/dbus/v5"
	"github.com/godbus/dbus/v5/introspect"
	"github.com/godbus/dbus/v5/prop"
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
	State        string
	StatusText   string
	Drift        []Drift
	Inhibitors   []Inhibitor
	LastCheck    uint64
	WatchedPaths uint32
	Units        uint32
}

// Daemon is what the methods act on; calls arrive on bus goroutines and the
// implementation hands them to its event loop.
type Daemon interface {
	CheckNow(ctx context.Context) (clean bool, drift int, err error)
	ReloadNow(ctx context.Context) error
}

// Server is the exported object.
type Server struct {
	conn       *dbus.Conn
	props      *prop.Properties
	d          Daemon
	inhibitDir string

	mu        sync.Mutex
	lastDrift []Drift
	// selfReply: calls to Inhibit whose reply this package sends itself
	// (sender + serial → the caller wanted a reply).
	selfReply map[callKey]bool
}

type callKey struct {
	sender string
	serial uint32
}

// Interceptor must be installed on the connection (dbus.WithIncomingInterceptor)
// before Export; it lets Inhibit send its own reply. See the package doc.
type Interceptor struct{ s *Server }

// NewInterceptor returns the interceptor for a Server made later by Export.
func NewInterceptor() *Interceptor { return &Interceptor{} }

// Intercept is the dbus.Interceptor.
func (i *Interceptor) Intercept(msg *dbus.Message) {
	if msg.Type != dbus.TypeMethodCall {
		return
	}
	path, _ := msg.Headers[dbus.FieldPath].Value().(dbus.ObjectPath)
	iface, _ := msg.Headers[dbus.FieldInterface].Value().(string)
	member, _ := msg.Headers[dbus.FieldMember].Value().(string)
	if path != Path || iface != Interface || member != "Inhibit" || i.s == nil {
		return
	}
	sender, _ := msg.Headers[dbus.FieldSender].Value().(string)
	i.s.mu.Lock()
	i.s.selfReply[callKey{sender, msg.Serial()}] = msg.Flags&dbus.FlagNoReplyExpected == 0
	i.s.mu.Unlock()
	// godbus must not reply after the method returns: Inhibit does.
	msg.Flags |= dbus.FlagNoReplyExpected
}

// methods is the exported method set (introspection lists exactly these).
type methods struct{ s *Server }

// Export claims the bus name and exports the object on conn.
func Export(conn *dbus.Conn, ic *Interceptor, d Daemon, inhibitDir, version string) (*Server, error) {
	s := &Server{conn: conn, d: d, inhibitDir: inhibitDir, selfReply: map[callKey]bool{}}
	ic.s = s
	m := methods{s}
	if err := conn.Export(m, Path, Interface); err != nil {
		return nil, fmt.Errorf("exporting %s: %w", Path, err)
	}
	ro := func(v any) *prop.Prop { return &prop.Prop{Value: v, Writable: false, Emit: prop.EmitTrue} }
	props, err := prop.Export(conn, Path, prop.Map{Interface: {
		"State":        ro("starting"),
		"StatusText":   ro(""),
		"Drift":        ro([]Drift{}),
		"Inhibitors":   ro([]Inhibitor{}),
		"LastCheck":    ro(uint64(0)),
		"WatchedPaths": ro(uint32(0)),
		"Units":        ro(uint32(0)),
		"Version":      &prop.Prop{Value: version, Writable: false, Emit: prop.EmitConst},
	}})
	if err != nil {
		return nil, fmt.Errorf("exporting properties: %w", err)
	}
	s.props = props
	node := &introspect.Node{
		Name: string(Path),
		Interfaces: []introspect.Interface{
			introspect.IntrospectData,
			prop.IntrospectData,
			{
				Name:       Interface,
				Methods:    introspect.Methods(m),
				Properties: props.Introspection(Interface),
				Signals: []introspect.Signal{{
					Name: "DriftChanged",
					Args: []introspect.Arg{{Name: "drift", Type: "a(sssss)", Direction: "out"}},
				}},
			},
		},
	}
	fixInhibitIntrospection(node)
	if err := conn.Export(introspect.NewIntrospectable(node), Path, "org.freedesktop.DBus.Introspectable"); err != nil {
		return nil, err
	}
	reply, err := conn.RequestName(BusName, dbus.NameFlagDoNotQueue)
	if err != nil {
		return nil, fmt.Errorf("requesting %s: %w", BusName, err)
	}
	if reply != dbus.RequestNameReplyPrimaryOwner {
		return nil, fmt.Errorf("requesting %s: the name is taken (another drift-monitor is running?)", BusName)
	}
	return s, nil
}

// fixInhibitIntrospection names Inhibit's arguments as the reply carries them
// (the Go method's own result is a placeholder: the reply is sent by hand),
// and drops the injected sender and message arguments.
func fixInhibitIntrospection(n *introspect.Node) {
	for i := range n.Interfaces {
		for j := range n.Interfaces[i].Methods {
			m := &n.Interfaces[i].Methods[j]
			switch m.Name {
			case "Inhibit":
				m.Args = []introspect.Arg{
					{Name: "who", Type: "s", Direction: "in"},
					{Name: "why", Type: "s", Direction: "in"},
					{Name: "fd", Type: "h", Direction: "out"},
				}
			case "Check":
				m.Args = []introspect.Arg{
					{Name: "clean", Type: "b", Direction: "out"},
					{Name: "drift", Type: "u", Direction: "out"},
				}
			case "Reload":
				m.Args = nil
			}
		}
	}
}

// Update publishes a snapshot: properties that changed emit
// PropertiesChanged, and DriftChanged fires when the drift set changed.
func (s *Server) Update(snap Snapshot) {
	if snap.Drift == nil {
		snap.Drift = []Drift{}
	}
	if snap.Inhibitors == nil {
		snap.Inhibitors = []Inhibitor{}
	}
	set := func(name string, v any) {
		if cur, err := s.props.Get(Interface, name); err == nil && equalVariant(cur.Value(), v) {
			return
		}
		s.props.SetMust(Interface, name, v)
	}
	set("State", snap.State)
	set("StatusText", snap.StatusText)
	set("Inhibitors", snap.Inhibitors)
	set("LastCheck", snap.LastCheck)
	set("WatchedPaths", snap.WatchedPaths)
	set("Units", snap.Units)
	s.mu.Lock()
	changed := !slices.Equal(s.lastDrift, snap.Drift)
	s.lastDrift = snap.Drift
	s.mu.Unlock()
	if changed {
		s.props.SetMust(Interface, "Drift", snap.Drift)
		s.conn.Emit(Path, Interface+".DriftChanged", snap.Drift)
	}
}

func equalVariant(a, b any) bool {
	switch av := a.(type) {
	case []Inhibitor:
		bv, ok := b.([]Inhibitor)
		return ok && slices.Equal(av, bv)
	case string, uint32, uint64:
		return a == b
	}
	return false
}

// callerUID asks the bus for the uid of a sender.
func (s *Server) callerUID(sender dbus.Sender) (uint32, error) {
	var uid uint32
	err := s.conn.BusObject().Call("org.freedesktop.DBus.GetConnectionUnixUser", 0, string(sender)).Store(&uid)
	return uid, err
}

func (s *Server) requireRoot(sender dbus.Sender) *dbus.Error {
	uid, err := s.callerUID(sender)
	if err != nil {
		return dbus.NewError(ErrFailed, []any{fmt.Sprintf("cannot identify the caller: %v", err)})
	}
	if uid != 0 {
		return dbus.NewError(ErrAccessDenied, []any{"only root may do this"})
	}
	return nil
}

// Check runs a full check now and returns whether the machine is clean and
// how many drifts there are.
func (m methods) Check(sender dbus.Sender) (bool, uint32, *dbus.Error) {
	if e := m.s.requireRoot(sender); e != nil {
		return false, 0, e
	}
	clean, n, err := m.s.d.CheckNow(context.Background())
	if err != nil {
		return false, 0, dbus.NewError(ErrFailed, []any{err.Error()})
	}
	return clean, uint32(n), nil
}

// Reload re-reads the desired state.
func (m methods) Reload(sender dbus.Sender) *dbus.Error {
	if e := m.s.requireRoot(sender); e != nil {
		return e
	}
	if err := m.s.d.ReloadNow(context.Background()); err != nil {
		return dbus.NewError(ErrFailed, []any{err.Error()})
	}
	return nil
}

// Inhibit takes an inhibitor for the caller and replies with the descriptor
// that holds it. The reply is sent here (see the package doc); what this
// method returns is discarded.
func (m methods) Inhibit(sender dbus.Sender, msg dbus.Message, who, why string) (dbus.UnixFD, *dbus.Error) {
	s := m.s
	key := callKey{string(sender), msg.Serial()}
	s.mu.Lock()
	wantsReply, intercepted := s.selfReply[key]
	delete(s.selfReply, key)
	s.mu.Unlock()
	if !intercepted {
		return -1, dbus.NewError(ErrFailed, []any{"internal error: Inhibit was not intercepted"})
	}
	fail := func(name, text string) (dbus.UnixFD, *dbus.Error) {
		if wantsReply {
			s.sendError(key, name, text)
		}
		return -1, nil
	}
	uid, err := s.callerUID(sender)
	if err != nil {
		return fail(ErrFailed, fmt.Sprintf("cannot identify the caller: %v", err))
	}
	if uid != 0 {
		return fail(ErrAccessDenied, "only root may take an inhibitor")
	}
	var pid uint32
	if err := s.conn.BusObject().Call("org.freedesktop.DBus.GetConnectionUnixProcessID", 0, string(sender)).Store(&pid); err != nil {
		return fail(ErrFailed, fmt.Sprintf("cannot identify the caller's process: %v", err))
	}
	lock, err := inhibit.Take(s.inhibitDir, who, why, int(pid))
	if err != nil {
		return fail(ErrFailed, err.Error())
	}
	if !wantsReply {
		lock.Release() // nobody would receive the descriptor
		return -1, nil
	}
	if err := s.sendReply(key, dbus.UnixFD(lock.File().Fd())); err != nil {
		lock.Release()
		return -1, nil
	}
	// The reply is written: the caller's copy holds the lock from now on.
	lock.CloseKeepingFile()
	return -1, nil
}

func (s *Server) sendReply(k callKey, values ...any) error {
	reply := &dbus.Message{Type: dbus.TypeMethodReply, Headers: map[dbus.HeaderField]dbus.Variant{
		dbus.FieldDestination: dbus.MakeVariant(k.sender),
		dbus.FieldReplySerial: dbus.MakeVariant(k.serial),
		dbus.FieldSignature:   dbus.MakeVariant(dbus.SignatureOf(values...)),
	}, Body: values}
	call := s.conn.Send(reply, nil)
	<-call.Done
	return call.Err
}

func (s *Server) sendError(k callKey, name, text string) {
	e := &dbus.Message{Type: dbus.TypeError, Headers: map[dbus.HeaderField]dbus.Variant{
		dbus.FieldDestination: dbus.MakeVariant(k.sender),
		dbus.FieldReplySerial: dbus.MakeVariant(k.serial),
		dbus.FieldErrorName:   dbus.MakeVariant(name),
		dbus.FieldSignature:   dbus.MakeVariant(dbus.SignatureOf(text)),
	}, Body: []any{text}}
	s.conn.Send(e, nil)
}

// ConnectSystemBus connects to the system bus (DBUS_SYSTEM_BUS_ADDRESS, or
// the default socket) with the interceptor Export needs.
func ConnectSystemBus(ic *Interceptor) (*dbus.Conn, error) {
	conn, err := dbus.ConnectSystemBus(dbus.WithIncomingInterceptor(ic.Intercept))
	if err != nil {
		return nil, fmt.Errorf("connecting to the system bus: %w", err)
	}
	return conn, nil
}

// ErrUnreachable: the daemon is not on the bus.
var ErrUnreachable = errors.New("drift-monitor is not running (or not reachable on the system bus)")
