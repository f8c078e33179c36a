package dbusapi

import (
	"context"

	"github.com/godbus/dbus/v5"
)

// Writer is one writer of a drift (daemon --attribution=audit): the fields
// of the journal's DRIFT_WRITER_*, as GetDriftEx gives them in a{sv} under
// the key in each field's comment. A key is left out when its value is not
// known ("" or nil here); names are escaped (internal/escape).
type Writer struct {
	LoginUser string  // login_user s: the login uid's name (passwd, or the login session's user)
	AUID      *uint32 // auid u: the login uid (nil: no login started the writer)
	Session   *uint32 // session u: the audit session (nil: none)
	UID       uint32  // uid u
	PID       uint32  // pid u
	Comm      string  // comm s: the command's name
	Exe       string  // exe s: its executable
	Syscall   string  // syscall s: the system call that wrote ("syscall N" when it has no name)
	// RemoteHost and SessionUser are what logind says of the session,
	// Unit the writer's systemd unit while it still ran.
	RemoteHost  string // remote_host s
	SessionUser string // session_user s
	Unit        string // unit s
	Own         bool   // own b: drift-monitor's own write (a reconcile); left out when false
}

// DriftEx is one drift with what is known of it beyond Drift's (sssss):
// GetDriftEx carries it as (sssssa{sv}), the last member holding
// "writers" (aa{sv}: Writers, newest first) and "writer_unknown" (s: why no
// writer is known), each left out when empty. Keys may be added; a client
// skips those it does not know.
type DriftEx struct {
	Kind, Entry, Path, Unit, Message string
	Writers                          []Writer
	WriterUnknown                    string
}

// Drift is d without what is beyond (sssss).
func (d DriftEx) Drift() Drift {
	return Drift{Kind: d.Kind, Entry: d.Entry, Path: d.Path, Unit: d.Unit, Message: d.Message}
}

// exOf is ds with nothing known beyond (sssss).
func exOf(ds []Drift) []DriftEx {
	out := make([]DriftEx, len(ds))
	for i, d := range ds {
		out[i] = DriftEx{Kind: d.Kind, Entry: d.Entry, Path: d.Path, Unit: d.Unit, Message: d.Message}
	}
	return out
}

// DriftExSource is what GetDriftEx needs of the daemon: GetDrift's page
// with what is known beyond (sssss). From a daemon without it, GetDriftEx
// gives GetDrift's page with nothing beyond.
type DriftExSource interface {
	DriftPageEx(ctx context.Context, offset, limit int) (generation uint64, total int, page []DriftEx, err error)
}

// driftExWire is a DriftEx as the bus carries it: (sssssa{sv}).
type driftExWire struct {
	Kind, Entry, Path, Unit, Message string
	Details                          map[string]dbus.Variant
}

// wire is d for the bus, every string made fit for it.
func (d DriftEx) wire() driftExWire {
	w := driftExWire{busString(d.Kind), busString(d.Entry), busString(d.Path), busString(d.Unit), busString(d.Message),
		map[string]dbus.Variant{}}
	if len(d.Writers) > 0 {
		ws := make([]map[string]dbus.Variant, len(d.Writers))
		for i, x := range d.Writers {
			ws[i] = x.wire()
		}
		w.Details["writers"] = dbus.MakeVariant(ws)
	}
	if d.WriterUnknown != "" {
		w.Details["writer_unknown"] = dbus.MakeVariant(busString(d.WriterUnknown))
	}
	return w
}

// size is what w costs on the bus, near enough for MaxBytes.
func (w driftExWire) size() int {
	n := len(w.Kind) + len(w.Entry) + len(w.Path) + len(w.Unit) + len(w.Message) + 6*8
	for k, v := range w.Details {
		n += len(k) + 16
		switch x := v.Value().(type) {
		case string:
			n += len(x)
		case []map[string]dbus.Variant:
			for _, m := range x {
				for k, v := range m {
					n += len(k) + 16
					if s, ok := v.Value().(string); ok {
						n += len(s)
					}
				}
			}
		}
	}
	return n
}

func (x Writer) wire() map[string]dbus.Variant {
	m := map[string]dbus.Variant{"uid": dbus.MakeVariant(x.UID), "pid": dbus.MakeVariant(x.PID)}
	for k, v := range map[string]string{"login_user": x.LoginUser, "comm": x.Comm, "exe": x.Exe, "syscall": x.Syscall,
		"remote_host": x.RemoteHost, "session_user": x.SessionUser, "unit": x.Unit} {
		if v != "" {
			m[k] = dbus.MakeVariant(busString(v))
		}
	}
	if x.AUID != nil {
		m["auid"] = dbus.MakeVariant(*x.AUID)
	}
	if x.Session != nil {
		m["session"] = dbus.MakeVariant(*x.Session)
	}
	if x.Own {
		m["own"] = dbus.MakeVariant(true)
	}
	return m
}

// driftEx reads a DriftEx off the bus: keys it does not know, or of
// another type, are skipped.
func (w driftExWire) driftEx() DriftEx {
	d := DriftEx{Kind: w.Kind, Entry: w.Entry, Path: w.Path, Unit: w.Unit, Message: w.Message}
	if v, ok := w.Details["writer_unknown"]; ok {
		d.WriterUnknown, _ = v.Value().(string)
	}
	if v, ok := w.Details["writers"]; ok {
		var ms []map[string]dbus.Variant
		if v.Store(&ms) == nil {
			for _, m := range ms {
				d.Writers = append(d.Writers, writerOf(m))
			}
		}
	}
	return d
}

func writerOf(m map[string]dbus.Variant) Writer {
	var x Writer
	str := func(k string, into *string) {
		if v, ok := m[k]; ok {
			*into, _ = v.Value().(string)
		}
	}
	u32 := func(k string) (uint32, bool) {
		v, ok := m[k]
		if !ok {
			return 0, false
		}
		n, ok := v.Value().(uint32)
		return n, ok
	}
	str("login_user", &x.LoginUser)
	str("comm", &x.Comm)
	str("exe", &x.Exe)
	str("syscall", &x.Syscall)
	str("remote_host", &x.RemoteHost)
	str("session_user", &x.SessionUser)
	str("unit", &x.Unit)
	x.UID, _ = u32("uid")
	x.PID, _ = u32("pid")
	if n, ok := u32("auid"); ok {
		x.AUID = &n
	}
	if n, ok := u32("session"); ok {
		x.Session = &n
	}
	if v, ok := m["own"]; ok {
		x.Own, _ = v.Value().(bool)
	}
	return x
}

// boundEx is bound for GetDriftEx's page.
func boundEx(ds []DriftEx) []driftExWire {
	out := make([]driftExWire, 0, len(ds))
	size := 0
	for _, d := range ds {
		w := d.wire()
		size += w.size()
		if size > MaxBytes && len(out) > 0 {
			break
		}
		out = append(out, w)
	}
	return out
}

// GetDriftEx is GetDrift with what is known of each drift beyond (sssss)
// (DriftEx): its writers. Anyone may call it: the writers are in the
// messages GetDrift gives too.
func (m methods) GetDriftEx(offset, limit uint32) (uint64, uint32, []driftExWire, *dbus.Error) {
	if limit == 0 || limit > MaxPage {
		limit = MaxPage
	}
	ctx, cancel := context.WithTimeout(m.ss.s.ctx, callTimeout)
	defer cancel()
	src, ok := m.ss.s.d.(DriftExSource)
	if !ok {
		src = plainDrift{m.ss.s.d}
	}
	gen, total, page, err := src.DriftPageEx(ctx, int(offset), int(limit))
	if err != nil {
		return 0, 0, []driftExWire{}, dbus.NewError(ErrFailed, []any{err.Error()})
	}
	return gen, uint32(total), boundEx(page), nil
}

// plainDrift serves DriftPageEx from DriftPage, with nothing beyond.
type plainDrift struct{ d Daemon }

func (p plainDrift) DriftPageEx(ctx context.Context, offset, limit int) (uint64, int, []DriftEx, error) {
	gen, total, page, err := p.d.DriftPage(ctx, offset, limit)
	return gen, total, exOf(page), err
}
