package dbusapi

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/drift-monitor/drift-monitor/internal/inhibit"
	"github.com/godbus/dbus/v5"
	"github.com/godbus/dbus/v5/introspect"
	"github.com/godbus/dbus/v5/prop"
)

// callTimeout bounds what a method waits for the daemon's loop (D-Bus's
// customary method-call timeout: the caller gives up then anyway).
const callTimeout = 25 * time.Second

type callKey struct {
	sender string
	serial uint32
}

// intercept sees every incoming message before godbus dispatches it: it
// lets Inhibit send its own reply (see the package doc).
func (ss *session) intercept(msg *dbus.Message) {
	if msg.Type != dbus.TypeMethodCall {
		return
	}
	path, _ := msg.Headers[dbus.FieldPath].Value().(dbus.ObjectPath)
	iface, _ := msg.Headers[dbus.FieldInterface].Value().(string)
	member, _ := msg.Headers[dbus.FieldMember].Value().(string)
	if path != Path || iface != Interface || member != "Inhibit" {
		return
	}
	sender, _ := msg.Headers[dbus.FieldSender].Value().(string)
	ss.mu.Lock()
	ss.selfReply[callKey{sender, msg.Serial()}] = msg.Flags&dbus.FlagNoReplyExpected == 0
	ss.mu.Unlock()
	// godbus must not reply after the method returns: Inhibit does.
	msg.Flags |= dbus.FlagNoReplyExpected
}

// methods is the exported method set of one connection (introspection lists
// exactly these).
type methods struct{ ss *session }

// properties is org.freedesktop.DBus.Properties, read-only, answered from
// the server's latest snapshot. (godbus's prop package panics when a
// change cannot be emitted, and emits on the caller's goroutine.)
type properties struct{ s *Server }

func (p properties) Get(iface, name string) (dbus.Variant, *dbus.Error) {
	if iface != Interface {
		return dbus.Variant{}, prop.ErrIfaceNotFound
	}
	values, _ := p.s.current()
	v, ok := values[name]
	if !ok {
		return dbus.Variant{}, prop.ErrPropNotFound
	}
	return dbus.MakeVariant(v), nil
}

func (p properties) GetAll(iface string) (map[string]dbus.Variant, *dbus.Error) {
	if iface != Interface {
		return nil, prop.ErrIfaceNotFound
	}
	values, _ := p.s.current()
	out := make(map[string]dbus.Variant, len(values))
	for k, v := range values {
		out[k] = dbus.MakeVariant(v)
	}
	return out, nil
}

func (p properties) Set(iface, name string, _ dbus.Variant) *dbus.Error {
	if _, err := p.Get(iface, name); err != nil {
		return err
	}
	return prop.ErrReadOnly
}

func (ss *session) export() error {
	conn := ss.conn
	m := methods{ss}
	if err := conn.Export(m, Path, Interface); err != nil {
		return fmt.Errorf("exporting %s: %w", Path, err)
	}
	if err := conn.Export(properties{ss.s}, Path, "org.freedesktop.DBus.Properties"); err != nil {
		return fmt.Errorf("exporting %s's properties: %w", Path, err)
	}
	values, _ := ss.s.current()
	var props []introspect.Property
	for name, v := range values {
		emits := "true"
		if name == "Version" {
			emits = "const"
		}
		props = append(props, introspect.Property{Name: name, Type: dbus.SignatureOf(v).String(), Access: "read",
			Annotations: []introspect.Annotation{{Name: "org.freedesktop.DBus.Property.EmitsChangedSignal", Value: emits}}})
	}
	sort.Slice(props, func(i, j int) bool { return props[i].Name < props[j].Name })
	node := &introspect.Node{
		Name: string(Path),
		Interfaces: []introspect.Interface{
			introspect.IntrospectData,
			prop.IntrospectData,
			{
				Name:       Interface,
				Methods:    introspect.Methods(m),
				Properties: props,
				Signals: []introspect.Signal{{
					Name: "DriftChanged",
					Args: []introspect.Arg{{Name: "drift", Type: "a(sssss)", Direction: "out"}},
				}},
			},
		},
	}
	fixIntrospection(node)
	if err := conn.Export(introspect.NewIntrospectable(node), Path, "org.freedesktop.DBus.Introspectable"); err != nil {
		return fmt.Errorf("exporting %s's introspection: %w", Path, err)
	}
	return nil
}

// fixIntrospection names the methods' arguments as the bus sees them:
// Inhibit's as its reply carries them (the Go method's own result is a
// placeholder: the reply is sent by hand), without the injected sender and
// message arguments.
func fixIntrospection(n *introspect.Node) {
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
			case "GetMetrics":
				m.Args = []introspect.Arg{{Name: "text", Type: "s", Direction: "out"}}
			case "GetDrift", "GetDriftEx":
				drift := "a(sssss)"
				if m.Name == "GetDriftEx" {
					drift = "a(sssssa{sv})"
				}
				m.Args = []introspect.Arg{
					{Name: "offset", Type: "u", Direction: "in"},
					{Name: "limit", Type: "u", Direction: "in"},
					{Name: "generation", Type: "t", Direction: "out"},
					{Name: "total", Type: "u", Direction: "out"},
					{Name: "drift", Type: drift, Direction: "out"},
				}
			}
		}
	}
}

// callerUID asks the bus for the uid of a sender.
func (ss *session) callerUID(sender dbus.Sender) (uint32, error) {
	var uid uint32
	err := ss.conn.BusObject().Call("org.freedesktop.DBus.GetConnectionUnixUser", 0, string(sender)).Store(&uid)
	return uid, err
}

func (ss *session) requireRoot(sender dbus.Sender) *dbus.Error {
	uid, err := ss.callerUID(sender)
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
	if e := m.ss.requireRoot(sender); e != nil {
		return false, 0, e
	}
	clean, n, err := m.ss.s.d.CheckNow(context.Background())
	if err != nil {
		return false, 0, dbus.NewError(ErrFailed, []any{err.Error()})
	}
	return clean, uint32(n), nil
}

// Reload re-reads the desired state.
func (m methods) Reload(sender dbus.Sender) *dbus.Error {
	if e := m.ss.requireRoot(sender); e != nil {
		return e
	}
	if err := m.ss.s.d.ReloadNow(context.Background()); err != nil {
		return dbus.NewError(ErrFailed, []any{err.Error()})
	}
	return nil
}

// GetDrift returns a page of the drift; see the package doc. Anyone may
// call it: it shows what the properties show, further.
func (m methods) GetDrift(offset, limit uint32) (uint64, uint32, []Drift, *dbus.Error) {
	if limit == 0 || limit > MaxPage {
		limit = MaxPage
	}
	ctx, cancel := context.WithTimeout(m.ss.s.ctx, callTimeout)
	defer cancel()
	gen, total, page, err := m.ss.s.d.DriftPage(ctx, int(offset), int(limit))
	if err != nil {
		return 0, 0, []Drift{}, dbus.NewError(ErrFailed, []any{err.Error()})
	}
	return gen, uint32(total), bound(page), nil
}

// MetricsSource is what GetMetrics needs of the daemon: its metrics in
// Prometheus' text exposition format (package metrics), or an error while
// nothing is known yet (the first check is running).
type MetricsSource interface {
	MetricsText(ctx context.Context) ([]byte, error)
}

// GetMetrics returns the daemon's Prometheus metrics, for the
// socket-activated endpoint (drift-monitor metrics-http) that serves them
// so that the daemon itself needs no network. Anyone may call it: the
// metrics say no more than the properties do.
func (m methods) GetMetrics() (string, *dbus.Error) {
	src, ok := m.ss.s.d.(MetricsSource)
	if !ok {
		return "", dbus.NewError(ErrFailed, []any{"this daemon has no metrics"})
	}
	ctx, cancel := context.WithTimeout(m.ss.s.ctx, callTimeout)
	defer cancel()
	b, err := src.MetricsText(ctx)
	if err != nil {
		return "", dbus.NewError(ErrFailed, []any{err.Error()})
	}
	return string(b), nil
}

// Inhibit takes an inhibitor for the caller and replies with the descriptor
// that holds it. The reply is sent here (see the package doc); what this
// method returns is discarded.
func (m methods) Inhibit(sender dbus.Sender, msg dbus.Message, who, why string) (dbus.UnixFD, *dbus.Error) {
	ss := m.ss
	key := callKey{string(sender), msg.Serial()}
	ss.mu.Lock()
	wantsReply, intercepted := ss.selfReply[key]
	delete(ss.selfReply, key)
	ss.mu.Unlock()
	if !intercepted {
		return -1, dbus.NewError(ErrFailed, []any{"internal error: Inhibit was not intercepted"})
	}
	fail := func(name, text string) (dbus.UnixFD, *dbus.Error) {
		if wantsReply {
			ss.sendError(key, name, text)
		}
		return -1, nil
	}
	uid, err := ss.callerUID(sender)
	if err != nil {
		return fail(ErrFailed, fmt.Sprintf("cannot identify the caller: %v", err))
	}
	if uid != 0 {
		return fail(ErrAccessDenied, "only root may take an inhibitor")
	}
	var pid uint32
	if err := ss.conn.BusObject().Call("org.freedesktop.DBus.GetConnectionUnixProcessID", 0, string(sender)).Store(&pid); err != nil {
		return fail(ErrFailed, fmt.Sprintf("cannot identify the caller's process: %v", err))
	}
	lock, err := inhibit.Take(ss.s.o.InhibitDir, who, why, int(pid))
	if err != nil {
		return fail(ErrFailed, err.Error())
	}
	if !wantsReply {
		lock.Release() // nobody would receive the descriptor
		return -1, nil
	}
	if err := ss.sendReply(key, dbus.UnixFD(lock.File().Fd())); err != nil {
		lock.Release()
		return -1, nil
	}
	// The reply is written: the caller's copy holds the lock from now on.
	lock.CloseKeepingFile()
	return -1, nil
}

func (ss *session) sendReply(k callKey, values ...any) error {
	reply := &dbus.Message{Type: dbus.TypeMethodReply, Headers: map[dbus.HeaderField]dbus.Variant{
		dbus.FieldDestination: dbus.MakeVariant(k.sender),
		dbus.FieldReplySerial: dbus.MakeVariant(k.serial),
		dbus.FieldSignature:   dbus.MakeVariant(dbus.SignatureOf(values...)),
	}, Body: values}
	call := ss.conn.Send(reply, nil)
	<-call.Done
	return call.Err
}

func (ss *session) sendError(k callKey, name, text string) {
	e := &dbus.Message{Type: dbus.TypeError, Headers: map[dbus.HeaderField]dbus.Variant{
		dbus.FieldDestination: dbus.MakeVariant(k.sender),
		dbus.FieldReplySerial: dbus.MakeVariant(k.serial),
		dbus.FieldErrorName:   dbus.MakeVariant(name),
		dbus.FieldSignature:   dbus.MakeVariant(dbus.SignatureOf(text)),
	}, Body: []any{text}}
	ss.conn.Send(e, nil)
}
