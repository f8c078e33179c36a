package systemd

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/drift-monitor/drift-monitor/internal/enablement"
	"github.com/drift-monitor/drift-monitor/internal/testbus"
	"github.com/drift-monitor/drift-monitor/test/harness"
	godbus "github.com/godbus/dbus/v5"
	"github.com/google/go-cmp/cmp"
)

// These tests run Conn against a fake org.freedesktop.systemd1 on a private
// dbus-daemon. The fake answers the way systemd 252 was observed to answer
// (see the Live tests, which check the same against a real systemd); what they
// test is this package's side: batching and fallback, the signal wiring,
// subscription bookkeeping, spoofed signals, job results.

// privateBus starts a dbus-daemon of our own and returns its address.
func privateBus(t *testing.T) string { return testbus.New(t).Addr() }

type unitFile struct {
	Path string
	Type string
}

// fakeManager is the part of org.freedesktop.systemd1.Manager that Conn uses.
type fakeManager struct {
	conn *godbus.Conn

	mu           sync.Mutex
	listed       map[string]string // unit files in the search path: name → state
	unlisted     map[string]string // GetUnitFileState only (template instances)
	listCalls    [][]string
	getCalls     []string
	subscribed   map[string]bool
	subscribes   int
	unsubscribes int
	subscribeErr *godbus.Error
	jobs         map[string]string // unit → job result; missing: NoSuchUnit; "": never ends
	nextJob      uint32
}

func (m *fakeManager) ListUnitFilesByPatterns(states, patterns []string) ([]unitFile, *godbus.Error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.listCalls = append(m.listCalls, patterns)
	var out []unitFile
	for _, p := range patterns {
		if st, ok := m.listed[p]; ok {
			out = append(out, unitFile{"/etc/systemd/system/" + p, st})
		}
	}
	return out, nil
}

func (m *fakeManager) GetUnitFileState(name string) (string, *godbus.Error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.getCalls = append(m.getCalls, name)
	if strings.ContainsAny(name, " /") {
		return "", godbus.NewError("org.freedesktop.DBus.Error.InvalidArgs", []any{"Invalid argument"})
	}
	if st, ok := m.listed[name]; ok {
		return st, nil
	}
	if st, ok := m.unlisted[name]; ok {
		return st, nil
	}
	return "", godbus.NewError("org.freedesktop.DBus.Error.FileNotFound", []any{"No such file or directory"})
}

func (m *fakeManager) Subscribe(sender godbus.Sender) *godbus.Error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.subscribeErr != nil {
		return m.subscribeErr
	}
	if m.subscribed[string(sender)] {
		return godbus.NewError("org.freedesktop.systemd1.AlreadySubscribed", []any{"Client is already subscribed."})
	}
	m.subscribed[string(sender)] = true
	m.subscribes++
	return nil
}

func (m *fakeManager) Unsubscribe(sender godbus.Sender) *godbus.Error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.subscribed[string(sender)] {
		return godbus.NewError("org.freedesktop.systemd1.NotSubscribed", []any{"Client is not subscribed."})
	}
	delete(m.subscribed, string(sender))
	m.unsubscribes++
	return nil
}

func (m *fakeManager) StartUnit(name, mode string) (godbus.ObjectPath, *godbus.Error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	res, ok := m.jobs[name]
	if !ok {
		return "", godbus.NewError("org.freedesktop.systemd1.NoSuchUnit", []any{"Unit " + name + " not found."})
	}
	m.nextJob++
	id := m.nextJob
	job := godbus.ObjectPath(fmt.Sprintf("/org/freedesktop/systemd1/job/%d", id))
	if res != "" {
		go func() {
			_ = m.conn.Emit(objectPath, managerIntf+".JobRemoved", id, job, name, res)
		}()
	}
	return job, nil
}

func (m *fakeManager) emit(t *testing.T, member string, args ...any) {
	t.Helper()
	if err := m.conn.Emit(objectPath, managerIntf+"."+member, args...); err != nil {
		t.Fatal(err)
	}
}

func (m *fakeManager) counts() (subscribes, unsubscribes int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.subscribes, m.unsubscribes
}

// fakeSystemd starts a private bus with a fake systemd on it and a Conn to it.
func fakeSystemd(t *testing.T) (*fakeManager, *Conn, string) {
	t.Helper()
	addr := privateBus(t)
	bus, err := harness.BusDialer(t, addr)()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { bus.Close() })
	m := &fakeManager{conn: bus, listed: map[string]string{}, unlisted: map[string]string{},
		subscribed: map[string]bool{}, jobs: map[string]string{}}
	if err := bus.Export(m, objectPath, managerIntf); err != nil {
		t.Fatal(err)
	}
	if reply, err := bus.RequestName(busName, godbus.NameFlagDoNotQueue); err != nil || reply != godbus.RequestNameReplyPrimaryOwner {
		t.Fatalf("RequestName: %v, %v", reply, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := ConnectWith(ctx, harness.BusDialer(t, addr))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return m, c, addr
}

func TestFakeUnitFileStates(t *testing.T) {
	m, c, _ := fakeSystemd(t)
	// Under the lock: the race detector cannot see that the fake's methods
	// run only after these writes (the bus orders them, not Go).
	m.mu.Lock()
	m.listed = map[string]string{
		"kubelet.service": "enabled",
		"chronyd.service": "disabled",
		"masked.service":  "masked",
		"alias.service":   "alias",
		"getty@.service":  "indirect",
	}
	m.unlisted = map[string]string{"getty@tty1.service": "enabled"}
	m.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	units := []string{"kubelet.service", "chronyd.service", "masked.service", "alias.service", "getty@tty1.service", "nope.service"}
	got, err := c.UnitFileStates(ctx, units)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"kubelet.service":    "enabled",
		"chronyd.service":    "disabled",
		"masked.service":     "masked",
		"alias.service":      "alias",
		"getty@tty1.service": "enabled",
		"nope.service":       enablement.StateNotFound,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("UnitFileStates (-want +got):\n%s", diff)
	}
	m.mu.Lock()
	calls := struct{ List, Get [][]string }{m.listCalls, [][]string{m.getCalls}}
	m.mu.Unlock()
	wantCalls := struct{ List, Get [][]string }{[][]string{units}, [][]string{{"getty@tty1.service", "nope.service"}}}
	if diff := cmp.Diff(wantCalls, calls); diff != "" {
		t.Errorf("calls to systemd: one list for all, one get per unlisted unit (-want +got):\n%s", diff)
	}

	if got, err := c.UnitFileStates(ctx, nil); err != nil || len(got) != 0 {
		t.Errorf("UnitFileStates(nil) = %v, %v; want empty", got, err)
	}
	if st, err := c.UnitFileState("masked.service"); err != nil || st != "masked" {
		t.Errorf("UnitFileState(masked.service) = %q, %v", st, err)
	}
	if _, err := c.UnitFileStates(ctx, []string{"kubelet.service", "not valid"}); err == nil ||
		dbusErrorName(err) != "org.freedesktop.DBus.Error.InvalidArgs" || !strings.Contains(err.Error(), "not valid") {
		t.Errorf("invalid name: error %v, want InvalidArgs naming the unit", err)
	}
}

// next waits for a wake-up, or fails.
func next(t *testing.T, ch <-chan struct{}) {
	t.Helper()
	select {
	case _, ok := <-ch:
		if !ok {
			t.Fatal("watch channel closed")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no wake-up within 5s")
	}
}

// quiet checks that ch stays empty for a while: proving that something did
// not happen needs a bound.
func quiet(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
		t.Errorf("%s woke the watcher", what)
	case <-time.After(300 * time.Millisecond):
	}
}

func closed(t *testing.T, ch <-chan struct{}) {
	t.Helper()
	deadline := time.After(5 * time.Second)
	for {
		select {
		case _, ok := <-ch:
			if !ok {
				return
			}
		case <-deadline:
			t.Fatal("watch channel not closed within 5s")
		}
	}
}

func TestFakeWatchUnitFiles(t *testing.T) {
	m, c, addr := fakeSystemd(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch, err := c.WatchUnitFiles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if s, u := m.counts(); s != 1 || u != 0 {
		t.Fatalf("after WatchUnitFiles: %d Subscribe, %d Unsubscribe; want 1, 0", s, u)
	}

	// Not systemd: another client emitting the same signal on the same path.
	spoofer, err := harness.BusDialer(t, addr)()
	if err != nil {
		t.Fatal(err)
	}
	defer spoofer.Close()
	if err := spoofer.Emit(objectPath, managerIntf+".UnitFilesChanged"); err != nil {
		t.Fatal(err)
	}
	quiet(t, ch, "a UnitFilesChanged from another client")
	// Other signals of systemd's do not wake it either.
	m.emit(t, "UnitNew", "x.service", godbus.ObjectPath("/org/freedesktop/systemd1/unit/x_2eservice"))
	quiet(t, ch, "UnitNew")

	m.emit(t, "UnitFilesChanged")
	next(t, ch)
	m.emit(t, "Reloading", true)
	next(t, ch)

	// A burst leaves one value, not one per signal.
	for range 20 {
		m.emit(t, "UnitFilesChanged")
	}
	next(t, ch)
	if len(ch) > 1 {
		t.Errorf("channel holds %d values", len(ch))
	}

	// A second watcher shares the subscription.
	ctx2, cancel2 := context.WithCancel(context.Background())
	ch2, err := c.WatchUnitFiles(ctx2)
	if err != nil {
		t.Fatal(err)
	}
	m.emit(t, "UnitFilesChanged")
	next(t, ch)
	next(t, ch2)
	cancel2()
	closed(t, ch2)
	if s, u := m.counts(); s != 1 || u != 0 {
		t.Errorf("one of two watchers ended: %d Subscribe, %d Unsubscribe; want 1, 0", s, u)
	}
	m.emit(t, "UnitFilesChanged")
	next(t, ch)

	cancel()
	closed(t, ch)
	if s, u := m.counts(); s != 1 || u != 1 {
		t.Errorf("last watcher ended: %d Subscribe, %d Unsubscribe; want 1, 1", s, u)
	}

	// Watching again subscribes again.
	ctx3, cancel3 := context.WithCancel(context.Background())
	defer cancel3()
	ch3, err := c.WatchUnitFiles(ctx3)
	if err != nil {
		t.Fatal(err)
	}
	if s, _ := m.counts(); s != 2 {
		t.Errorf("watching again: %d Subscribe calls, want 2", s)
	}
	m.emit(t, "Reloading", false)
	next(t, ch3)

	// Close ends every watcher.
	c.Close()
	closed(t, ch3)
}

func TestFakeWatchSubscribeFails(t *testing.T) {
	m, c, _ := fakeSystemd(t)
	m.mu.Lock()
	m.subscribeErr = godbus.NewError("org.freedesktop.DBus.Error.AccessDenied", []any{"no"})
	m.mu.Unlock()
	_, err := c.WatchUnitFiles(context.Background())
	if dbusErrorName(err) != "org.freedesktop.DBus.Error.AccessDenied" {
		t.Fatalf("WatchUnitFiles = %v, want the AccessDenied error", err)
	}
	m.mu.Lock()
	m.subscribeErr = nil
	m.mu.Unlock()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch, err := c.WatchUnitFiles(ctx)
	if err != nil {
		t.Fatalf("WatchUnitFiles after a failure: %v", err)
	}
	m.emit(t, "UnitFilesChanged")
	next(t, ch)
}

func TestFakeStartUnit(t *testing.T) {
	m, c, _ := fakeSystemd(t)
	m.mu.Lock()
	m.jobs = map[string]string{
		"hook.service":   "done",
		"broken.service": "failed",
		"stuck.service":  "",
	}
	m.mu.Unlock()
	tests := []struct {
		name    string
		unit    string
		timeout time.Duration
		check   func(error) bool
	}{
		{"done", "hook.service", 5 * time.Second, func(err error) bool { return err == nil }},
		{"failed", "broken.service", 5 * time.Second, func(err error) bool {
			var je *JobError
			return errors.As(err, &je) && *je == JobError{Unit: "broken.service", Result: "failed"}
		}},
		{"no such unit", "nope.service", 5 * time.Second, func(err error) bool {
			return dbusErrorName(err) == "org.freedesktop.systemd1.NoSuchUnit"
		}},
		{"job outlives ctx", "stuck.service", 200 * time.Millisecond, func(err error) bool {
			return errors.Is(err, context.DeadlineExceeded)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), tt.timeout)
			defer cancel()
			if err := c.StartUnit(ctx, tt.unit); !tt.check(err) {
				t.Errorf("StartUnit(%s) = %v", tt.unit, err)
			}
		})
	}
}
