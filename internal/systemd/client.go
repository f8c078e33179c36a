package systemd

import (
	"context"
	"fmt"
	"strings"

	"github.com/drift-monitor/drift-monitor/internal/buslink"
	godbus "github.com/godbus/dbus/v5"
)

// ErrUnavailable is wrapped by the errors of a Client's calls that could not
// be made or answered because systemd could not be reached over D-Bus: the
// answer is unknown. It wraps buslink.ErrUnavailable.
var ErrUnavailable = fmt.Errorf("systemd is %w", buslink.ErrUnavailable)

// Client is a connection to systemd that comes back after the bus restarts
// or the connection is lost (see package buslink): each connection is
// subscribed to the unit-file signals before it is used, and Events says
// when it is lost, when it is back (Missed: a change may have gone unseen,
// ask again) and when unit files changed (Changed, as WatchUnitFiles).
//
// While systemd cannot be reached its calls fail at once with an error
// wrapping ErrUnavailable; so does a call that fails without an answer from
// systemd (the connection broke, the call timed out, systemd is not on the
// bus yet), and such a call also drops the connection, so that the link
// reconnects and says so rather than answering from a broken one. An error
// that systemd itself answered (an invalid unit name) is returned as Conn
// returns it. It is safe for concurrent use.
type Client struct {
	link *buslink.Link[*Conn]
}

// Dial starts keeping a connection to systemd on the system bus. The first
// attempt is made before it returns; ctx bounds the Client's life.
func Dial(ctx context.Context) *Client {
	return DialWith(ctx, buslink.Options{}, dialSystemBus)
}

// DialWith is Dial through dial (see ConnectWith), with o for the link.
func DialWith(ctx context.Context, o buslink.Options, dial func() (*godbus.Conn, error)) *Client {
	c := &Client{}
	c.link = buslink.Start(ctx, o, func(actx context.Context) (*Conn, error) {
		conn, err := ConnectWith(actx, dial)
		if err != nil {
			return nil, err
		}
		// The watch lives as long as the connection: its channel closes
		// when the connection ends.
		ch, err := conn.watchUnitFiles(actx, context.Background())
		if err != nil {
			conn.Close()
			return nil, err
		}
		go func() {
			for range ch {
				c.link.Changed(conn)
			}
		}()
		return conn, nil
	})
	return c
}

// Events delivers what happened to the connection; see Client.
func (c *Client) Events() <-chan buslink.Event { return c.link.Events() }

// Close stops reconnecting and closes the connection.
func (c *Client) Close() { c.link.Close() }

// conn returns the current connection, or an error wrapping ErrUnavailable.
func (c *Client) conn(op string) (*Conn, error) {
	conn, ok, err := c.link.Current()
	if !ok {
		return nil, fmt.Errorf("%s: %w (%v)", op, ErrUnavailable, err)
	}
	return conn, nil
}

// failed classifies the error of a call made on conn.
func (c *Client) failed(conn *Conn, err error) error {
	if err == nil || !unanswered(err) {
		return err
	}
	conn.Close() // the link sees it end and connects again
	return fmt.Errorf("%w: %w", ErrUnavailable, err)
}

// UnitFileState is Conn.UnitFileState on the current connection.
func (c *Client) UnitFileState(unit string) (string, error) {
	conn, err := c.conn("unit file state of " + unit)
	if err != nil {
		return "", err
	}
	st, err := conn.UnitFileState(unit)
	return st, c.failed(conn, err)
}

// StartUnit is Conn.StartUnit on the current connection.
func (c *Client) StartUnit(ctx context.Context, name string) error {
	conn, err := c.conn("starting " + name)
	if err != nil {
		return err
	}
	done, err := conn.startJob(ctx, name)
	if err != nil {
		return c.failed(conn, err)
	}
	// A job that outlasts ctx was answered all the same: the connection is
	// not at fault.
	return waitJob(ctx, name, done)
}

// unanswered reports whether err says that systemd gave no answer: not a
// D-Bus error at all (the connection failed, the call's context ended), or
// one of the errors the bus itself replies with when a call cannot be
// delivered or answered. The names are those of dbus-daemon's
// dbus/dbus-protocol.h (DBUS_ERROR_SERVICE_UNKNOWN, ..._NAME_HAS_NO_OWNER,
// ..._NO_REPLY, ..._TIMEOUT, ..._TIMED_OUT, ..._DISCONNECTED,
// ..._NO_SERVER, ..._LIMITS_EXCEEDED and the DBUS_ERROR_SPAWN_* family of
// a failed activation); dbus-broker uses the same.
func unanswered(err error) bool {
	name := dbusErrorName(err)
	switch name {
	case "",
		"org.freedesktop.DBus.Error.ServiceUnknown",
		"org.freedesktop.DBus.Error.NameHasNoOwner",
		"org.freedesktop.DBus.Error.NoReply",
		"org.freedesktop.DBus.Error.Timeout",
		"org.freedesktop.DBus.Error.TimedOut",
		"org.freedesktop.DBus.Error.Disconnected",
		"org.freedesktop.DBus.Error.NoServer",
		"org.freedesktop.DBus.Error.LimitsExceeded":
		return true
	}
	return strings.HasPrefix(name, "org.freedesktop.DBus.Error.Spawn.")
}
