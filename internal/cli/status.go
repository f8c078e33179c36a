package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/drift-monitor/drift-monitor/internal/dbusapi"
	"github.com/drift-monitor/drift-monitor/internal/escape"
	"github.com/godbus/dbus/v5"
)

// statusReport is what `drift-monitor status --format json` prints.
type statusReport struct {
	State  string `json:"state"`
	Status string `json:"status"`
	// DriftCount is how many drifts the daemon knows; Drift lists them
	// all, unless DriftTruncated (see readStatus).
	DriftCount     uint32            `json:"drift_count"`
	DriftTruncated bool              `json:"drift_truncated"`
	Drift          []statusDrift     `json:"drift"`
	Inhibitors     []statusInhibitor `json:"inhibitors"`
	LastCheck      *time.Time        `json:"last_check"`
	WatchedPaths   uint32            `json:"watched_paths"`
	Units          uint32            `json:"units"`
	Version        string            `json:"version"`
	// warning says why the drift is truncated, for stderr.
	warning string
}

type statusDrift struct {
	Kind    string `json:"kind"`
	Entry   string `json:"entry"`
	Path    string `json:"path"`
	Unit    string `json:"unit,omitempty"`
	Message string `json:"message"`
}

type statusInhibitor struct {
	Who string `json:"who"`
	Why string `json:"why"`
	PID uint32 `json:"pid,omitempty"`
}

// statusCallTimeout bounds each call to the daemon: D-Bus's customary
// method-call timeout. A daemon in the middle of a long full check answers
// GetDrift once it is done.
const statusCallTimeout = 25 * time.Second

func runStatus(ctx context.Context, args []string, std Stdio) int {
	fs := newFlags("status", std.Err)
	format := formatFlag("text")
	fs.Var(&format, "format", "output `FORMAT`: text or json")
	fs.Usage = func() {
		fmt.Fprintf(std.Err, "usage: drift-monitor status [--format text|json]\n\n"+
			"Asks the running daemon over D-Bus. Exit status: 0 clean, 1 drifted,\n"+
			"3 the daemon is not running or not reachable, 4 its first check has\n"+
			"not finished. The first line of the text output is a summary.\n\n")
		fs.PrintDefaults()
	}
	if code, ok := parse(fs, args); !ok {
		return code
	}
	// The text format lists the drift the properties hold; json all of it.
	rep, err := readStatus(ctx, format == "json")
	if err != nil {
		msg := escape.Text(err.Error())
		fmt.Fprintf(std.Err, "drift-monitor status: %s\n", msg)
		// Node-problem-detector and friends read the first line of stdout.
		if format == "json" {
			err = writeStatusJSON(std.Out, &statusReport{State: "unknown", Status: msg, Drift: []statusDrift{}, Inhibitors: []statusInhibitor{}})
		} else {
			_, err = fmt.Fprintf(std.Out, "drift-monitor unknown: %s\n", msg)
		}
		if err != nil {
			fmt.Fprintf(std.Err, "drift-monitor status: %v\n", err)
		}
		return ExitNoDaemon
	}
	if rep.warning != "" {
		fmt.Fprintf(std.Err, "drift-monitor status: %s\n", escape.Text(rep.warning))
	}
	switch {
	case format == "json":
		err = writeStatusJSON(std.Out, rep)
	case rep.State == "starting":
		// Nothing is known yet: no list that could be read as clean.
		_, err = fmt.Fprintf(std.Out, "drift-monitor starting: %s\n", escape.Name(rep.Status))
	default:
		err = writeStatusText(std.Out, rep)
	}
	if err != nil {
		fmt.Fprintf(std.Err, "drift-monitor status: %v\n", err)
		return ExitFailed
	}
	switch {
	case rep.State == "starting":
		return ExitStarting
	case rep.DriftCount > 0 || len(rep.Drift) > 0 || rep.State == "error":
		return ExitDrift
	}
	return ExitClean
}

func writeStatusJSON(w io.Writer, rep *statusReport) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(rep)
}

// readStatus reads the daemon's properties and, when all is set and the
// properties hold only the first of the drift, pages through the rest with
// GetDrift (see package dbusapi). A set that keeps changing while it is
// paged through, or a daemon without GetDrift, leaves the report with what
// the properties hold and DriftTruncated.
func readStatus(ctx context.Context, all bool) (*statusReport, error) {
	conn, err := dbus.ConnectSystemBus(dbus.WithContext(ctx))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", dbusapi.ErrUnreachable, err)
	}
	defer conn.Close()
	call := func(obj dbus.BusObject, method string, args ...any) *dbus.Call {
		cctx, cancel := context.WithTimeout(ctx, statusCallTimeout)
		defer cancel()
		return obj.CallWithContext(cctx, method, 0, args...)
	}
	var owned bool
	if err := call(conn.BusObject(), "org.freedesktop.DBus.NameHasOwner", dbusapi.BusName).Store(&owned); err != nil {
		return nil, fmt.Errorf("%w: %v", dbusapi.ErrUnreachable, err)
	}
	if !owned {
		return nil, fmt.Errorf("%w: nobody owns %s", dbusapi.ErrUnreachable, dbusapi.BusName)
	}
	var props map[string]dbus.Variant
	obj := conn.Object(dbusapi.BusName, dbusapi.Path)
	if err := call(obj, "org.freedesktop.DBus.Properties.GetAll", dbusapi.Interface).Store(&props); err != nil {
		return nil, fmt.Errorf("%w: reading its properties: %v", dbusapi.ErrUnreachable, err)
	}
	rep := &statusReport{Drift: []statusDrift{}, Inhibitors: []statusInhibitor{}}
	get := func(name string, into any) {
		if v, ok := props[name]; ok {
			v.Store(into)
		}
	}
	get("State", &rep.State)
	get("StatusText", &rep.Status)
	get("WatchedPaths", &rep.WatchedPaths)
	get("Units", &rep.Units)
	get("Version", &rep.Version)
	var last uint64
	get("LastCheck", &last)
	if last > 0 {
		t := time.UnixMicro(int64(last)).UTC()
		rep.LastCheck = &t
	}
	var ds []dbusapi.Drift
	get("Drift", &ds)
	if _, ok := props["DriftCount"]; ok {
		get("DriftCount", &rep.DriftCount)
	} else {
		rep.DriftCount = uint32(len(ds)) // a daemon from before DriftCount
	}
	if all && int(rep.DriftCount) > len(ds) {
		paged, err := pageDrift(func(offset uint32) (uint64, uint32, []dbusapi.Drift, error) {
			var gen uint64
			var total uint32
			var page []dbusapi.Drift
			err := call(obj, dbusapi.Interface+".GetDrift", offset, uint32(0)).Store(&gen, &total, &page)
			return gen, total, page, err
		})
		if err == nil {
			ds, rep.DriftCount = paged, uint32(len(paged))
		} else {
			rep.warning = fmt.Sprintf("listing only the first %d of %d drifts: %v", len(ds), rep.DriftCount, err)
		}
	}
	rep.DriftTruncated = all && len(ds) < int(rep.DriftCount)
	for _, d := range ds {
		rep.Drift = append(rep.Drift, statusDrift(d))
	}
	var ins []dbusapi.Inhibitor
	get("Inhibitors", &ins)
	for _, i := range ins {
		rep.Inhibitors = append(rep.Inhibitors, statusInhibitor(i))
	}
	return rep, nil
}

// errDriftChanging: the drift set changed between every two pages.
var errDriftChanging = errors.New("the drift changed while it was read")

// pageDrift reads every page from get (GetDrift at an offset): all of one
// generation of the set, starting over when the generation changes, a few
// times at most.
func pageDrift(get func(offset uint32) (gen uint64, total uint32, page []dbusapi.Drift, err error)) ([]dbusapi.Drift, error) {
	for range 3 {
		var all []dbusapi.Drift
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

func writeStatusText(w io.Writer, r *statusReport) error {
	ew := &errWriter{w: w}
	ew.printf("drift-monitor %s: %s\n", escape.Name(r.State), escape.Name(r.Status))
	if r.LastCheck != nil {
		ew.printf("Last check: %s (%s ago)\n", r.LastCheck.Format(time.RFC3339), time.Since(*r.LastCheck).Round(time.Second))
	} else {
		ew.printf("Last check: none yet\n")
	}
	ew.printf("Watching:   %s, %s\n", count(int(r.WatchedPaths), "path", "paths"), count(int(r.Units), "unit", "units"))
	if len(r.Inhibitors) == 0 {
		ew.printf("Inhibitors: none\n")
	} else {
		ew.printf("Inhibitors:\n")
		for _, i := range r.Inhibitors {
			pid := ""
			if i.PID > 0 {
				pid = fmt.Sprintf(" (pid %d)", i.PID)
			}
			ew.printf("  %s%s: %s\n", escape.Name(i.Who), pid, escape.Name(i.Why))
		}
	}
	if len(r.Drift) == 0 && r.DriftCount == 0 {
		ew.printf("Drift:      none\n")
	} else {
		ew.printf("Drift:\n")
		for _, d := range r.Drift {
			ew.printf("  %-10s %s\n", d.Kind, escape.Text(d.Message))
		}
		if more := int(r.DriftCount) - len(r.Drift); more > 0 {
			ew.printf("  … and %d more (drift-monitor status --format json lists them all)\n", more)
		}
	}
	return ew.err
}
