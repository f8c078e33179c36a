package dbusapi

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/drift-monitor/drift-monitor/internal/buslink"
	"github.com/drift-monitor/drift-monitor/internal/testbus"
	"github.com/godbus/dbus/v5"
	"github.com/google/go-cmp/cmp"
)

// fakeDaemon answers the methods from a drift list.
type fakeDaemon struct {
	mu     sync.Mutex
	drift  []Drift
	gen    uint64
	checks int
}

func (f *fakeDaemon) CheckNow(context.Context) (bool, int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.checks++
	return len(f.drift) == 0, len(f.drift), nil
}

func (f *fakeDaemon) ReloadNow(context.Context) error { return nil }

func (f *fakeDaemon) DriftPage(_ context.Context, offset, limit int) (uint64, int, []Drift, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if offset > len(f.drift) {
		offset = len(f.drift)
	}
	return f.gen, len(f.drift), append([]Drift(nil), f.drift[offset:min(offset+limit, len(f.drift))]...), nil
}

func (f *fakeDaemon) set(ds []Drift, gen uint64) Snapshot {
	f.mu.Lock()
	f.drift, f.gen = ds, gen
	f.mu.Unlock()
	state := "clean"
	if len(ds) > 0 {
		state = "drifted"
	}
	return Snapshot{State: state, StatusText: fmt.Sprintf("%d drifts", len(ds)), Drift: ds, DriftCount: uint32(len(ds)), DriftGeneration: gen}
}

// manyDrifts returns n drifts whose paths are pathLen bytes long.
func manyDrifts(n, pathLen int) []Drift {
	ds := make([]Drift, n)
	for i := range ds {
		p := fmt.Sprintf("/etc/%s/f-%05d", strings.Repeat("d", pathLen-13), i)
		ds[i] = Drift{Kind: "missing", Entry: "file", Path: p, Message: fmt.Sprintf("file %q does not exist", p)}
	}
	return ds
}

var fastLink = buslink.Options{Timeout: 10 * time.Second, MinBackoff: 10 * time.Millisecond, MaxBackoff: 100 * time.Millisecond}

func serve(t *testing.T, bus *testbus.Bus, d Daemon) *Server {
	t.Helper()
	s := Serve(context.Background(), d, Options{Address: bus.Addr(), Version: "test", InhibitDir: t.TempDir(), Link: fastLink})
	t.Cleanup(s.Close)
	if e := nextEvent(t, s); !e.Up {
		t.Fatalf("first event = %+v, want up", e)
	}
	return s
}

func nextEvent(t *testing.T, s *Server) buslink.Event {
	t.Helper()
	select {
	case e := <-s.Events():
		return e
	case <-time.After(20 * time.Second):
		t.Fatal("no event from the server within 20s")
		return buslink.Event{}
	}
}

func getProp[T any](t *testing.T, c *dbus.Conn, name string) T {
	t.Helper()
	var out T
	v, err := c.Object(BusName, Path).GetProperty(Interface + "." + name)
	if err != nil {
		t.Fatalf("Get %s: %v", name, err)
	}
	if err := v.Store(&out); err != nil {
		t.Fatalf("Get %s: %v", name, err)
	}
	return out
}

// getAll pages through GetDrift as a client would.
func getAll(t *testing.T, c *dbus.Conn) (gen uint64, all []Drift, pages int) {
	t.Helper()
	for {
		var g uint64
		var total uint32
		var page []Drift
		if err := c.Object(BusName, Path).Call(Interface+".GetDrift", 0, uint32(len(all)), uint32(0)).Store(&g, &total, &page); err != nil {
			t.Fatalf("GetDrift(%d, 0): %v", len(all), err)
		}
		if pages > 0 && g != gen {
			t.Fatalf("generation changed from %d to %d while paging", gen, g)
		}
		gen, pages = g, pages+1
		size := 0
		for _, d := range page {
			size += len(d.Kind) + len(d.Entry) + len(d.Path) + len(d.Unit) + len(d.Message)
		}
		if len(page) > MaxPage || (size > MaxBytes && len(page) > 1) {
			t.Fatalf("a page of %d drifts, %d bytes: past MaxPage %d or MaxBytes %d", len(page), size, MaxPage, MaxBytes)
		}
		all = append(all, page...)
		if len(all) >= int(total) || len(page) == 0 {
			if len(all) != int(total) {
				t.Fatalf("paging ended at %d of %d", len(all), total)
			}
			return gen, all, pages
		}
	}
}

// TestLargeDriftSetIsBoundedAndPaged: 5,000 drifts with 3,000-byte paths
// (about 30 MB as one message): the properties hold the count and the first
// 100, and GetDrift pages through all of them, each page bounded.
func TestLargeDriftSetIsBoundedAndPaged(t *testing.T) {
	bus := testbus.New(t)
	d := &fakeDaemon{}
	s := serve(t, bus, d)
	ds := manyDrifts(5000, 3000)
	s.Update(d.set(ds, 7))
	c := bus.Conn()

	if got := getProp[uint32](t, c, "DriftCount"); got != 5000 {
		t.Errorf("DriftCount = %d, want 5000", got)
	}
	first := getProp[[]Drift](t, c, "Drift")
	if diff := cmp.Diff(ds[:MaxDrift], first); diff != "" {
		t.Errorf("Drift is not the first %d (-want +got):\n%s", MaxDrift, diff)
	}
	var all map[string]dbus.Variant
	if err := c.Object(BusName, Path).Call("org.freedesktop.DBus.Properties.GetAll", 0, Interface).Store(&all); err != nil {
		t.Fatalf("GetAll: %v", err)
	}
	gen, got, pages := getAll(t, c)
	if gen != 7 {
		t.Errorf("generation %d, want 7", gen)
	}
	if diff := cmp.Diff(ds, got); diff != "" {
		t.Errorf("the pages are not the drift (-want +got):\n%.2000s", diff)
	}
	t.Logf("5,000 drifts of ~6 KB in %d pages", pages)
	if pages < 5000*6000/MaxBytes {
		t.Errorf("%d pages: MaxBytes does not bound them", pages)
	}
}

// TestSignals: one PropertiesChanged for what changed together, and
// DriftChanged only when the set changed, carrying at most MaxDrift.
func TestSignals(t *testing.T) {
	bus := testbus.New(t)
	d := &fakeDaemon{}
	s := serve(t, bus, d)
	c := bus.Conn()
	for _, m := range [][]dbus.MatchOption{
		{dbus.WithMatchObjectPath(Path), dbus.WithMatchInterface("org.freedesktop.DBus.Properties")},
		{dbus.WithMatchObjectPath(Path), dbus.WithMatchInterface(Interface)},
	} {
		if err := c.AddMatchSignal(m...); err != nil {
			t.Fatal(err)
		}
	}
	sigs := make(chan *dbus.Signal, 16)
	c.Signal(sigs)
	next := func() *dbus.Signal {
		t.Helper()
		for {
			select {
			case sig := <-sigs:
				if sig.Path == Path {
					return sig
				}
			case <-time.After(20 * time.Second):
				t.Fatal("no signal within 20s")
				return nil
			}
		}
	}
	changedNames := func(sig *dbus.Signal) []string {
		t.Helper()
		if sig.Name != "org.freedesktop.DBus.Properties.PropertiesChanged" {
			t.Fatalf("signal %s, want PropertiesChanged", sig.Name)
		}
		var iface string
		var changed map[string]dbus.Variant
		var inval []string
		if err := dbus.Store(sig.Body, &iface, &changed, &inval); err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, n := range []string{"State", "StatusText", "DriftCount", "Drift", "Inhibitors", "LastCheck", "WatchedPaths", "Units", "Version"} {
			if _, ok := changed[n]; ok {
				names = append(names, n)
			}
		}
		return names
	}

	s.Update(d.set(manyDrifts(150, 40), 1))
	if diff := cmp.Diff([]string{"State", "StatusText", "DriftCount", "Drift"}, changedNames(next())); diff != "" {
		t.Errorf("PropertiesChanged after drift (-want +got):\n%s", diff)
	}
	sig := next()
	var ds []Drift
	if sig.Name != Interface+".DriftChanged" || dbus.Store(sig.Body, &ds) != nil || len(ds) != MaxDrift {
		t.Errorf("second signal %s with %d drifts, want DriftChanged with %d", sig.Name, len(ds), MaxDrift)
	}

	snap := d.set(manyDrifts(150, 40), 1)
	snap.StatusText = "other words, same set"
	s.Update(snap)
	if diff := cmp.Diff([]string{"StatusText"}, changedNames(next())); diff != "" {
		t.Errorf("PropertiesChanged after a new status line (-want +got):\n%s", diff)
	}
	s.Update(d.set(nil, 2))
	changedNames(next())
	if sig := next(); sig.Name != Interface+".DriftChanged" || dbus.Store(sig.Body, &ds) != nil || len(ds) != 0 {
		t.Errorf("after the drift was resolved: %s %v, want DriftChanged with none", sig.Name, sig.Body)
	}
}

// TestComesBackAfterTheBusRestarts: the server says it is off the bus, an
// update meanwhile neither blocks nor is lost, and once the bus is back the
// name is claimed again and the methods answer.
func TestComesBackAfterTheBusRestarts(t *testing.T) {
	bus := testbus.New(t)
	d := &fakeDaemon{}
	s := serve(t, bus, d)
	s.Update(d.set(nil, 1))

	bus.Stop()
	if e := nextEvent(t, s); e.Up || e.Err == nil {
		t.Fatalf("after the bus stopped: %+v, want down with why", e)
	}
	done := make(chan struct{})
	go func() { s.Update(d.set(manyDrifts(3, 40), 2)); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Update blocked without a bus")
	}

	bus.Start()
	var e buslink.Event
	for e = nextEvent(t, s); !e.Up; e = nextEvent(t, s) {
	}
	if !e.Missed {
		t.Errorf("up again = %+v, want Missed", e)
	}
	c := bus.Conn()
	var owned bool
	if err := c.BusObject().Call("org.freedesktop.DBus.NameHasOwner", 0, BusName).Store(&owned); err != nil || !owned {
		t.Fatalf("NameHasOwner(%s) = %v, %v after the restart", BusName, owned, err)
	}
	if got := getProp[uint32](t, c, "DriftCount"); got != 3 {
		t.Errorf("DriftCount after the restart = %d, want the 3 published while the bus was away", got)
	}
	var clean bool
	var n uint32
	if err := c.Object(BusName, Path).Call(Interface+".Check", 0).Store(&clean, &n); err != nil || clean || n != 3 {
		t.Errorf("Check after the restart = %v, %d, %v; want false, 3", clean, n, err)
	}
}

// TestUpdateDoesNotWaitForAStuckBus: a bus that stops reading (a hung
// dbus-daemon) blocks the server's signals, never its caller.
func TestUpdateDoesNotWaitForAStuckBus(t *testing.T) {
	bus := testbus.New(t)
	d := &fakeDaemon{}
	s := serve(t, bus, d)
	bus.Pause()
	ds := manyDrifts(MaxDrift, 4000) // ~800 KB per signal: the socket's buffer fills at once
	done := make(chan struct{})
	go func() {
		for gen := uint64(1); gen <= 20; gen++ {
			s.Update(d.set(ds, gen))
		}
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Update blocked behind a bus that does not read")
	}
	bus.Resume()
}

func TestIntrospection(t *testing.T) {
	bus := testbus.New(t)
	serve(t, bus, &fakeDaemon{})
	var xml string
	if err := bus.Conn().Object(BusName, Path).Call("org.freedesktop.DBus.Introspectable.Introspect", 0).Store(&xml); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`<method name="GetDrift"><arg name="offset" type="u" direction="in"></arg><arg name="limit" type="u" direction="in"></arg><arg name="generation" type="t" direction="out"></arg><arg name="total" type="u" direction="out"></arg><arg name="drift" type="a(sssss)" direction="out"></arg></method>`,
		`<method name="GetDriftEx"><arg name="offset" type="u" direction="in"></arg><arg name="limit" type="u" direction="in"></arg><arg name="generation" type="t" direction="out"></arg><arg name="total" type="u" direction="out"></arg><arg name="drift" type="a(sssssa{sv})" direction="out"></arg></method>`,
		`<property name="DriftCount" type="u" access="read"><annotation name="org.freedesktop.DBus.Property.EmitsChangedSignal" value="true"></annotation></property>`,
		`<property name="Version" type="s" access="read"><annotation name="org.freedesktop.DBus.Property.EmitsChangedSignal" value="const"></annotation></property>`,
		`<arg name="fd" type="h" direction="out">`,
	} {
		if !strings.Contains(xml, want) {
			t.Errorf("introspection lacks %s:\n%s", want, xml)
		}
	}
}

func TestPropertiesAreReadOnly(t *testing.T) {
	bus := testbus.New(t)
	serve(t, bus, &fakeDaemon{})
	obj := bus.Conn().Object(BusName, Path)
	for _, c := range []struct {
		iface, name, want string
	}{
		{Interface, "State", "org.freedesktop.DBus.Properties.Error.ReadOnly"},
		{Interface, "Nope", "org.freedesktop.DBus.Properties.Error.PropertyNotFound"},
		{"org.example.Other", "State", "org.freedesktop.DBus.Properties.Error.InterfaceNotFound"},
	} {
		err := obj.Call("org.freedesktop.DBus.Properties.Set", 0, c.iface, c.name, dbus.MakeVariant("x")).Err
		var de dbus.Error
		if !errors.As(err, &de) || de.Name != c.want {
			t.Errorf("Set %s.%s: %v, want %s", c.iface, c.name, err, c.want)
		}
	}
}

func TestBusString(t *testing.T) {
	long := strings.Repeat("é", MaxField) // 2 bytes each
	for _, c := range []struct {
		name, in, want string
	}{
		{"plain", "/etc/motd", "/etc/motd"},
		{"invalid UTF-8", "/etc/\xff\xfe", "/etc/\uFFFD"},
		// MaxField-3 bytes would end inside an é: one byte less.
		{"long", long, long[:MaxField-len("…")-1] + "…"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := busString(c.in)
			if got != c.want || !utf8.ValidString(got) || len(got) > MaxField {
				t.Errorf("busString = %.40q (%d bytes), want %.40q", got, len(got), c.want)
			}
		})
	}
}

// TestNameTaken: a second daemon on the bus is refused the name, and says
// so as a NameError: not the bus being away.
func TestNameTaken(t *testing.T) {
	bus := testbus.New(t)
	serve(t, bus, &fakeDaemon{})
	second := Serve(context.Background(), &fakeDaemon{}, Options{Address: bus.Addr(), Link: fastLink})
	defer second.Close()
	e := nextEvent(t, second)
	var ne *NameError
	if e.Up || !errors.As(e.Err, &ne) {
		t.Errorf("second server: %+v, want down with a NameError", e)
	}
}
