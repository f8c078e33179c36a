package audit

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"unsafe"

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
	f *os.File
	// A read takes up to readBatch datagrams (one record each) in one
	// recvmmsg: under a write storm records come in bursts, and each
	// system call the daemon makes costs it the kernel's audit entry and
	// exit too while rules exist.
	bufs    [][]byte
	iovs    []unix.Iovec
	hdrs    []unix.Mmsghdr
	repeats repeats
}

// EventTypes are the record types an Event is made of (and the
// Assembler completes events with): a reader of events needs no other.
var EventTypes = []uint16{TypeSyscall, TypePath, TypeConfigChange, TypeCWD, TypeEOE}

const (
	readBatch = 32
	// recordBuf holds one datagram: a record is at most
	// MAX_AUDIT_MESSAGE_LENGTH (8970) bytes after its netlink header
	// (include/uapi/linux/audit.h).
	recordBuf = 16 << 10
)

// Listen joins the record multicast group. With types, the kernel hands
// the reader only records of those types: a filter on the socket drops the
// others before they are queued to it (a PROCTITLE record comes with every
// audited system call, and other audit users' records with theirs).
func Listen(types ...uint16) (*Reader, error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, unix.NETLINK_AUDIT)
	if err != nil {
		return nil, fmt.Errorf("opening audit netlink socket: %w", err)
	}
	if len(types) > 0 {
		prog := typeFilter(types)
		if err := unix.SetsockoptSockFprog(fd, unix.SOL_SOCKET, unix.SO_ATTACH_FILTER, &unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}); err != nil {
			unix.Close(fd)
			return nil, fmt.Errorf("filtering the audit netlink socket: %w", err)
		}
	}
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK, Groups: 1 << (unix.AUDIT_NLGRP_READLOG - 1)}); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("joining the audit record multicast group (needs CAP_AUDIT_READ): %w", err)
	}
	// A burst must not overflow the socket: ask for a large buffer (the
	// kernel caps it at rmem_max without CAP_NET_ADMIN). An overflow is
	// reported by Read as ErrOverrun.
	_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF, 8<<20)
	r := &Reader{f: os.NewFile(uintptr(fd), "audit-netlink"), bufs: make([][]byte, readBatch), iovs: make([]unix.Iovec, readBatch), hdrs: make([]unix.Mmsghdr, readBatch)}
	for i := range r.bufs {
		r.bufs[i] = make([]byte, recordBuf)
		r.iovs[i].Base = &r.bufs[i][0]
		r.iovs[i].SetLen(recordBuf)
		r.hdrs[i].Hdr.Iov = &r.iovs[i]
		r.hdrs[i].Hdr.SetIovlen(1)
	}
	return r, nil
}

// typeFilter is a classic BPF program that accepts a datagram whose
// (first) netlink message has one of types, and drops any other. The
// filter reads the header's nlmsg_type, in the host's byte order, with a
// load that reads in network order (BPF_ABS): the values compared are
// the types' bytes as the host lays them out, read big-endian.
func typeFilter(types []uint16) []unix.SockFilter {
	n := len(types)
	prog := []unix.SockFilter{{Code: unix.BPF_LD | unix.BPF_H | unix.BPF_ABS, K: 4}} // nlmsghdr.nlmsg_type
	for i, t := range types {
		var b [2]byte
		binary.NativeEndian.PutUint16(b[:], t)
		// Matched: on to the accepting return, n-i instructions on.
		prog = append(prog, unix.SockFilter{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: uint32(binary.BigEndian.Uint16(b[:])), Jt: uint8(n - i)})
	}
	return append(prog,
		unix.SockFilter{Code: unix.BPF_RET | unix.BPF_K, K: 0},          // drop
		unix.SockFilter{Code: unix.BPF_RET | unix.BPF_K, K: 0xffffffff}, // the whole datagram
	)
}

// ErrOverrun is returned by Read when the socket buffer overflowed and
// records were lost before reaching us.
var ErrOverrun = errors.New("audit records lost: netlink socket buffer overrun")

// Read blocks for the next datagrams and returns their records, in the
// order the kernel sent them; messages that are no audit record are
// skipped. Close unblocks it (os.ErrClosed).
func (r *Reader) Read() ([]Record, error) {
	rc, err := r.f.SyscallConn()
	if err != nil {
		return nil, err
	}
	var n int
	var rerr error
	err = rc.Read(func(fd uintptr) bool {
		n, rerr = r.recvmmsg(fd)
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
	var out []Record
	var perr error
	for i := 0; i < n; i++ {
		msgs, err := parseNetlink(r.bufs[i][:min(int(r.hdrs[i].Len), recordBuf)])
		if err != nil {
			perr = err
		}
		for _, m := range msgs {
			if m.typ < 1100 { // control messages, not records
				continue
			}
			rec, err := r.repeats.parse(m.typ, m.data)
			if err != nil {
				continue
			}
			out = append(out, rec)
		}
	}
	return out, perr
}

// recvmmsg receives up to readBatch datagrams without blocking; once some
// came, an error (an overrun) is the next call's (net/socket.c
// do_recvmmsg keeps it for the socket).
func (r *Reader) recvmmsg(fd uintptr) (int, error) {
	for i := range r.hdrs {
		r.hdrs[i].Len = 0
		r.hdrs[i].Hdr.Flags = 0
	}
	n, _, errno := unix.Syscall6(unix.SYS_RECVMMSG, fd, uintptr(unsafe.Pointer(&r.hdrs[0])), uintptr(len(r.hdrs)), unix.MSG_DONTWAIT, 0, 0)
	if errno != 0 {
		return 0, errno
	}
	return int(n), nil
}

// Close stops the reader.
func (r *Reader) Close() error { return r.f.Close() }
