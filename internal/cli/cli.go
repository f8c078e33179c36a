// Package cli implements drift-monitor's command line: it parses arguments,
// wires the internal packages together and maps outcomes to exit statuses.
// The exit statuses and the JSON output are contracts (DESIGN.md).
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
)

// Exit statuses of check and status.
const (
	ExitClean    = 0
	ExitDrift    = 1
	ExitFailed   = 2 // the check could not be done: bad config, unreadable root, bad usage
	ExitNoDaemon = 3 // status: the daemon is not running or unreachable
	ExitStarting = 4 // status: the daemon's first check has not finished, or an entry is not judged yet (checking)
)

// Exit statuses of daemon that a restart cannot change, from sysexits.h:
// the unit's RestartPreventExitStatus= names exactly these. Never 2 (nor 1):
// the Go runtime exits 2 after an unrecovered panic, a fatal runtime error
// (concurrent map writes, out of memory) and SIGABRT, which is systemd's
// WatchdogSignal=; a daemon that dies of those must be restarted.
const (
	ExitUsage  = 64 // EX_USAGE: a bad flag, a bad flag value, a stray argument
	ExitConfig = 78 // EX_CONFIG: the options ask for what this host cannot give (--on-drift without systemd)
)

// Stdio are the streams a command uses.
type Stdio struct {
	In  io.Reader
	Out io.Writer
	Err io.Writer
}

const usage = `usage:
  drift-monitor check   [--config PATH]... [--root DIR] [--format text|json]
  drift-monitor daemon  [--config PATH]... [daemon options]
  drift-monitor status  [--format text|json|summary] [--timeout DURATION]
  drift-monitor inhibit --who WHO --why WHY -- COMMAND [ARG]...
  drift-monitor adopt   [--root DIR] [--from PATH] [--to PATH]
  drift-monitor reconcile [--config PATH]... [--root DIR] [--dry-run] [--format text|json] [PATH|UNIT]...
  drift-monitor audit-rules [--config PATH]... [--root DIR]
  drift-monitor metrics-http                  (from drift-monitor-metrics.socket)

Run "drift-monitor COMMAND --help" for a command's options.
`

// Version is set at link time (see the Makefile).
var Version = "dev"

// Run runs one command line and returns its exit status.
func Run(ctx context.Context, args []string, std Stdio) int {
	if len(args) == 0 {
		fmt.Fprint(std.Err, usage)
		return ExitFailed
	}
	switch args[0] {
	case "check":
		return runCheck(ctx, args[1:], std)
	case "daemon":
		return runDaemon(ctx, args[1:], std)
	case "status":
		return runStatus(ctx, args[1:], std)
	case "inhibit":
		return runInhibit(ctx, args[1:], std)
	case "adopt":
		return runAdopt(ctx, args[1:], std)
	case "reconcile":
		return runReconcile(ctx, args[1:], std)
	case "audit-rules":
		return runAuditRules(ctx, args[1:], std)
	case "metrics-http":
		return runMetricsHTTP(ctx, args[1:], std)
	case "version", "--version":
		fmt.Fprintf(std.Out, "drift-monitor %s\n", Version)
		return 0
	case "help", "-h", "--help":
		fmt.Fprint(std.Out, usage)
		return 0
	}
	fmt.Fprintf(std.Err, "drift-monitor: unknown command %q\n%s", args[0], usage)
	return ExitFailed
}

// multiFlag is a repeatable string flag.
type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

// formatFlag is --format text|json.
type formatFlag string

func (f *formatFlag) String() string { return string(*f) }
func (f *formatFlag) Set(v string) error {
	if v != "text" && v != "json" {
		return fmt.Errorf("must be text or json")
	}
	*f = formatFlag(v)
	return nil
}

func newFlags(name string, errw io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("drift-monitor "+name, flag.ContinueOnError)
	fs.SetOutput(errw)
	return fs
}

// parse parses flags. When it returns false the command must exit with
// code: 0 after --help, ExitFailed after a usage error (already explained on
// stderr by the flag package).
func parse(fs *flag.FlagSet, args []string) (code int, ok bool) {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0, false
		}
		return ExitFailed, false
	}
	return 0, true
}
