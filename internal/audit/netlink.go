package audit

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// The audit netlink protocol (include/uapi/linux/audit.h, kernel/audit.c):
// requests and replies on a NETLINK_AUDIT socket addressed to the kernel
// (pid 0); records, for a reader with CAP_AUDIT_READ, on the multicast group
// AUDIT_NLGRP_READLOG. The socket belongs to the caller's network
// namespace, and the kernel multicasts records only in the initial one: a
// daemon in a private network namespace gets none (verified, research A2).

// Status is the kernel's audit status (struct audit_status).
type Status struct {
	Enabled      uint32 // 0 off, 1 on, 2 on and locked (-e 2)
	Failure      uint32
	PID          uint32 // auditd's, 0 when none is registered
	RateLimit    uint32
	BacklogLimit uint32
	Lost         uint32 // records the kernel could not deliver, since boot
	Backlog      uint32
}

// Locked reports whether the rules are immutable until reboot (-e 2).
func (s Status) Locked() bool { return s.Enabled == 2 }

// Conn is a control connection to the kernel's audit subsystem.
type Conn struct {
	fd  int
	seq atomic.Uint32
}

// Dial opens a control connection. Reading the status needs no privilege
// beyond the socket; changing rules needs CAP_AUDIT_CONTROL.
func Dial() (*Conn, error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_AUDIT)
	if err != nil {
		return nil, fmt.Errorf("opening audit netlink socket: %w", err)
	}
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("binding audit netlink socket: %w", err)
	}
	tv := unix.Timeval{Sec: 5}
	_ = unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)
	return &Conn{fd: fd}, nil
}

// Close closes the connection.
func (c *Conn) Close() error { return unix.Close(c.fd) }

// request sends a message of type typ and returns the replies up to the
// kernel's ack (or NLMSG_DONE for a dump), failing with the kernel's errno.
func (c *Conn) request(typ uint16, payload []byte, dump bool) ([]netlinkMsg, error) {
	seq := c.seq.Add(1)
	flags := uint16(unix.NLM_F_REQUEST | unix.NLM_F_ACK)
	b := make([]byte, unix.NLMSG_HDRLEN, unix.NLMSG_HDRLEN+len(payload))
	b = append(b, payload...)
	binary.NativeEndian.PutUint32(b[0:], uint32(len(b)))
	binary.NativeEndian.PutUint16(b[4:], typ)
	binary.NativeEndian.PutUint16(b[6:], flags)
	binary.NativeEndian.PutUint32(b[8:], seq)
	if err := unix.Sendto(c.fd, b, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return nil, fmt.Errorf("sending audit request %d: %w", typ, err)
	}
	var out []netlinkMsg
	buf := make([]byte, 1<<16)
	acked := false
	for {
		n, _, err := unix.Recvfrom(c.fd, buf, 0)
		if err != nil {
			return nil, fmt.Errorf("reading audit reply to %d: %w", typ, err)
		}
		msgs, err := parseNetlink(buf[:n])
		if err != nil {
			return nil, err
		}
		for _, m := range msgs {
			if m.seq != seq {
				continue // a late reply to an earlier request
			}
			switch m.typ {
			case unix.NLMSG_ERROR:
				if len(m.data) < 4 {
					return nil, errors.New("short netlink error message")
				}
				if e := int32(binary.NativeEndian.Uint32(m.data)); e != 0 {
					return nil, fmt.Errorf("audit request %d: %w", typ, unix.Errno(-e))
				}
				acked = true
			case unix.NLMSG_DONE:
				return out, nil
			default:
				// buf is read into again: keep a copy.
				m.data = append([]byte(nil), m.data...)
				out = append(out, m)
			}
		}
		// The kernel acks the request itself at once; AUDIT_GET's reply
		// and a dump (ending in NLMSG_DONE) come from a kernel thread,
		// before or after the ack (kernel/audit.c audit_send_reply,
		// audit_list_rules_send). Wait for what this request needs.
		if acked && !dump && (typ != unix.AUDIT_GET || len(out) > 0) {
			return out, nil
		}
	}
}

type netlinkMsg struct {
	typ  uint16
	seq  uint32
	data []byte
}

func parseNetlink(b []byte) ([]netlinkMsg, error) {
	var out []netlinkMsg
	for len(b) >= unix.NLMSG_HDRLEN {
		l := int(binary.NativeEndian.Uint32(b[0:]))
		if l < unix.NLMSG_HDRLEN || l > len(b) {
			return out, fmt.Errorf("malformed netlink message: length %d of %d", l, len(b))
		}
		out = append(out, netlinkMsg{
			typ:  binary.NativeEndian.Uint16(b[4:]),
			seq:  binary.NativeEndian.Uint32(b[8:]),
			data: b[unix.NLMSG_HDRLEN:l],
		})
		al := (l + unix.NLMSG_ALIGNTO - 1) &^ (unix.NLMSG_ALIGNTO - 1)
		if al > len(b) {
			break
		}
		b = b[al:]
	}
	return out, nil
}

// Status asks the kernel for its audit status (AUDIT_GET).
func (c *Conn) Status() (Status, error) {
	ms, err := c.request(unix.AUDIT_GET, nil, false)
	if err != nil {
		return Status{}, err
	}
	for _, m := range ms {
		if m.typ == unix.AUDIT_GET && len(m.data) >= 32 {
			u := func(i int) uint32 { return binary.NativeEndian.Uint32(m.data[4*i:]) }
			// mask, enabled, failure, pid, rate_limit, backlog_limit, lost, backlog
			return Status{Enabled: u(1), Failure: u(2), PID: u(3), RateLimit: u(4), BacklogLimit: u(5), Lost: u(6), Backlog: u(7)}, nil
		}
	}
	return Status{}, errors.New("audit status: no AUDIT_GET reply")
}

// AddRule adds r (AUDIT_ADD_RULE); adding one that exists fails with
// EEXIST (wrapped).
func (c *Conn) AddRule(r Rule) error {
	_, err := c.request(unix.AUDIT_ADD_RULE, r.marshal(), false)
	if err != nil {
		return fmt.Errorf("adding audit rule %s: %w", r, err)
	}
	return nil
}

// DelRule deletes r (AUDIT_DEL_RULE); deleting one that is absent fails
// with ENOENT (wrapped).
func (c *Conn) DelRule(r Rule) error {
	_, err := c.request(unix.AUDIT_DEL_RULE, r.marshal(), false)
	if err != nil {
		return fmt.Errorf("deleting audit rule %s: %w", r, err)
	}
	return nil
}

// ListRules returns the kernel's rules (AUDIT_LIST_RULES), every list.
func (c *Conn) ListRules() ([]Rule, error) {
	ms, err := c.request(unix.AUDIT_LIST_RULES, nil, true)
	if err != nil {
		return nil, err
	}
	var out []Rule
	for _, m := range ms {
		if m.typ != unix.AUDIT_LIST_RULES {
			continue
		}
		r, err := unmarshalRule(m.data)
		if err != nil {
			return out, err
		}
		out = append(out, r)
	}
	return out, nil
}

// Reader receives the kernel's audit records on the multicast group
// AUDIT_NLGRP_READLOG (CAP_AUDIT_READ), whether or not auditd runs.
type Reader struct {
	f   *os.File
	buf []byte
}

// Listen joins the record multicast group.
func Listen() (*Reader, error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, unix.NETLINK_AUDIT)
	if err != nil {
		return nil, fmt.Errorf("opening audit netlink socket: %w", err)
	}
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK, Groups: 1 << (unix.AUDIT_NLGRP_READLOG - 1)}); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("joining the audit record multicast group (needs CAP_AUDIT_READ): %w", err)
	}
	// A burst must not overflow the socket: ask for a large buffer (the
	// kernel caps it at rmem_max without CAP_NET_ADMIN). An overflow is
	// reported by Read as ENOBUFS.
	_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF, 8<<20)
	return &Reader{f: os.NewFile(uintptr(fd), "audit-netlink"), buf: make([]byte, 1<<16)}, nil
}

// ErrOverrun is returned by Read when the socket buffer overflowed and
// records were lost before reaching us.
var ErrOverrun = errors.New("audit records lost: netlink socket buffer overrun")

// Read blocks for the next datagram and returns its records; messages that
// are no audit record are skipped. Close unblocks it (os.ErrClosed).
func (r *Reader) Read() ([]Record, error) {
	rc, err := r.f.SyscallConn()
	if err != nil {
		return nil, err
	}
	var n int
	var rerr error
	err = rc.Read(func(fd uintptr) bool {
		n, _, rerr = unix.Recvfrom(int(fd), r.buf, 0)
		return rerr != unix.EAGAIN
	})
	if err != nil {
		return nil, err
	}
	if rerr == unix.ENOBUFS {
		return nil, ErrOverrun
	}
	if rerr != nil {
		return nil, fmt.Errorf("reading audit records: %w", rerr)
	}
	msgs, err := parseNetlink(r.buf[:n])
	var out []Record
	for _, m := range msgs {
		if m.typ < 1100 { // control messages, not records
			continue
		}
		rec, perr := ParseRecord(m.typ, m.data)
		if perr != nil {
			continue
		}
		out = append(out, rec)
	}
	return out, err
}

// Close stops the reader.
func (r *Reader) Close() error { return r.f.Close() }
