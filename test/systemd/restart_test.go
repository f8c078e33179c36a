package systemd_test

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/drift-monitor/drift-monitor/test/harness"
	"github.com/drift-monitor/drift-monitor/test/nspawn"
)

// unitProcessExit is the MESSAGE_ID of systemd's record of a unit's process
// exit (SD_MESSAGE_UNIT_PROCESS_EXIT, systemd's
// src/systemd/sd-messages.h), with EXIT_CODE= and EXIT_STATUS= fields.
const unitProcessExit = "98e322203f7a4ed290d09fe03c09fe15"

// TestCrashRestarts proves that the shipped unit brings the daemon back
// after each way the Go runtime ends a process with exit status 2 — a
// watchdog kill of a frozen daemon (SIGSTOP past WatchdogSec; systemd
// sends SIGABRT, then SIGCONT), a panic, and SIGABRT itself — within
// RestartSec plus a first check, watching again; while a usage error
// (TestKillAndStop) still fails the unit with exit status 64 and is never
// restarted. A drop-in shortens WatchdogSec to keep the test fast and arms
// the daemon's test-only panic trigger (DRIFT_MONITOR_TEST_PANIC: SIGUSR2
// makes it panic).
func TestCrashRestarts(t *testing.T) {
	t.Parallel()
	const watchdog = 6 * time.Second
	h := bootDaemon(t, setup{
		config: `{"ignition":{"version":"3.4.0"},"storage":{"files":[
 {"path":"/etc/etc-file","mode":420,"contents":{"source":"data:,hello%20world%0A"}}]}}`,
		files: []file{etcFileOK},
		dropIn: fmt.Sprintf("[Service]\nWatchdogSec=%ds\nEnvironment=DRIFT_MONITOR_TEST_PANIC=SIGUSR2\n",
			int(watchdog/time.Second)),
	})
	const clean = "No drift: watching 1 path, 0 units"
	h.waitStatus(clean)
	if got := h.prop("RestartPreventExitStatus"); got != "64 78" {
		t.Errorf("RestartPreventExitStatus=%q, want the daemon's usage statuses \"64 78\" and never 2", got)
	}
	restartDelay, err := time.ParseDuration(h.prop("RestartUSec"))
	if err != nil {
		t.Fatal(err)
	}

	for _, c := range []struct {
		name string
		// signal is what the test sends the main process: kill -SIGNAL.
		signal string
		// watchdog: systemd must say that the watchdog fired.
		watchdog bool
	}{
		{"frozen past the watchdog", "STOP", true},
		{"a panic", "USR2", false},
		{"SIGABRT", "ABRT", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := h.in(t)
			pid, inv := h.prop("MainPID"), h.inv
			if n, err := strconv.Atoi(pid); err != nil || n <= 1 {
				// kill 0 would signal the test's own process group.
				t.Fatalf("MainPID=%q: no main process to signal (ActiveState=%s)", pid, h.prop("ActiveState"))
			}
			before, _ := strconv.Atoi(h.prop("NRestarts"))
			h.MustRun(t, "kill", "-"+c.signal, pid)
			// The frozen daemon waits out the watchdog first.
			h.waitRestarted(pid, watchdog+restartDelay+recordTimeout)
			if got, _ := strconv.Atoi(h.prop("NRestarts")); got != before+1 {
				t.Errorf("NRestarts=%d, want %d", got, before+1)
			}
			h.inv = h.prop("InvocationID")
			if h.inv == inv {
				t.Fatalf("InvocationID is still %s after the restart", inv)
			}

			// The old run ended the way the test meant it to: with exit
			// status 2, the status the unit used to refuse to restart.
			exit := h.systemdRecord(inv, unitProcessExit, "")
			if exit["EXIT_CODE"] != "exited" || exit["EXIT_STATUS"] != "2" {
				t.Errorf("the old run's exit: EXIT_CODE=%s EXIT_STATUS=%s, want exited, 2: %s", exit["EXIT_CODE"], exit["EXIT_STATUS"], exit)
			}
			if c.watchdog {
				h.systemdRecord(inv, "", "Watchdog timeout")
			}
			ready, _ := h.waitRecord(0, harness.MsgReady, nil)
			took := monotonic(t, ready) - monotonic(t, exit)
			t.Logf("ready again %v after the exit (RestartSec=%v)", took, restartDelay)
			// A first check of one file takes milliseconds; the margin is
			// for a loaded machine.
			if took > restartDelay+10*time.Second {
				t.Errorf("ready %v after the exit, want within RestartSec=%v and a check", took, restartDelay)
			}
			h.waitStatus(clean)
			// The new process watches as the old one did.
			h.driftAndResolve("x\n", clean)
		})
	}
}

// systemdRecord waits for systemd's own record about the service's run inv
// (INVOCATION_ID=inv, written by PID 1) with MESSAGE_ID id (when not "")
// and a MESSAGE containing text (when not ""), and returns it.
func (h *host) systemdRecord(inv, id, text string) harness.Record {
	h.t.Helper()
	args := []string{"journalctl", "-o", "json", "--all", "-q", "--no-pager", "_PID=1", "INVOCATION_ID=" + inv}
	if id != "" {
		args = append(args, "MESSAGE_ID="+id)
	}
	var got harness.Record
	h.WaitFor(h.t, recordTimeout, fmt.Sprintf("systemd's record %s %q of run %s", id, text, inv), func() (bool, string) {
		out, errOut, err := h.Run(h.ctx, args...)
		if err != nil {
			return false, fmt.Sprintf("%v: %s", err, errOut)
		}
		es, err := nspawn.JournalEntries(out)
		if err != nil {
			return false, err.Error()
		}
		var msgs []string
		for _, e := range es {
			r := harness.JournalRecord(e)
			if strings.Contains(r["MESSAGE"], text) {
				got = r
				return true, ""
			}
			msgs = append(msgs, r["MESSAGE"])
		}
		return false, strings.Join(msgs, " | ")
	})
	return got
}

// monotonic is a record's __MONOTONIC_TIMESTAMP (this boot's clock).
func monotonic(t *testing.T, r harness.Record) time.Duration {
	t.Helper()
	us, err := strconv.ParseInt(r["__MONOTONIC_TIMESTAMP"], 10, 64)
	if err != nil {
		t.Fatalf("record without a monotonic timestamp: %s", r)
	}
	return time.Duration(us) * time.Microsecond
}
