package nspawn

import (
	"fmt"
	"testing"
	"time"

	"github.com/drift-monitor/drift-monitor/test/harness"
)

// WaitFor polls cond until it returns true, for at most timeout, and fails the
// test if it never does. cond returns whether the awaited state is reached
// and a description of what it observed; the failure message names what
// the test was waiting for and the last observation. WaitFor fails at once,
// with the end of the console log, if the container stops while waiting.
//
// cond should use Run, not MustRun, and report an error as an observation: a
// MustRun that fails ends the test at the first attempt instead of retrying.
func (m *Machine) WaitFor(t testing.TB, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	switch res, last := harness.Await(harness.Waiting{Timeout: timeout, Stop: m.exited}, cond); res {
	case harness.Held:
	case harness.Stopped:
		t.Fatalf("%s: the container stopped (%v) while waiting for %s; last observation: %s\n%s",
			m.Name, m.exitErr(), what, last, m.logTail(80))
	default:
		t.Fatalf("%s: timed out after %v waiting for %s; last observation: %s", m.Name, timeout, what, last)
	}
}

// Waiting is how to wait with test/harness (harness.Poll,
// harness.WaitRecord) for a state inside the container: for at most
// timeout, and no longer than the container runs; a failure then shows the
// end of its console log.
func (m *Machine) Waiting(timeout time.Duration) harness.Waiting {
	return harness.Waiting{Timeout: timeout, Stop: m.exited, Describe: func() string {
		select {
		case <-m.exited:
			return fmt.Sprintf("%s: the container stopped (%v)\n%s", m.Name, m.exitErr(), m.logTail(80))
		default:
			return m.Name + ": the container still runs"
		}
	}}
}
