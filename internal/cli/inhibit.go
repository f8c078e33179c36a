package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"

	"github.com/drift-monitor/drift-monitor/internal/dbusapi"
	"github.com/drift-monitor/drift-monitor/internal/escape"
	"github.com/drift-monitor/drift-monitor/internal/inhibit"
)

// Exit statuses of inhibit when COMMAND could not run (as a shell has them).
const (
	exitCannotRun = 126
	exitNotFound  = 127
)

func runInhibit(ctx context.Context, args []string, std Stdio) int {
	fs := newFlags("inhibit", std.Err)
	who := fs.String("who", "", "`WHO` holds the inhibitor (shown in the status line and journal)")
	why := fs.String("why", "", "`WHY` it is held")
	dir := fs.String("inhibit-dir", inhibit.Dir, "`DIR` of inhibitor lock files")
	fs.Usage = func() {
		fmt.Fprintf(std.Err, "usage: drift-monitor inhibit --who WHO --why WHY -- COMMAND [ARG]...\n\n"+
			"Suspends drift reporting while COMMAND runs (root only); exits with COMMAND's status.\n\n")
		fs.PrintDefaults()
	}
	if code, ok := parse(fs, args); !ok {
		return code
	}
	if *who == "" || *why == "" || fs.NArg() == 0 {
		fmt.Fprintln(std.Err, "drift-monitor inhibit: --who, --why and a COMMAND are required")
		fs.Usage()
		return ExitFailed
	}
	if os.Geteuid() != 0 {
		fmt.Fprintln(std.Err, "drift-monitor inhibit: only root can take an inhibitor")
		return ExitFailed
	}
	lock, err := inhibit.Take(*dir, *who, *why, os.Getpid())
	if err != nil {
		fmt.Fprintf(std.Err, "drift-monitor inhibit: %s\n", escape.Text(err.Error()))
		return ExitFailed
	}
	defer lock.Release()
	if *dir == inhibit.Dir {
		awaitAcknowledged(ctx, os.Getpid(), std)
	}

	cmd := exec.Command(fs.Arg(0), fs.Args()[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = std.In, std.Out, std.Err
	// Signals meant for the command (Ctrl-C, systemctl stop of a wrapper
	// unit) are passed on; the inhibitor is released when it has ended.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT)
	defer signal.Stop(sigs)
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(std.Err, "drift-monitor inhibit: %v\n", err)
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist) {
			return exitNotFound
		}
		return exitCannotRun
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	for {
		select {
		case s := <-sigs:
			cmd.Process.Signal(s)
		case err := <-done:
			return exitStatus(cmd, err)
		}
	}
}

// exitStatus is COMMAND's exit status, or 128+N when signal N killed it.
func exitStatus(cmd *exec.Cmd, err error) int {
	if cmd.ProcessState == nil {
		return exitCannotRun
	}
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return cmd.ProcessState.ExitCode()
}

// ackTimeout bounds how long inhibit waits for the running daemon to list
// its inhibitor before it runs COMMAND anyway.
const ackTimeout = 5 * time.Second

// awaitAcknowledged waits until the daemon running on the system bus lists
// the inhibitor (by pid) among those it holds, so that COMMAND never
// starts before the daemon knows it is suspended: the daemon follows the
// lock files with an inotify instance of its own, and its view of a
// declared path may otherwise come first. A command shorter than the
// daemon's look at the lock would leave no trace of the transition in the
// journal, and a declared file it writes could be checked half-way.
// Without a daemon on the bus there is nobody to wait for: one that starts
// later takes the held lock at its start. A daemon that does not answer
// in time gets a warning, and COMMAND runs.
func awaitAcknowledged(ctx context.Context, pid int, std Stdio) {
	ctx, cancel := context.WithTimeout(ctx, ackTimeout)
	defer cancel()
	for delay, first := 5*time.Millisecond, true; ; delay, first = min(2*delay, 200*time.Millisecond), false {
		st, err := dbusapi.ReadStatus(ctx, dbusapi.ReadOptions{CallTimeout: time.Second})
		if err != nil && first {
			return // no bus, or no daemon on it
		}
		if err == nil && listsPID(st, pid) {
			return
		}
		select {
		case <-ctx.Done():
			fmt.Fprintf(std.Err, "drift-monitor inhibit: warning: the running daemon did not list this inhibitor within %v; running the command anyway\n", ackTimeout)
			return
		case <-time.After(delay):
		}
	}
}

// listsPID reports whether the daemon lists an inhibitor held by process
// pid: this process, whose lock it is. The PID, not WHO, names it: the
// daemon shows WHO as the lock file keeps it (newlines made spaces,
// surrounding spaces trimmed, cut at the next " why=" or " pid=",
// internal/inhibit) and as the bus carries it (control characters escaped,
// cut to dbusapi.MaxField), which need not be the bytes of --who; a WHO
// compared byte for byte would never match, and inhibit would wait its
// whole bound and warn that the daemon did not see a lock it did.
func listsPID(st *dbusapi.Status, pid int) bool {
	for _, in := range st.Inhibitors {
		if int(in.PID) == pid {
			return true
		}
	}
	return false
}
