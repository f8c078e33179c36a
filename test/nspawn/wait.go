package nspawn

import (
	"testing"
	"time"
)

// Poll intervals: short at first, because most conditions in a booted
// container hold within milliseconds, then backing off so a slow condition
// does not spawn hundreds of nsenter processes.
const (
	firstPollInterval = 10 * time.Millisecond
	maxPollInterval   = 250 * time.Millisecond
)

// pollResult says how a poll ended.
type pollResult int

const (
	pollOK       pollResult = iota // cond held
	pollTimedOut                   // the deadline passed
	pollExited                     // the stop channel closed (the container is gone)
)

// poll calls cond until it holds, deadline passes, or stop closes, and returns
// why it ended with cond's last observation. cond is always called at least
// once, and once more after the deadline passes, so a condition that became
// true during the last interval is not reported as a timeout.
func poll(deadline time.Time, stop <-chan struct{}, cond func() (bool, string)) (pollResult, string) {
	interval := firstPollInterval
	for {
		ok, obs := cond()
		if ok {
			return pollOK, obs
		}
		left := time.Until(deadline)
		if left <= 0 {
			return pollTimedOut, obs
		}
		timer := time.NewTimer(min(interval, left))
		select {
		case <-stop:
			timer.Stop()
			// The condition may have been met just before the container
			// went away; one last look settles it.
			if ok, obs := cond(); ok {
				return pollOK, obs
			}
			return pollExited, obs
		case <-timer.C:
		}
		interval = min(2*interval, maxPollInterval)
	}
}

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
	switch res, last := poll(time.Now().Add(timeout), m.exited, cond); res {
	case pollOK:
	case pollExited:
		t.Fatalf("%s: the container stopped (%v) while waiting for %s; last observation: %s\n%s",
			m.Name, m.exitErr(), what, last, m.logTail(80))
	default:
		t.Fatalf("%s: timed out after %v waiting for %s; last observation: %s", m.Name, timeout, what, last)
	}
}
