package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/drift-monitor/drift-monitor/internal/dbusapi"
	"github.com/drift-monitor/drift-monitor/internal/drift"
	"github.com/godbus/dbus/v5"
)

// statusReport is what `drift-monitor status --format json` prints.
type statusReport struct {
	State        string            `json:"state"`
	Status       string            `json:"status"`
	Drift        []statusDrift     `json:"drift"`
	Inhibitors   []statusInhibitor `json:"inhibitors"`
	LastCheck    *time.Time        `json:"last_check"`
	WatchedPaths uint32            `json:"watched_paths"`
	Units        uint32            `json:"units"`
	Version      string            `json:"version"`
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

func runStatus(ctx context.Context, args []string, std Stdio) int {
	fs := newFlags("status", std.Err)
	format := formatFlag("text")
	fs.Var(&format, "format", "output `FORMAT`: text or json")
	fs.Usage = func() {
		fmt.Fprintf(std.Err, "usage: drift-monitor status [--format text|json]\n\n"+
			"Asks the running daemon over D-Bus. Exit status: 0 clean, 1 drifted,\n"+
			"3 the daemon is not running or not reachable.\n\n")
		fs.PrintDefaults()
	}
	if code, ok := parse(fs, args); !ok {
		return code
	}
	rep, err := readStatus(ctx)
	if err != nil {
		fmt.Fprintf(std.Err, "drift-monitor status: %s\n", drift.EscapeControl(err.Error()))
		return ExitNoDaemon
	}
	if format == "json" {
		enc := json.NewEncoder(std.Out)
		enc.SetIndent("", "  ")
		err = enc.Encode(rep)
	} else {
		err = writeStatusText(std.Out, rep)
	}
	if err != nil {
		fmt.Fprintf(std.Err, "drift-monitor status: %v\n", err)
		return ExitFailed
	}
	if len(rep.Drift) > 0 || rep.State == "error" {
		return ExitDrift
	}
	return ExitClean
}

func readStatus(ctx context.Context) (*statusReport, error) {
	conn, err := dbus.ConnectSystemBus(dbus.WithContext(ctx))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", dbusapi.ErrUnreachable, err)
	}
	defer conn.Close()
	var owned bool
	if err := conn.BusObject().CallWithContext(ctx, "org.freedesktop.DBus.NameHasOwner", 0, dbusapi.BusName).Store(&owned); err != nil {
		return nil, fmt.Errorf("%w: %v", dbusapi.ErrUnreachable, err)
	}
	if !owned {
		return nil, fmt.Errorf("%w: nobody owns %s", dbusapi.ErrUnreachable, dbusapi.BusName)
	}
	var props map[string]dbus.Variant
	obj := conn.Object(dbusapi.BusName, dbusapi.Path)
	if err := obj.CallWithContext(ctx, "org.freedesktop.DBus.Properties.GetAll", 0, dbusapi.Interface).Store(&props); err != nil {
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

func writeStatusText(w io.Writer, r *statusReport) error {
	ew := &errWriter{w: w}
	ew.printf("drift-monitor %s: %s\n", drift.Escape(r.State), drift.Escape(r.Status))
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
			ew.printf("  %s%s: %s\n", drift.Escape(i.Who), pid, drift.Escape(i.Why))
		}
	}
	if len(r.Drift) == 0 {
		ew.printf("Drift:      none\n")
	} else {
		ew.printf("Drift:\n")
		for _, d := range r.Drift {
			ew.printf("  %-10s %s\n", d.Kind, drift.EscapeControl(d.Message))
		}
	}
	return ew.err
}
