package dbusapi

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/godbus/dbus/v5"
)

// The names the State property takes: the daemon publishes them, and `drift-monitor
// status` maps them to its exit status. StateUnknown is never published: it
// is what a client reports when the daemon cannot be asked.
const (
	StateStarting  = "starting"  // the first full check has not finished
	StateClean     = "clean"     // no drift known
	StateDrifted   = "drifted"   // drift known (DriftCount > 0)
	StateInhibited = "inhibited" // an inhibitor is held; the drift listed is what was known before
	StateError     = "error"     // no desired state could be loaded
	StateChecking  = "checking"  // no drift known, but not every entry judged yet (a large file being read): not clean
	// StateUnconfigured: no config file at all: nothing is declared, so
	// nothing is watched; not clean.
	StateUnconfigured = "unconfigured"
	StateUnknown      = "unknown" // (client side) the daemon did not answer
)

// States are the names the State property takes, StateUnknown apart: what
// whoever shows every state (the metrics) lists. TestStatesListed fails on
// a State constant missing from it.
var States = []string{StateStarting, StateClean, StateDrifted, StateInhibited, StateError, StateChecking, StateUnconfigured}

// Status is what a client reads of the daemon: its properties, and with
// ReadOptions.All every drift (paged through with GetDrift).
type Status struct {
	State      string
	StatusText string
	// DriftCount is how many drifts the daemon knows; Drift lists the
	// first of them (all, when ReadOptions.All and not Truncated), with
	// their writers when ReadOptions.All (GetDriftEx).
	DriftCount   uint32
	Drift        []DriftEx
	Truncated    bool
	Inhibitors   []Inhibitor
	LastCheck    time.Time // zero: none yet
	WatchedPaths uint32
	Units        uint32
	Version      string
	// Warning says why the drift is truncated (for stderr).
	Warning string
}

// ReadOptions configure ReadStatus.
type ReadOptions struct {
	// Address is the bus's address; "" is the system bus.
	Address string
	// All pages through every drift, with its writers (GetDriftEx; from a
	// daemon without it, GetDrift when the properties hold only the first
	// MaxDrift).
	All bool
	// CallTimeout bounds each call to the daemon (0: 25s, D-Bus's
	// customary method-call timeout). A daemon in the middle of a long
	// full check answers GetDrift once it is done.
	CallTimeout time.Duration
}

// ReadStatus reads the daemon's properties and, with All, pages through
// the rest of the drift (see the package doc). A set that keeps changing
// while it is paged through, or a daemon without GetDrift, leaves Status
// with what the properties hold, Truncated and a Warning.
//
// The error wraps ErrUnreachable when nobody owns BusName or the daemon does
// not answer (ctx's deadline included: see errors.Is(err,
// context.DeadlineExceeded)); it is never nil with a nil Status.
func ReadStatus(ctx context.Context, o ReadOptions) (*Status, error) {
	if o.CallTimeout <= 0 {
		o.CallTimeout = 25 * time.Second
	}
	conn, err := dialBus(ctx, o.Address)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnreachable, err)
	}
	defer conn.Close()
	call := func(obj dbus.BusObject, method string, args ...any) *dbus.Call {
		cctx, cancel := context.WithTimeout(ctx, o.CallTimeout)
		defer cancel()
		return obj.CallWithContext(cctx, method, 0, args...)
	}
	var owned bool
	if err := call(conn.BusObject(), "org.freedesktop.DBus.NameHasOwner", BusName).Store(&owned); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnreachable, err)
	}
	if !owned {
		return nil, fmt.Errorf("%w: nobody owns %s", ErrUnreachable, BusName)
	}
	var props map[string]dbus.Variant
	obj := conn.Object(BusName, Path)
	if err := call(obj, "org.freedesktop.DBus.Properties.GetAll", Interface).Store(&props); err != nil {
		return nil, fmt.Errorf("%w: reading its properties: %w", ErrUnreachable, err)
	}
	st := &Status{}
	get := func(name string, into any) {
		if v, ok := props[name]; ok {
			_ = v.Store(into) // a property of another type is left at its zero value
		}
	}
	get("State", &st.State)
	get("StatusText", &st.StatusText)
	get("WatchedPaths", &st.WatchedPaths)
	get("Units", &st.Units)
	get("Version", &st.Version)
	var last uint64
	get("LastCheck", &last)
	if last > 0 {
		st.LastCheck = time.UnixMicro(int64(last)).UTC()
	}
	var head []Drift
	get("Drift", &head)
	if len(head) > 0 {
		st.Drift = exOf(head)
	}
	if _, ok := props["DriftCount"]; ok {
		get("DriftCount", &st.DriftCount)
	} else {
		st.DriftCount = uint32(len(st.Drift)) // a daemon from before DriftCount
	}
	if o.All && st.DriftCount > 0 {
		readAllDrift(st, func(method string, offset uint32, into ...any) error {
			return call(obj, Interface+"."+method, offset, uint32(0)).Store(into...)
		})
	}
	st.Truncated = o.All && len(st.Drift) < int(st.DriftCount)
	get("Inhibitors", &st.Inhibitors)
	return st, nil
}

// readAllDrift pages through every drift with GetDriftEx, or, from a
// daemon without it, with GetDrift when the properties hold only the first
// MaxDrift (call calls a paging method at an offset and stores its reply).
func readAllDrift(st *Status, call func(method string, offset uint32, into ...any) error) {
	paged, err := pageDrift(func(offset uint32) (gen uint64, total uint32, page []DriftEx, err error) {
		var wire []driftExWire
		err = call("GetDriftEx", offset, &gen, &total, &wire)
		for _, w := range wire {
			page = append(page, w.driftEx())
		}
		return gen, total, page, err
	})
	if errorName(err) == "org.freedesktop.DBus.Error.UnknownMethod" {
		if int(st.DriftCount) <= len(st.Drift) {
			return
		}
		paged, err = pageDrift(func(offset uint32) (gen uint64, total uint32, page []DriftEx, err error) {
			var plain []Drift
			err = call("GetDrift", offset, &gen, &total, &plain)
			return gen, total, exOf(plain), err
		})
	}
	switch {
	case err != nil && int(st.DriftCount) > len(st.Drift):
		st.Warning = fmt.Sprintf("listing only the first %d of %d drifts: %v", len(st.Drift), st.DriftCount, err)
	case err != nil:
		st.Warning = fmt.Sprintf("listing the drift without its writers: %v", err)
	default:
		st.Drift, st.DriftCount = paged, uint32(len(paged))
	}
}

// errDriftChanging: the drift set changed between every two pages.
var errDriftChanging = errors.New("the drift changed while it was read")

// pageDrift reads every page from get (a paging method at an offset): all
// of one generation of the set, starting over when the generation
// changes, a few times at most.
func pageDrift[T any](get func(offset uint32) (gen uint64, total uint32, page []T, err error)) ([]T, error) {
	for range 3 {
		var all []T
		var first uint64
		for {
			gen, total, page, err := get(uint32(len(all)))
			if err != nil {
				return nil, err
			}
			if len(all) == 0 {
				first = gen
			} else if gen != first {
				break // changed under us: again, from the start
			}
			all = append(all, page...)
			if len(all) >= int(total) || len(page) == 0 {
				return all, nil
			}
		}
	}
	return nil, errDriftChanging
}
