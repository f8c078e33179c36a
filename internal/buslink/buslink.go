// Package buslink keeps a connection to a message bus alive: it connects,
// lets its caller set the connection up (subscribe to signals, export
// objects, claim a name), and when the connection is lost it says so and
// connects again, with a backoff, until its context ends.
//
// It promises:
//   - Attempts are spaced by a backoff that doubles from MinBackoff to
//     MaxBackoff (100 ms to 5 s by default), so a bus that stays away costs
//     one attempt every few seconds, never a spin. A connection that lasted
//     at least MaxBackoff resets the backoff; one lost sooner (a bus that
//     accepts and then drops us) does not.
//   - Every change between up and down reaches Events as a value, never as a
//     closed channel. Events are merged while the receiver is busy: it gets
//     the latest state, with Missed set if the link was down at any moment
//     in between, and Changed if the connection reported news meanwhile. A
//     receiver that is slow therefore sees fewer events, never stale ones.
//   - Current never blocks on the bus.
//
// It does not promise that nothing was missed while the link was down: an
// event with Up and Missed says exactly that, and its receiver must read
// again whatever it cares about. Nor does it tell a lost connection from a
// closed one: the connection's Done channel decides.
package buslink

import (
	"context"
	"errors"
	"sync"
	"time"
)

// ErrUnavailable is wrapped by the errors of calls that could not be made
// because the link is down, or whose failure says that the peer could not be
// reached: the answer is unknown, which is neither yes nor no.
var ErrUnavailable = errors.New("not reachable over D-Bus")

// The defaults of Options.
const (
	DefaultTimeout    = 25 * time.Second // D-Bus's customary method-call timeout
	DefaultMinBackoff = 100 * time.Millisecond
	DefaultMaxBackoff = 5 * time.Second
)

// Options tune a link; zero fields take the defaults.
type Options struct {
	// Timeout bounds one connection attempt.
	Timeout time.Duration
	// MinBackoff and MaxBackoff bound the wait between attempts.
	MinBackoff, MaxBackoff time.Duration
}

// Conn is one connection the link keeps.
type Conn interface {
	// Done is closed when the connection is lost or closed.
	Done() <-chan struct{}
	Close()
}

// Event says what happened to a link.
type Event struct {
	// Up: connected, and set up, at the time of the event.
	Up bool
	// Err is why the link is down (when !Up): the loss or the last failed
	// attempt.
	Err error
	// Missed: the link is down, or was down at some moment before this
	// connection came up: whatever a connection would have carried
	// meanwhile may have been missed. Only the first connection, made by
	// Start, comes up without it.
	Missed bool
	// Changed: the connection reported news since the previous event (see
	// Link.Changed).
	Changed bool
}

func (e Event) merge(next Event) Event {
	next.Missed = next.Missed || e.Missed
	next.Changed = next.Changed || e.Changed
	return next
}

// Link keeps one connection of type C; see the package doc.
type Link[C Conn] struct {
	connect func(ctx context.Context) (C, error)
	o       Options

	ctx  context.Context
	stop context.CancelFunc

	mu    sync.Mutex
	cur   C
	up    bool
	err   error
	tried bool // an attempt was made

	in     chan Event
	events chan Event
	done   chan struct{}
}

// Start starts keeping a connection made by connect, which must return a
// connection that is fully set up, or an error (and close whatever it
// opened); it should give up when its ctx ends. The first attempt is made
// before Start returns, so that a caller finds the link up when the bus is;
// its outcome is the first event. The link ends with ctx or Close.
func Start[C Conn](ctx context.Context, o Options, connect func(ctx context.Context) (C, error)) *Link[C] {
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.MinBackoff <= 0 {
		o.MinBackoff = DefaultMinBackoff
	}
	if o.MaxBackoff < o.MinBackoff {
		o.MaxBackoff = max(DefaultMaxBackoff, o.MinBackoff)
	}
	ctx, cancel := context.WithCancel(ctx)
	l := &Link[C]{
		connect: connect, o: o, ctx: ctx, stop: cancel,
		in: make(chan Event, 1), events: make(chan Event), done: make(chan struct{}),
	}
	go l.forward()
	first := l.attempt()
	go l.run(first)
	return l
}

// Events delivers the link's events; see the package doc.
func (l *Link[C]) Events() <-chan Event { return l.events }

// Current returns the connection when the link is up; otherwise ok is false
// and err says why.
func (l *Link[C]) Current() (c C, ok bool, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.cur, l.up, l.err
}

// Changed reports news from the connection c (a signal its owner cares
// about) as an event. News from a connection that is no longer current is
// dropped: the next connection's Missed covers it.
func (l *Link[C]) Changed(c Conn) {
	l.mu.Lock()
	current := l.up && Conn(l.cur) == c
	l.mu.Unlock()
	if current {
		l.send(Event{Up: true, Changed: true})
	}
}

// Close stops the link, closes its connection and waits for its goroutines.
func (l *Link[C]) Close() {
	l.stop()
	<-l.done
}

func (l *Link[C]) send(e Event) {
	// forward merges what it holds with what arrives: one slot is enough,
	// and it is emptied promptly until the link stops.
	select {
	case l.in <- e:
	case <-l.ctx.Done():
	}
}

// attempt makes one connection and reports its outcome; it returns the
// connection's Done channel, or nil when the attempt failed.
func (l *Link[C]) attempt() <-chan struct{} {
	actx, cancel := context.WithTimeout(l.ctx, l.o.Timeout)
	c, err := l.connect(actx)
	cancel()
	if err == nil && l.ctx.Err() != nil {
		c.Close()
		err = l.ctx.Err()
	}
	l.mu.Lock()
	if err != nil {
		l.up, l.err, l.tried = false, err, true
		l.mu.Unlock()
		l.send(Event{Err: err, Missed: true})
		return nil
	}
	// Only Start's own attempt comes before any loss or failure.
	missed := l.tried
	l.cur, l.up, l.err, l.tried = c, true, nil, true
	l.mu.Unlock()
	l.send(Event{Up: true, Missed: missed})
	return c.Done()
}

var errLost = errors.New("the connection to the bus was lost")

func (l *Link[C]) run(lost <-chan struct{}) {
	defer close(l.done)
	backoff := l.o.MinBackoff
	var since time.Time
	if lost != nil {
		since = time.Now()
	}
	for {
		if lost != nil {
			select {
			case <-lost:
			case <-l.ctx.Done():
				l.shut()
				return
			}
			l.mu.Lock()
			l.up, l.err = false, errLost
			c := l.cur
			l.mu.Unlock()
			c.Close() // a lost connection may still hold half of itself (a second socket, goroutines)
			l.send(Event{Err: errLost, Missed: true})
			if time.Since(since) >= l.o.MaxBackoff {
				backoff = l.o.MinBackoff
			}
		}
		t := time.NewTimer(backoff)
		select {
		case <-t.C:
		case <-l.ctx.Done():
			t.Stop()
			l.shut()
			return
		}
		backoff = min(2*backoff, l.o.MaxBackoff)
		if lost = l.attempt(); lost != nil {
			since = time.Now()
		}
	}
}

func (l *Link[C]) shut() {
	l.mu.Lock()
	c, up := l.cur, l.up
	l.up, l.err = false, context.Canceled
	l.mu.Unlock()
	if up {
		c.Close()
	}
}

// forward hands the events to the receiver, merging those it has not taken
// yet.
func (l *Link[C]) forward() {
	var pending Event
	has := false
	for {
		var out chan<- Event
		if has {
			out = l.events
		}
		select {
		case e := <-l.in:
			if has {
				pending = pending.merge(e)
			} else {
				pending, has = e, true
			}
		case out <- pending:
			has = false
		case <-l.ctx.Done():
			return
		}
	}
}
