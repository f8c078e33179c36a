package systemd_test

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"
)

// startTimeout is the drop-in's TimeoutStartSec=, far below what the load
// of startFiles entries takes.
const (
	startTimeout = 2 * time.Second
	startFiles   = 150000
)

// A start whose load of a large config outlasts TimeoutStartSec= is not
// ended by it: while it starts, the daemon asks systemd to extend the
// start's timeout (EXTEND_TIMEOUT_USEC). Without that, systemd ends the
// start at the timeout and starts it again, to be ended again.
func TestLongStartOutlastsTheStartTimeout(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	b.WriteString(`{"ignition":{"version":"3.4.0"},"storage":{"files":[`)
	for i := range startFiles {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"path":"/etc/many/f%06d.conf","mode":420,"contents":{"source":"data:,x"}}`, i)
	}
	b.WriteString("]}}\n")
	h := bootDaemon(t, setup{config: b.String(),
		dropIn:    fmt.Sprintf("[Service]\nTimeoutStartSec=%ds\n", int(startTimeout.Seconds())),
		longStart: true})

	// bootDaemon's restart returned with the service active: the start
	// took longer than its timeout, or the test proves nothing.
	started := h.monotonic("ExecMainStartTimestampMonotonic")
	active := h.monotonic("ActiveEnterTimestampMonotonic")
	if took := active - started; took <= startTimeout {
		t.Fatalf("the start took %s, within TimeoutStartSec=%s: a larger config is needed to test its extension", took, startTimeout)
	}
	if n := h.prop("NRestarts"); n != "0" {
		t.Errorf("NRestarts=%s: the start was ended and restarted", n)
	}
	if out := h.sh(`journalctl -u "$1" --no-pager -o cat | grep -ci 'start operation timed out' || true`, service); strings.TrimSpace(out) != "0" {
		t.Errorf("the journal says %s times that %s's start operation timed out", strings.TrimSpace(out), service)
	}

	// A reload job whose load outlasts TimeoutStartSec= (systemd's reload
	// state is bounded by it) succeeds: the daemon asks for more time while
	// it loads. The config is touched first so that the reload parses it.
	h.shUntilDeadline(`printf '\n' >> "$2" && systemctl reload "$1"`, service, configPath)
	if out := h.sh(`journalctl -u "$1" --no-pager -o cat | grep -ci 'reload operation timed out' || true`, service); strings.TrimSpace(out) != "0" {
		t.Errorf("the journal says %s times that %s's reload timed out", strings.TrimSpace(out), service)
	}

	// A stop while the config loads again is not held up by the load: the
	// daemon stops within the unit's TimeoutStopSec=, not killed at its
	// end. The config is touched first, so that the reload parses it (its
	// state cache entry is keyed by the file's stamp). How long the parse
	// takes depends on the machine; TestStopDoesNotWaitForALoad (daemon)
	// holds a load for as long as it likes. SIGHUP is what ExecReload=
	// sends; a reload job would be timed by this test's TimeoutStartSec=.
	h.shUntilDeadline(`printf '\n' >> "$2" && systemctl kill -s HUP "$1" && systemctl stop "$1"`, service, configPath)
	if r := h.prop("Result"); r != "success" {
		t.Errorf("stopped during a reload's load: Result=%s, want success", r)
	}
	if out := h.sh(`journalctl -u "$1" --no-pager -o cat | grep -ci 'stop-sigterm.* timed out' || true`, service); strings.TrimSpace(out) != "0" {
		t.Errorf("the journal says %s's stop timed out during a reload's load", service)
	}
}

// monotonic reads a unit property that is a CLOCK_MONOTONIC time in µs.
func (h *host) monotonic(name string) time.Duration {
	h.t.Helper()
	v, err := strconv.ParseInt(h.prop(name), 10, 64)
	if err != nil || v == 0 {
		h.t.Fatalf("%s: %q is not a time", name, h.prop(name))
	}
	return time.Duration(v) * time.Microsecond
}
