package daemon

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/drift-monitor/drift-monitor/internal/buslink"
	"github.com/drift-monitor/drift-monitor/internal/dbusapi"
	"github.com/drift-monitor/drift-monitor/internal/journal"
)

// fakeUnits is systemd over a bus the test takes away and brings back.
type fakeUnits struct {
	mu     sync.Mutex
	states map[string]string
	down   bool
	// hold, while open, makes UnitFileState wait: a first check that takes
	// as long as the test wants.
	hold   chan struct{}
	events chan buslink.Event
}

func newFakeUnits(states map[string]string) *fakeUnits {
	return &fakeUnits{states: states, events: make(chan buslink.Event)}
}

func (f *fakeUnits) UnitFileState(unit string) (string, error) {
	f.mu.Lock()
	hold := f.hold
	f.mu.Unlock()
	if hold != nil {
		<-hold
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.down {
		return "", fmt.Errorf("unit file state of %s: %w", unit, buslink.ErrUnavailable)
	}
	return f.states[unit], nil
}

func (f *fakeUnits) Events() <-chan buslink.Event { return f.events }

func (f *fakeUnits) set(down bool, unit, state string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.down = down
	if unit != "" {
		f.states[unit] = state
	}
}

// fakePublisher keeps every snapshot the daemon publishes.
type fakePublisher struct {
	mu     sync.Mutex
	snaps  []dbusapi.Snapshot
	grew   chan struct{}
	events chan buslink.Event
}

func newFakePublisher() *fakePublisher {
	return &fakePublisher{grew: make(chan struct{}, 1), events: make(chan buslink.Event)}
}

func (p *fakePublisher) Update(s dbusapi.Snapshot) {
	p.mu.Lock()
	p.snaps = append(p.snaps, s)
	p.mu.Unlock()
	select {
	case p.grew <- struct{}{}:
	default:
	}
}

func (p *fakePublisher) Events() <-chan buslink.Event { return p.events }

func (p *fakePublisher) all() []dbusapi.Snapshot {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]dbusapi.Snapshot(nil), p.snaps...)
}

// waitSnapshot waits for a snapshot that satisfies ok, published after the
// first from.
func (p *fakePublisher) waitSnapshot(t *testing.T, from int, what string, ok func(dbusapi.Snapshot) bool) (dbusapi.Snapshot, int) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		snaps := p.all()
		for i := from; i < len(snaps); i++ {
			if ok(snaps[i]) {
				return snaps[i], i + 1
			}
		}
		select {
		case <-p.grew:
		case <-deadline:
			last := "none"
			if len(snaps) > 0 {
				last = fmt.Sprintf("%+v", snaps[len(snaps)-1])
			}
			t.Fatalf("no snapshot %s within 10s; the last: %s", what, last)
		}
	}
}

// syncBuffer is the journal handler's writer: the test reads while the
// daemon writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func (s *syncBuffer) count(id string) int {
	return strings.Count(s.String(), "MESSAGE_ID="+id) + strings.Count(s.String(), journal.FieldRecord+"="+id+" ")
}

// unitDaemon runs a daemon whose desired state is one enabled unit.
func unitDaemon(t *testing.T, u *fakeUnits, opts ...func(*Options)) (*Daemon, *fakePublisher, *syncBuffer) {
	t.Helper()
	root := t.TempDir()
	cfg := filepath.Join(root, "c.ign")
	if err := os.WriteFile(cfg, []byte(`{"ignition":{"version":"3.4.0"},"systemd":{"units":[{"name":"a.service","enabled":true}]}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	logs := &syncBuffer{}
	o := Options{Root: root, Configs: []string{cfg}, Units: u,
		Log: slog.New(journal.NewHandler(logs, journal.WithNative(false)))}
	for _, f := range opts {
		f(&o)
	}
	d, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	p := newFakePublisher()
	d.SetPublisher(p)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx, nil) }()
	t.Cleanup(func() {
		cancel()
		<-done
		d.Close()
		if t.Failed() {
			t.Logf("the daemon's records:\n%s", logs)
		}
	})
	return d, p, logs
}

func send(t *testing.T, ch chan buslink.Event, e buslink.Event) {
	t.Helper()
	select {
	case ch <- e:
	case <-time.After(10 * time.Second):
		t.Fatal("the loop did not take the event within 10s")
	}
}

const clean1 = "No drift: watching 0 paths, 1 unit"

// TestLostBusIsNotDrift: while systemd cannot be asked, a unit's enablement
// keeps what was known (even through a full check), the status line says
// why, and once systemd is back the unit is asked again: a change made
// meanwhile is reported then.
func TestLostBusIsNotDrift(t *testing.T) {
	u := newFakeUnits(map[string]string{"a.service": "enabled"})
	d, p, logs := unitDaemon(t, u)
	_, at := p.waitSnapshot(t, 0, "clean", func(s dbusapi.Snapshot) bool { return s.State == "clean" && s.StatusText == clean1 })

	u.set(true, "a.service", "disabled") // the bus goes, and the change with it
	send(t, u.events, buslink.Event{Err: errors.New("the connection to the bus was lost"), Missed: true})
	_, at = p.waitSnapshot(t, at, "saying systemd is unreachable", func(s dbusapi.Snapshot) bool {
		return s.StatusText == clean1+"; systemd unreachable over D-Bus, reconnecting: unit enablement not checked"
	})
	if clean, n, err := d.CheckNow(context.Background()); err != nil || !clean || n != 0 {
		t.Errorf("a full check without systemd: clean %v, %d drifts, %v; want clean, as last known", clean, n, err)
	}
	if n := logs.count(journal.RecordDriftDetected); n != 0 {
		t.Errorf("%d drift records while systemd could not be asked", n)
	}
	if n := logs.count(journal.MsgBusLost); n != 1 {
		t.Errorf("%d MsgBusLost records, want 1", n)
	}

	u.set(false, "", "")
	send(t, u.events, buslink.Event{Up: true, Missed: true})
	s, _ := p.waitSnapshot(t, at, "with the change made while systemd was away", func(s dbusapi.Snapshot) bool { return s.State == "drifted" })
	if want := "Drift: 1 path differs (a.service: enablement)"; s.StatusText != want || s.DriftCount != 1 {
		t.Errorf("after the return: %q, %d drifts; want %q, 1", s.StatusText, s.DriftCount, want)
	}
	if n := logs.count(journal.MsgBusRestored); n != 1 {
		t.Errorf("%d MsgBusRestored records, want 1", n)
	}
}

// TestUnitFilesChanged: news from systemd re-checks the units at once.
func TestUnitFilesChanged(t *testing.T) {
	u := newFakeUnits(map[string]string{"a.service": "enabled"})
	_, p, logs := unitDaemon(t, u)
	_, at := p.waitSnapshot(t, 0, "clean", func(s dbusapi.Snapshot) bool { return s.State == "clean" })
	u.set(false, "a.service", "disabled")
	send(t, u.events, buslink.Event{Up: true, Changed: true})
	p.waitSnapshot(t, at, "drifted", func(s dbusapi.Snapshot) bool { return s.State == "drifted" })
	if n := logs.count(journal.MsgBusRestored); n != 0 {
		t.Errorf("news from a connection that never went away was journaled as a return (%d)", n)
	}
}

// TestAPILoss: the daemon's own bus going away is said in the status line
// and the journal, and its return too.
func TestAPILoss(t *testing.T) {
	u := newFakeUnits(map[string]string{"a.service": "enabled"})
	_, p, logs := unitDaemon(t, u)
	_, at := p.waitSnapshot(t, 0, "clean", func(s dbusapi.Snapshot) bool { return s.State == "clean" })
	send(t, p.events, buslink.Event{Err: errors.New("lost"), Missed: true})
	_, at = p.waitSnapshot(t, at, "saying the API is off the bus", func(s dbusapi.Snapshot) bool {
		return s.StatusText == clean1+"; D-Bus API off the bus, reconnecting: drift-monitor status cannot answer"
	})
	send(t, p.events, buslink.Event{Up: true, Missed: true})
	p.waitSnapshot(t, at, "clean again", func(s dbusapi.Snapshot) bool { return s.StatusText == clean1 })
	if lost, back := logs.count(journal.MsgBusLost), logs.count(journal.MsgBusRestored); lost != 1 || back != 1 {
		t.Errorf("%d lost and %d restored records, want 1 and 1", lost, back)
	}
}

// TestAPIRefused: a bus that refuses the API its name (no policy installed)
// is said once in the journal, and not in the status line: the bus is
// there.
func TestAPIRefused(t *testing.T) {
	u := newFakeUnits(map[string]string{"a.service": "enabled"})
	dm, p, logs := unitDaemon(t, u)
	_, at := p.waitSnapshot(t, 0, "clean", func(s dbusapi.Snapshot) bool { return s.State == "clean" })
	refused := &dbusapi.NameError{Err: errors.New("Connection is not allowed to own the service")}
	send(t, p.events, buslink.Event{Err: refused, Missed: true})
	send(t, p.events, buslink.Event{Err: refused, Missed: true})
	send(t, p.events, buslink.Event{Up: true, Missed: true})
	// Past the events: a snapshot of a check asked for after them.
	if _, _, err := dm.CheckNow(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, s := range p.all()[at:] {
		if s.StatusText != clean1 {
			t.Errorf("status line %q, want %q", s.StatusText, clean1)
		}
	}
	if n := strings.Count(logs.String(), "no D-Bus API"); n != 1 {
		t.Errorf("the refusal was logged %d times, want once:\n%s", n, logs)
	}
	if lost, back := logs.count(journal.MsgBusLost), logs.count(journal.MsgBusRestored); lost != 0 || back != 0 {
		t.Errorf("%d lost and %d restored records for a refused name, want none", lost, back)
	}
}

// TestStartingUntilTheFirstCheckIsDone: while the first check runs, the bus
// says "starting" with a status line that says so, never "clean".
func TestStartingUntilTheFirstCheckIsDone(t *testing.T) {
	u := newFakeUnits(map[string]string{"a.service": "enabled"})
	u.hold = make(chan struct{})
	_, p, _ := unitDaemon(t, u)
	s, _ := p.waitSnapshot(t, 0, "starting", func(s dbusapi.Snapshot) bool { return true })
	if s.State != "starting" || s.StatusText != "Starting: first check of 0 paths, 1 unit" {
		t.Errorf("first snapshot = %q, %q; want starting", s.State, s.StatusText)
	}
	for _, s := range p.all() {
		if s.State != "starting" {
			t.Fatalf("snapshot %q while the first check is held", s.State)
		}
	}
	u.mu.Lock()
	close(u.hold)
	u.hold = nil
	u.mu.Unlock()
	p.waitSnapshot(t, 0, "clean once the first check is done", func(s dbusapi.Snapshot) bool { return s.State == "clean" })
}
