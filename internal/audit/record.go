// Package audit reads the kernel's audit records of writes to declared
// paths and names their writers: who (login uid, session, uid, euid),
// with what (pid, ppid, comm, exe) and how (the system call, and whether it
// succeeded). It is the attribution behind `daemon --attribution=audit`.
//
// The record format is the kernel's (kernel/audit.c, auditsc.c): a netlink
// message whose type is the record type (AUDIT_SYSCALL 1300, AUDIT_PATH
// 1302, AUDIT_CWD 1307, AUDIT_EOE 1320, AUDIT_CONFIG_CHANGE 1305...) and
// whose payload is "audit(SEC.MSEC:SERIAL): key=value ...". A value is
// either quoted ("..."), hex-encoded (a name with a space, a quote or a
// control character: audit_log_untrustedstring), "(null)", or a bare word.
// The records of one event share their stamp and end with an EOE record.
//
// It promises:
//   - ParseRecord accepts every record the kernel writes and never
//     panics on one it does not (FuzzParseRecord); values come back decoded
//     (hex undone), never escaped for display: callers escape (internal/escape);
//   - the Assembler turns a stream of records into events, each complete
//     when its EOE arrives, and gives up on an event whose EOE never comes
//     after a bound, flagging it partial; it loses none (FuzzAssemble), and
//     what a record costs it does not grow with the events waiting
//     (TestAssemblerScales);
//   - the Ring holds a bounded number of events, indexed by inode and by
//     path, and answers the writers that touched a path or inode, newest
//     first.
//
// It does not promise:
//   - that every write is seen: an ioctl (chattr) is no audited write, a
//     lost record is lost (the kernel counts it), and rules may be deleted
//     under us — the health checks say so, never this package;
//   - anything about records from other audit users: only events whose key
//     is ours are kept by the Ring's callers.
package audit

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// Record types this package reads (include/uapi/linux/audit.h).
const (
	TypeSyscall      = 1300
	TypePath         = 1302
	TypeConfigChange = 1305
	TypeCWD          = 1307
	TypeEOE          = 1320
	TypeProctitle    = 1327
)

// Stamp is an event's identity: its time and the kernel's serial number.
type Stamp struct {
	Sec    int64
	Milli  int
	Serial uint64
}

func (s Stamp) String() string { return fmt.Sprintf("%d.%03d:%d", s.Sec, s.Milli, s.Serial) }

// Record is one audit record, its fields decoded, in the kernel's order.
type Record struct {
	Type   uint16
	Stamp  Stamp
	Fields []Field
}

// Field is one key=value of a record.
type Field struct {
	Key, Value string
}

// Get returns the first value of key, and whether the record has it.
func (r Record) Get(key string) (string, bool) {
	for _, f := range r.Fields {
		if f.Key == key {
			return f.Value, true
		}
	}
	return "", false
}

// ErrNotAudit is returned for a payload that does not start with an audit
// stamp.
var ErrNotAudit = errors.New("not an audit record: no audit(SEC.MSEC:SERIAL) stamp")

// ParseRecord parses the payload of a netlink audit message of type typ.
// Values the kernel hex-encoded are decoded; a quoted value loses its
// quotes; "(null)" stays as it is. The payload is copied once: keys and
// values are parts of that copy (a value keeps the whole record alive, so
// what is kept long is copied out: see interner).
func ParseRecord(typ uint16, payload []byte) (Record, error) {
	st, rest, err := parseStamp(bytes.TrimRight(payload, "\x00\n"))
	if err != nil {
		return Record{}, err
	}
	return parseFields(typ, st, string(rest))
}

// parseFields parses what follows a record's stamp.
func parseFields(typ uint16, st Stamp, rest string) (Record, error) {
	r := Record{Type: typ, Stamp: st, Fields: make([]Field, 0, strings.Count(rest, "="))}
	for len(rest) > 0 {
		rest = strings.TrimLeft(rest, " ")
		if len(rest) == 0 {
			break
		}
		eq := strings.IndexByte(rest, '=')
		sp := strings.IndexByte(rest, ' ')
		if eq < 0 || (sp >= 0 && sp < eq) {
			// A word without a value (the kernel writes none, but a
			// userspace record may): skip it.
			if sp < 0 {
				break
			}
			rest = rest[sp:]
			continue
		}
		key := rest[:eq]
		rest = rest[eq+1:]
		var val string
		switch {
		case len(rest) > 0 && (rest[0] == '"' || rest[0] == '\''):
			// msg='...' of userspace records is kept whole.
			end := strings.IndexByte(rest[1:], rest[0])
			if end < 0 {
				return r, fmt.Errorf("audit record %s: unterminated quote in %s=", st, key)
			}
			val = rest[1 : 1+end]
			rest = rest[2+end:]
		default:
			end := strings.IndexByte(rest, ' ')
			if end < 0 {
				end = len(rest)
			}
			val = rest[:end]
			rest = rest[end:]
			if hexEncoded(key) {
				if b, ok := decodeHex(val); ok {
					val = string(b)
				}
			}
		}
		r.Fields = append(r.Fields, Field{key, val})
	}
	return r, nil
}

// repeats parses records, reusing the fields of the last record of the
// same type when all that follows the stamp is the same: a writer in a
// loop makes records that differ in their stamps alone, and each of those
// is compared, not parsed again. Fields are never changed once parsed, so
// records may share them.
type repeats struct {
	last map[uint16]parsedRecord
}

type parsedRecord struct {
	body   string // what followed the stamp
	fields []Field
}

func (rp *repeats) parse(typ uint16, payload []byte) (Record, error) {
	st, rest, err := parseStamp(bytes.TrimRight(payload, "\x00\n"))
	if err != nil {
		return Record{}, err
	}
	if l, ok := rp.last[typ]; ok && l.body == string(rest) {
		return Record{Type: typ, Stamp: st, Fields: l.fields}, nil
	}
	body := string(rest)
	r, err := parseFields(typ, st, body)
	if err != nil {
		return r, err
	}
	if rp.last == nil {
		rp.last = map[uint16]parsedRecord{}
	}
	rp.last[typ] = parsedRecord{body, r.Fields}
	return r, nil
}

// hexEncoded names the fields the kernel writes with
// audit_log_untrustedstring (or audit_log_n_hex): unquoted, they are hex.
func hexEncoded(key string) bool {
	switch key {
	case "name", "cwd", "exe", "comm", "key", "proctitle", "path", "old", "new":
		return true
	}
	return false
}

func decodeHex(w string) ([]byte, bool) {
	if len(w) == 0 || len(w)%2 != 0 || w == "(null)" {
		return nil, false
	}
	b, err := hex.DecodeString(w)
	if err != nil {
		return nil, false
	}
	return b, true
}

// parseStamp reads "audit(SEC.MSEC:SERIAL): " off the front of p.
func parseStamp(p []byte) (Stamp, []byte, error) {
	const prefix = "audit("
	i := bytes.Index(p, []byte(prefix))
	if i < 0 {
		return Stamp{}, nil, ErrNotAudit
	}
	p = p[i+len(prefix):]
	end := bytes.IndexByte(p, ')')
	if end < 0 {
		return Stamp{}, nil, ErrNotAudit
	}
	inner := p[:end]
	rest := bytes.TrimPrefix(p[end+1:], []byte(":"))
	dot := bytes.IndexByte(inner, '.')
	colon := bytes.IndexByte(inner, ':')
	if dot < 0 || colon < dot {
		return Stamp{}, nil, ErrNotAudit
	}
	sec, ok1 := decimal(inner[:dot], 18)
	ms, ok2 := decimal(inner[dot+1:colon], 9)
	serial, ok3 := decimal(inner[colon+1:], 19)
	if !ok1 || !ok2 || !ok3 {
		return Stamp{}, nil, ErrNotAudit
	}
	return Stamp{int64(sec), int(ms), serial}, rest, nil
}

// decimal reads an unsigned decimal number of at most maxDigits digits
// (so that it cannot overflow what it is read into).
func decimal(b []byte, maxDigits int) (uint64, bool) {
	if len(b) == 0 || len(b) > maxDigits {
		return 0, false
	}
	var n uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + uint64(c-'0')
	}
	return n, true
}
