package systemd_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/drift-monitor/drift-monitor/test/harness"
)

// badConfig is where the tests drop a config the daemon must refuse.
const badConfig = "/etc/drift-monitor/desired.d/60-bad.ign"

// TestBadConfigNeverBlinds: a large bad config dropped into desired.d of the
// running daemon under the shipped unit (WatchdogSec=30s) — fifty thousand
// copies of one file entry, 200 MB that never close their JSON, fifty
// thousand nested arrays — is refused with a record that names it, without
// a restart by the watchdog (a load on the event loop outlived it), and the
// last good state is still checked: a real edit is reported. Restarted with
// the file still there, the daemon checks against the last good state of the
// run before, and says so; it said "No drift: watching 0 paths" and checked
// nothing. The cases share one booted host.
func TestBadConfigNeverBlinds(t *testing.T) {
	t.Parallel()
	h := bootDaemon(t, setup{config: etcFileAndSentinel, files: []file{etcFileOK, sentinelFile}})
	const clean = "No drift: watching 2 paths, 0 units"
	h.waitStatus(clean)
	const head = `{"ignition":{"version":"3.4.0"},`
	for _, c := range []struct {
		name string
		// script writes the bad config to $1.
		script string
		// refused is what the refusal says is wrong.
		refused string
	}{
		{"fifty thousand duplicate entries", `{ printf '%s"storage":{"files":[' "$2"
  yes '{"path":"/etc/dup","mode":420,"contents":{"source":"data:,x"}},' | head -n 49999 | tr -d '\n'
  printf '{"path":"/etc/dup","mode":420,"contents":{"source":"data:,x"}}]}}'; } >"$1"`, "$.storage.files.1: duplicate entry defined"},
		{"200 MB unterminated", `{ printf '%s"storage":{"files":[' "$2"
  yes '{"path":"/etc/x","mode":420},' | head -c 200000000; } >"$1"`, "unexpected end of JSON input"},
		{"fifty thousand deep", `{ printf '%s"x":' "$2"
  yes '[' | head -n 50000 | tr -d '\n'; yes ']' | head -n 50000 | tr -d '\n'; printf '}'; } >"$1"`, "exceeded max depth"},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := h.in(t)
			// Written aside and renamed into place: one event, and the
			// load reads it whole.
			h.sh(c.script, "/root/bad.ign", head)
			m := h.mark()
			h.MustRun(t, "mv", "/root/bad.ign", badConfig)
			h.refusedConfig(m, c.refused, "Refusing the desired state, keeping the last good one: ")
			refusedStatus := func(status string) bool {
				return strings.HasPrefix(status, clean+"; new config refused ("+badConfig) &&
					strings.HasSuffix(status, "), checking against the last good one")
			}
			h.waitStatusThat("the refusal, checking against the last good state", refusedStatus)
			h.editReported(refusedStatus)

			// Restarted with the bad file in place: the last good state
			// of the run before.
			h.MustRun(t, "systemctl", "restart", service)
			h.inv = h.prop("InvocationID")
			h.refusedConfig(0, c.refused, "checking against the last good one, loaded by an earlier run and kept in the state cache (2 entries from 1 config files)")
			restoredStatus := func(status string) bool {
				return strings.HasPrefix(status, clean+"; config refused ("+badConfig) &&
					strings.HasSuffix(status, "), checking against the last good one, from an earlier run")
			}
			h.waitStatusThat("the last good state of the run before", restoredStatus)
			h.editReported(restoredStatus)

			if n := h.prop("NRestarts"); n != "0" {
				t.Errorf("NRestarts=%s: the service was restarted (by its watchdog?)", n)
			}
			m = h.mark()
			h.MustRun(t, "rm", badConfig)
			h.waitRecordWithin(loadTimeout, m, harness.MsgReloaded, nil)
			h.waitStatus(clean)
		})
	}
}

// loadTimeout bounds a load of these configs: reading 200 MB, hashing it
// and refusing it, or refusing fifty thousand entries, take seconds of CPU,
// and minutes on a machine as loaded as make test's.
const loadTimeout = 4 * time.Minute

// refusedConfig waits for the record (after from) that refuses badConfig
// for what is wrong, saying what it checks against, and for no record of
// the service's watchdog.
func (h *host) refusedConfig(from int, wrong, checking string) {
	h.t.Helper()
	r, _ := h.waitRecordWithin(loadTimeout, from, harness.MsgLoadFailed, nil)
	if msg := r["MESSAGE"]; !strings.Contains(msg, badConfig) || !strings.Contains(msg, wrong) || !strings.Contains(msg, checking) {
		h.t.Errorf("the refusal says %q; want it to name %s, say %q and %q", msg, badConfig, wrong, checking)
	}
	if e := r["CONFIG_ERROR"]; !strings.Contains(e, badConfig) || !strings.Contains(e, wrong) {
		h.t.Errorf("CONFIG_ERROR=%q; want it to name %s and say %q", e, badConfig, wrong)
	}
}

// waitStatusThat waits until systemd's StatusText satisfies ok.
func (h *host) waitStatusThat(what string, ok func(string) bool) {
	h.t.Helper()
	h.WaitFor(h.t, loadTimeout, what, func() (bool, string) {
		got, err := h.status()
		if err != nil {
			return false, err.Error()
		}
		return ok(got), fmt.Sprintf("StatusText %q", got)
	})
}

// editReported drifts /etc/etc-file and puts it back: both reported, and
// the status line back to what ok says it is.
func (h *host) editReported(ok func(string) bool) {
	h.t.Helper()
	m := h.mark()
	h.sh(`printf 'edited\n' >/etc/etc-file`)
	h.waitRecord(m, harness.DriftDetected, map[string]string{"DRIFT_PATH": etcFile})
	m = h.mark()
	h.sh(`printf 'hello world\n' >/etc/etc-file`)
	h.waitRecord(m, harness.MsgDriftResolved, map[string]string{"DRIFT_PATH": etcFile})
	h.waitStatusThat("the status line back", ok)
}
