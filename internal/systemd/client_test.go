package systemd

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/drift-monitor/drift-monitor/internal/buslink"
	"github.com/drift-monitor/drift-monitor/internal/testbus"
	"github.com/drift-monitor/drift-monitor/test/harness"
	godbus "github.com/godbus/dbus/v5"
)

// serveFakeSystemd puts a fake systemd on the bus at addr.
func serveFakeSystemd(t *testing.T, addr string, listed map[string]string) *fakeManager {
	t.Helper()
	bus, err := harness.BusDialer(t, addr)()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { bus.Close() })
	m := &fakeManager{conn: bus, listed: listed, unlisted: map[string]string{},
		subscribed: map[string]bool{}, jobs: map[string]string{}}
	if err := bus.Export(m, objectPath, managerIntf); err != nil {
		t.Fatal(err)
	}
	if reply, err := bus.RequestName(busName, godbus.NameFlagDoNotQueue); err != nil || reply != godbus.RequestNameReplyPrimaryOwner {
		t.Fatalf("RequestName: %v, %v", reply, err)
	}
	return m
}

func nextEvent(t *testing.T, c *Client, what string) buslink.Event {
	t.Helper()
	select {
	case e := <-c.Events():
		return e
	case <-time.After(10 * time.Second):
		t.Fatalf("no event (%s) within 10s", what)
		return buslink.Event{}
	}
}

// upAgain waits for an event that has the link up, skipping those of the
// failed attempts before it.
func upAgain(t *testing.T, c *Client, what string) buslink.Event {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if e := nextEvent(t, c, what); e.Up {
			return e
		}
	}
	t.Fatalf("not up again (%s) within 20s", what)
	return buslink.Event{}
}

// TestClientComesBack restarts the bus under a Client: the loss is an event,
// calls meanwhile fail with ErrUnavailable (not an answer), and once the bus
// and systemd are back the Client is subscribed again (signals arrive) and
// says that changes may have been missed.
func TestClientComesBack(t *testing.T) {
	b := testbus.New(t)
	serveFakeSystemd(t, b.Addr(), map[string]string{"kubelet.service": "enabled"})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	o := buslink.Options{Timeout: 10 * time.Second, MinBackoff: 10 * time.Millisecond, MaxBackoff: 100 * time.Millisecond}
	c := DialWith(ctx, o, b.Dialer())
	defer c.Close()
	if e := nextEvent(t, c, "the first connection"); !e.Up || e.Missed {
		t.Fatalf("first event = %+v, want up and nothing missed", e)
	}
	if st, err := c.UnitFileState("kubelet.service"); err != nil || st != "enabled" {
		t.Fatalf("UnitFileState = %q, %v", st, err)
	}

	b.Stop()
	if e := nextEvent(t, c, "the loss"); e.Up || !e.Missed || e.Err == nil {
		t.Fatalf("after the bus stopped: %+v, want down, Missed, and why", e)
	}
	_, err := c.UnitFileState("kubelet.service")
	if !errors.Is(err, ErrUnavailable) || !errors.Is(err, buslink.ErrUnavailable) {
		t.Fatalf("UnitFileState without a bus: %v, want ErrUnavailable", err)
	}
	if err := c.StartUnit(ctx, "x.service"); !errors.Is(err, ErrUnavailable) {
		t.Errorf("StartUnit without a bus: %v, want ErrUnavailable", err)
	}

	// The bus is back, systemd not yet: the Client cannot subscribe, so
	// it is not up.
	b.Start()
	deadline := time.After(300 * time.Millisecond) // several attempts at this backoff
wait:
	for {
		select {
		case e := <-c.Events():
			if e.Up {
				t.Fatalf("up without systemd on the bus: %+v", e)
			}
		case <-deadline:
			break wait
		}
	}
	if _, err := c.UnitFileState("kubelet.service"); !errors.Is(err, ErrUnavailable) {
		t.Errorf("UnitFileState with the bus but not systemd: %v, want ErrUnavailable", err)
	}

	m := serveFakeSystemd(t, b.Addr(), map[string]string{"kubelet.service": "disabled"})
	if e := upAgain(t, c, "systemd back"); !e.Missed {
		t.Errorf("up again = %+v, want Missed: the disable happened unseen", e)
	}
	if st, err := c.UnitFileState("kubelet.service"); err != nil || st != "disabled" {
		t.Errorf("UnitFileState after the return = %q, %v; want disabled", st, err)
	}
	if s, _ := m.counts(); s != 1 {
		t.Errorf("%d Subscribe calls on the new bus, want 1", s)
	}
	m.emit(t, "UnitFilesChanged")
	if e := nextEvent(t, c, "UnitFilesChanged"); !e.Up || !e.Changed {
		t.Errorf("after UnitFilesChanged: %+v, want up and Changed", e)
	}
}

// An error systemd answered is an answer; an error without one is not.
func TestUnanswered(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{godbus.ErrClosed, true},
		{fmt.Errorf("listing unit files x: %w", context.DeadlineExceeded), true},
		{godbus.Error{Name: "org.freedesktop.DBus.Error.ServiceUnknown"}, true},
		{&godbus.Error{Name: "org.freedesktop.DBus.Error.NoReply"}, true},
		{fmt.Errorf("x: %w", godbus.Error{Name: "org.freedesktop.DBus.Error.Spawn.ChildExited"}), true},
		{godbus.Error{Name: "org.freedesktop.DBus.Error.InvalidArgs"}, false},
		{godbus.Error{Name: "org.freedesktop.DBus.Error.AccessDenied"}, false},
		{godbus.Error{Name: "org.freedesktop.systemd1.NoSuchUnit"}, false},
	} {
		if got := unanswered(c.err); got != c.want {
			t.Errorf("unanswered(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}
