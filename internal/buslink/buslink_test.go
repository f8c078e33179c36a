package buslink

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// fakeConn is a connection the test loses by closing lost.
type fakeConn struct {
	id     int
	lost   chan struct{}
	once   sync.Once
	closed atomic.Bool
}

func (c *fakeConn) Done() <-chan struct{} { return c.lost }
func (c *fakeConn) Close()                { c.closed.Store(true); c.lose() }
func (c *fakeConn) lose()                 { c.once.Do(func() { close(c.lost) }) }

// fakeBus answers connection attempts: up or down, and counts them.
type fakeBus struct {
	mu       sync.Mutex
	up       bool
	attempts int
	conns    []*fakeConn
	made     chan *fakeConn // every connection made, as it is made
}

var errDown = errors.New("the bus is down")

func newFakeBus(up bool) *fakeBus { return &fakeBus{up: up, made: make(chan *fakeConn, 64)} }

func (b *fakeBus) connect(ctx context.Context) (*fakeConn, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.attempts++
	if !b.up {
		return nil, errDown
	}
	c := &fakeConn{id: len(b.conns) + 1, lost: make(chan struct{})}
	b.conns = append(b.conns, c)
	b.made <- c
	return c, nil
}

func (b *fakeBus) set(up bool) {
	b.mu.Lock()
	b.up = up
	b.mu.Unlock()
}

func (b *fakeBus) count() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.attempts
}

const wait = 10 * time.Second // a bound, not an expectation

func next(t *testing.T, l *Link[*fakeConn]) Event {
	t.Helper()
	select {
	case e := <-l.Events():
		return e
	case <-time.After(wait):
		t.Fatalf("no event within %v", wait)
		return Event{}
	}
}

func made(t *testing.T, b *fakeBus) *fakeConn {
	t.Helper()
	select {
	case c := <-b.made:
		return c
	case <-time.After(wait):
		t.Fatalf("no connection within %v", wait)
		return nil
	}
}

// shape is what a test compares of an event.
type shape struct{ Up, Missed, Changed, HasErr bool }

func shapeOf(e Event) shape { return shape{e.Up, e.Missed, e.Changed, e.Err != nil} }

var fast = Options{Timeout: time.Second, MinBackoff: time.Millisecond, MaxBackoff: 4 * time.Millisecond}

func TestLossAndReturnAreEvents(t *testing.T) {
	b := newFakeBus(true)
	l := Start(context.Background(), fast, b.connect)
	defer l.Close()
	c1 := made(t, b)
	if got, want := shapeOf(next(t, l)), (shape{Up: true}); got != want {
		t.Fatalf("first event = %+v, want %+v", got, want)
	}
	if c, ok, _ := l.Current(); !ok || c != c1 {
		t.Fatalf("Current = %v, %v; want the first connection", c, ok)
	}

	b.set(false)
	c1.lose()
	down := next(t, l)
	if got, want := shapeOf(down), (shape{Missed: true, HasErr: true}); got != want {
		t.Fatalf("after the loss: %+v, want %+v", got, want)
	}
	if !c1.closed.Load() {
		t.Error("the lost connection was not closed")
	}
	if _, ok, err := l.Current(); ok || err == nil {
		t.Errorf("Current while down = ok %v, err %v; want not ok and why", ok, err)
	}

	b.set(true)
	c2 := made(t, b)
	// The failed attempts while down and the return merge into what the
	// receiver has not taken yet: it ends up with the latest state.
	var e Event
	for e = next(t, l); !e.Up; e = next(t, l) {
	}
	if got, want := shapeOf(e), (shape{Up: true, Missed: true}); got != want {
		t.Fatalf("after the return: %+v, want %+v", got, want)
	}
	if c, ok, _ := l.Current(); !ok || c != c2 {
		t.Fatalf("Current = %v, %v; want the second connection", c, ok)
	}
}

// A receiver that looks late gets one event: the latest state, with what it
// missed.
func TestEventsMergeWhileTheReceiverIsBusy(t *testing.T) {
	b := newFakeBus(true)
	l := Start(context.Background(), fast, b.connect)
	defer l.Close()
	c1 := made(t, b)
	l.Changed(c1)
	c1.lose()
	made(t, b) // reconnected: up again, all before the receiver looked
	// Nothing was taken yet: Start's Up, the news, the loss and the return
	// are at most two events — the first may have been taken by forward's
	// slot before the rest arrived.
	var got []shape
	deadline := time.After(wait)
	for len(got) == 0 || !got[len(got)-1].Up || !got[len(got)-1].Missed {
		select {
		case e := <-l.Events():
			got = append(got, shapeOf(e))
		case <-deadline:
			t.Fatalf("events %+v: never up with Missed", got)
		}
	}
	if len(got) > 3 {
		t.Errorf("%d events for one loss and return, want them merged: %+v", len(got), got)
	}
	changed := false
	for _, s := range got {
		changed = changed || s.Changed
	}
	if !changed {
		t.Errorf("the news was lost in the merge: %+v", got)
	}
}

// Changed from a connection that is gone is not news of the current one.
func TestChangedFromAnOldConnectionIsDropped(t *testing.T) {
	b := newFakeBus(true)
	l := Start(context.Background(), fast, b.connect)
	defer l.Close()
	c1 := made(t, b)
	next(t, l)
	c1.lose()
	for e := next(t, l); !e.Up; e = next(t, l) {
	}
	l.Changed(c1)
	select {
	case e := <-l.Events():
		t.Errorf("event %+v after news from a lost connection", shapeOf(e))
	case <-time.After(50 * time.Millisecond): // the absence under test
	}
}

// A bus that stays away costs attempts spaced by the backoff, never a spin:
// in a window W there are at most about W/MinBackoff of them even before the
// backoff grows (an upper bound that load cannot break).
func TestNoSpinWhileDown(t *testing.T) {
	b := newFakeBus(false)
	o := Options{Timeout: time.Second, MinBackoff: 10 * time.Millisecond, MaxBackoff: 40 * time.Millisecond}
	l := Start(context.Background(), o, b.connect)
	defer l.Close()
	if e := next(t, l); e.Up || !errors.Is(e.Err, errDown) {
		t.Fatalf("first event = %+v, want down with the attempt's error", e)
	}
	const window = 400 * time.Millisecond
	start, before := time.Now(), b.count()
	time.Sleep(window) // the window over which attempts are counted
	n, took := b.count()-before, time.Since(start)
	// 10+20+40+40...: at most took/10ms even if every wait were the shortest.
	if limit := int(took/o.MinBackoff) + 1; n > limit {
		t.Errorf("%d attempts in %v while the bus was down, want at most %d", n, took, limit)
	}
	if n == 0 {
		t.Errorf("no attempt in %v: the link gave up", took)
	}
	t.Logf("%d attempts in %v", n, took.Round(time.Millisecond))
}

// Close ends the link and closes its connection, even while the receiver
// never read an event.
func TestClose(t *testing.T) {
	b := newFakeBus(true)
	l := Start(context.Background(), fast, b.connect)
	c := made(t, b)
	done := make(chan struct{})
	go func() { l.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(wait):
		t.Fatal("Close did not return")
	}
	if !c.closed.Load() {
		t.Error("Close did not close the connection")
	}
	if _, ok, _ := l.Current(); ok {
		t.Error("Current is up after Close")
	}
}

func TestMerge(t *testing.T) {
	lost := errors.New("lost")
	for _, c := range []struct {
		name      string
		old, next Event
		want      Event
	}{
		{"down then up", Event{Err: lost, Missed: true}, Event{Up: true}, Event{Up: true, Missed: true}},
		{"news then down", Event{Up: true, Changed: true}, Event{Err: lost, Missed: true}, Event{Err: lost, Missed: true, Changed: true}},
		{"up then news", Event{Up: true}, Event{Up: true, Changed: true}, Event{Up: true, Changed: true}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := c.old.merge(c.next)
			if diff := cmp.Diff(c.want, got, cmp.Comparer(func(a, b error) bool { return a == b })); diff != "" {
				t.Errorf("merge (-want +got):\n%s", diff)
			}
		})
	}
}
