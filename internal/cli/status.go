package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/drift-monitor/drift-monitor/internal/dbusapi"
	"github.com/drift-monitor/drift-monitor/internal/escape"
)

// statusFormat is status's --format: text, json, or summary (the one line
// a probe reads).
type statusFormat string

func (f *statusFormat) String() string { return string(*f) }
func (f *statusFormat) Set(v string) error {
	if v != "text" && v != "json" && v != "summary" {
		return fmt.Errorf("must be text, json or summary")
	}
	*f = statusFormat(v)
	return nil
}

func runStatus(ctx context.Context, args []string, std Stdio) int {
	fs := newFlags("status", std.Err)
	format := statusFormat("text")
	fs.Var(&format, "format", "output `FORMAT`: text, json, or summary (one line)")
	timeout := fs.Duration("timeout", 25*time.Second, "give up on a daemon that does not answer within `D` (exit 3)")
	fs.Usage = func() {
		fmt.Fprintf(std.Err, "usage: drift-monitor status [--format text|json|summary] [--timeout D]\n\n"+
			"Asks the running daemon over D-Bus. Exit status: 0 clean, 1 drifted,\n"+
			"3 the daemon is not running, not reachable or did not answer in time,\n"+
			"4 its first check has not finished, or a declared file is still being\n"+
			"verified (checking). The first line of the text output is a summary;\n"+
			"--format summary prints only a summary line.\n\n")
		fs.PrintDefaults()
	}
	if code, ok := parse(fs, args); !ok {
		return code
	}
	if *timeout <= 0 {
		fmt.Fprintf(std.Err, "drift-monitor status: --timeout must be positive\n")
		return ExitFailed
	}
	// One deadline for the whole exchange: a probe such as
	// node-problem-detector kills the command at its own timeout, and a
	// killed command prints nothing useful.
	rctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	// The text format lists the drift the properties hold; json all of it.
	st, err := dbusapi.ReadStatus(rctx, dbusapi.ReadOptions{All: format == "json", CallTimeout: *timeout})
	if err != nil {
		return reportNoDaemon(std, format, err, *timeout)
	}
	if st.Warning != "" {
		fmt.Fprintf(std.Err, "drift-monitor status: %s\n", escape.Text(st.Warning))
	}
	if err := writeStatus(std.Out, format, st); err != nil {
		fmt.Fprintf(std.Err, "drift-monitor status: %v\n", err)
		return ExitFailed
	}
	return statusExit(st)
}

// reportNoDaemon says, on std.Err and in format on std.Out, that the daemon
// did not answer (err); it returns ExitNoDaemon.
func reportNoDaemon(std Stdio, format statusFormat, err error, timeout time.Duration) int {
	if errors.Is(err, context.DeadlineExceeded) {
		// The words that matter first: a probe keeps 80 bytes.
		err = fmt.Errorf("drift-monitor did not answer on the system bus within %s", timeout)
	}
	msg := escape.Text(err.Error())
	fmt.Fprintf(std.Err, "drift-monitor status: %s\n", msg)
	// Node-problem-detector and friends read stdout.
	switch format {
	case "json":
		err = writeStatusJSON(std.Out, &statusReport{State: dbusapi.StateUnknown, Status: msg, Drift: []statusDrift{}, Inhibitors: []statusInhibitor{}})
	case "summary":
		_, err = fmt.Fprintf(std.Out, "Unknown: %s\n", msg)
	default:
		_, err = fmt.Fprintf(std.Out, "drift-monitor %s: %s\n", dbusapi.StateUnknown, msg)
	}
	if err != nil {
		fmt.Fprintf(std.Err, "drift-monitor status: %v\n", err)
	}
	return ExitNoDaemon
}

// writeStatus writes the daemon's status st to w in format.
func writeStatus(w io.Writer, format statusFormat, st *dbusapi.Status) error {
	switch {
	case format == "json":
		return writeStatusJSON(w, newStatusReport(st))
	case format == "summary":
		_, err := fmt.Fprintln(w, statusSummary(st))
		return err
	case st.State == dbusapi.StateStarting || st.State == dbusapi.StateChecking:
		// Not everything is known yet: no list that could be read as
		// clean.
		_, err := fmt.Fprintf(w, "drift-monitor %s: %s\n", st.State, escape.Text(st.StatusText))
		return err
	default:
		return writeStatusText(w, newStatusReport(st))
	}
}

// statusExit is the exit status for what the daemon said: 0 clean, 1 drift
// known (or no desired state: none loaded, or no config file at all), 4
// starting or checking (an entry not judged yet) — the contract of
// node-problem-detector's custom plugins (0 OK, 1 problem, anything else
// unknown; its pkg/custompluginmonitor/plugin/plugin.go).
func statusExit(st *dbusapi.Status) int {
	switch {
	case st.State == dbusapi.StateStarting || st.State == dbusapi.StateChecking:
		return ExitStarting
	case st.DriftCount > 0 || len(st.Drift) > 0 || st.State == dbusapi.StateError || st.State == dbusapi.StateUnconfigured:
		return ExitDrift
	}
	return ExitClean
}

// statusSummary is the one line --format summary prints. Its first words
// say what the exit status says, because node-problem-detector keeps only
// the first 80 bytes of stdout (max_output_length) as the condition's
// message: "Drift: …", "No drift: …", "Inhibited …", "Starting: …",
// "Checking: …", "Error: …", "Nothing to watch: …" (and "Unknown: …" when
// the daemon cannot be asked). The
// daemon's status line already puts the verdict first; what it cannot know
// is added in front.
func statusSummary(st *dbusapi.Status) string {
	text := escape.Text(st.StatusText)
	switch {
	case st.State == dbusapi.StateStarting:
		if !strings.HasPrefix(text, "Starting") {
			text = strings.TrimSuffix("Starting: first full check not finished; "+text, "; ")
		}
	case st.State == dbusapi.StateChecking:
		if !strings.HasPrefix(text, "Checking") {
			text = strings.TrimSuffix("Checking: not every entry judged yet; "+text, "; ")
		}
	case st.State == dbusapi.StateError:
		text = "Error: no desired state could be loaded; " + text
	case st.State == dbusapi.StateUnconfigured:
		if !strings.HasPrefix(text, "Nothing to watch") {
			text = "Nothing to watch: no desired configuration; " + text
		}
	case statusExit(st) == ExitDrift && !strings.HasPrefix(text, "Drift"):
		// Inhibited: the drift known before the inhibitor was taken.
		text = fmt.Sprintf("Drift: %s known; %s", count(int(st.DriftCount), "difference", "differences"), text)
	}
	if text == "" {
		text = "State: " + escape.Name(st.State)
	}
	return text
}

// statusReport is what `drift-monitor status --format json` prints.
type statusReport struct {
	State  string `json:"state"`
	Status string `json:"status"`
	// DriftCount is how many drifts the daemon knows; Drift lists them
	// all, unless DriftTruncated (see dbusapi.ReadStatus).
	DriftCount     uint32            `json:"drift_count"`
	DriftTruncated bool              `json:"drift_truncated"`
	Drift          []statusDrift     `json:"drift"`
	Inhibitors     []statusInhibitor `json:"inhibitors"`
	LastCheck      *time.Time        `json:"last_check"`
	WatchedPaths   uint32            `json:"watched_paths"`
	Units          uint32            `json:"units"`
	Version        string            `json:"version"`
}

type statusDrift struct {
	Kind    string `json:"kind"`
	Entry   string `json:"entry"`
	Path    string `json:"path"`
	Unit    string `json:"unit,omitempty"`
	Message string `json:"message"`
	// Writers are who wrote it, newest first (daemon
	// --attribution=audit); WriterUnknown says why none is known.
	Writers       []statusWriter `json:"writers,omitempty"`
	WriterUnknown string         `json:"writer_unknown,omitempty"`
}

// statusWriter is one writer of a drift: the journal's DRIFT_WRITER_*
// fields (dbusapi.Writer), those not known left out.
type statusWriter struct {
	LoginUser   string  `json:"login_user,omitempty"`
	AUID        *uint32 `json:"auid,omitempty"`
	Session     *uint32 `json:"session,omitempty"`
	UID         uint32  `json:"uid"`
	PID         uint32  `json:"pid"`
	Comm        string  `json:"comm,omitempty"`
	Exe         string  `json:"exe,omitempty"`
	Syscall     string  `json:"syscall,omitempty"`
	RemoteHost  string  `json:"remote_host,omitempty"`
	SessionUser string  `json:"session_user,omitempty"`
	Unit        string  `json:"unit,omitempty"`
	Own         bool    `json:"own,omitempty"`
}

type statusInhibitor struct {
	Who string `json:"who"`
	Why string `json:"why"`
	PID uint32 `json:"pid,omitempty"`
}

func newStatusReport(st *dbusapi.Status) *statusReport {
	rep := &statusReport{State: st.State, Status: st.StatusText, DriftCount: st.DriftCount, DriftTruncated: st.Truncated,
		Drift: []statusDrift{}, Inhibitors: []statusInhibitor{}, WatchedPaths: st.WatchedPaths, Units: st.Units, Version: st.Version}
	if !st.LastCheck.IsZero() {
		t := st.LastCheck
		rep.LastCheck = &t
	}
	for _, d := range st.Drift {
		sd := statusDrift{Kind: d.Kind, Entry: d.Entry, Path: d.Path, Unit: d.Unit, Message: d.Message, WriterUnknown: d.WriterUnknown}
		for _, w := range d.Writers {
			sd.Writers = append(sd.Writers, statusWriter(w))
		}
		rep.Drift = append(rep.Drift, sd)
	}
	for _, i := range st.Inhibitors {
		rep.Inhibitors = append(rep.Inhibitors, statusInhibitor(i))
	}
	return rep
}

func writeStatusJSON(w io.Writer, rep *statusReport) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(rep)
}

func writeStatusText(w io.Writer, r *statusReport) error {
	ew := &errWriter{w: w}
	ew.printf("drift-monitor %s: %s\n", escape.Name(r.State), escape.Text(r.Status))
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
