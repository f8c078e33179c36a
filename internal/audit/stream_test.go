package audit

import (
	"fmt"
	"testing"
	"time"

	"github.com/drift-monitor/drift-monitor/test/harness"
)

// backlog is the most records the kernel holds for its readers at once as
// Fedora configures it (audit's rules: -b 8192, audit_backlog_limit): the
// largest burst of records a reader gets.
const backlog = 8192

// TestAssemblerScales: what a record costs the Assembler does not grow
// with the events waiting for their EOE. A burst of ten times the kernel's
// backlog of records that no EOE completes (a userspace record, a lost
// EOE), each read alone and followed by the Flush the daemon makes after
// every read, all within the bound, with room for them all: linear in the
// burst, and every event comes out once.
func TestAssemblerScales(t *testing.T) {
	bursts := map[int][]Record{}
	for _, scale := range []int{1, 10} {
		for i := range backlog * scale {
			bursts[scale] = append(bursts[scale], Record{Type: TypeSyscall, Stamp: Stamp{Sec: 1, Serial: uint64(i + 1)},
				Fields: []Field{{"syscall", "2"}, {"pid", "7"}, {"comm", "sh"}}})
		}
	}
	start := time.Unix(100, 0)
	harness.Linear(t, "assembling a burst of records without EOE", func(scale int) {
		a := NewAssembler()
		a.MaxPending = len(bursts[scale])
		out := 0
		for i, r := range bursts[scale] {
			now := start.Add(time.Duration(i) * time.Microsecond)
			out += len(a.Add(r, now)) + len(a.Flush(now))
		}
		out += len(a.Flush(start.Add(time.Hour)))
		if out != len(bursts[scale]) || a.Pending() != 0 {
			t.Fatalf("%d events out of %d records, %d pending", out, len(bursts[scale]), a.Pending())
		}
	})
}

// FuzzAssemble: whatever the stream of records (types, stamps, arrival
// times; one op per byte pair), the Assembler never holds more than
// MaxPending events, puts out only events whose records share a stamp,
// complete ones only on their EOE, and loses none: every event that began
// comes out exactly once, complete or partial, by the final Flush.
func FuzzAssemble(f *testing.F) {
	f.Add([]byte{0x00, 0x01, 0x10, 0x01, 0x20, 0x01, 0x30, 0x02}, uint8(2))
	f.Add([]byte{0x00, 0x01, 0x00, 0x02, 0x00, 0x03, 0x00, 0x04, 0x00, 0x05}, uint8(2))
	f.Add([]byte{0x40, 0x01, 0x00, 0x01, 0x30, 0x01, 0x00, 0x01, 0x30, 0x01}, uint8(0))
	f.Fuzz(func(t *testing.T, ops []byte, maxPending uint8) {
		a := NewAssembler()
		a.MaxPending = int(maxPending)%8 + 1
		now := time.Unix(100, 0)
		types := []uint16{TypeSyscall, TypePath, TypeCWD, TypeEOE, TypeConfigChange, TypeProctitle, 1112}
		began, out := 0, 0
		open := map[Stamp]bool{}
		check := func(evs []Event) {
			for _, e := range evs {
				if e.Config != nil {
					continue
				}
				if !open[e.Stamp] {
					t.Fatalf("event %s came out but was not waiting", e.Stamp)
				}
				delete(open, e.Stamp)
				out++
			}
		}
		for i := 0; i+1 < len(ops); i += 2 {
			typ := types[int(ops[i]>>4)%len(types)]
			st := Stamp{Sec: 1, Serial: uint64(ops[i+1] % 16)}
			now = now.Add(time.Duration(ops[i]&0x0f) * 300 * time.Millisecond)
			if typ != TypeEOE && typ != TypeConfigChange && !open[st] {
				open[st] = true
				began++
			}
			evs := a.Add(Record{Type: typ, Stamp: st, Fields: []Field{{"key", "k"}}}, now)
			for _, e := range evs {
				if typ == TypeEOE && e.Stamp == st && e.Partial {
					t.Fatalf("the EOE of %s put it out partial", st)
				}
			}
			check(evs)
			check(a.Flush(now))
			if a.Pending() > a.MaxPending {
				t.Fatalf("%d events pending, MaxPending %d", a.Pending(), a.MaxPending)
			}
		}
		check(a.Flush(now.Add(a.Bound)))
		if a.Pending() != 0 || out != began || len(open) != 0 {
			t.Fatalf("%d events began, %d came out, %d pending (%v)", began, out, a.Pending(), fmt.Sprint(open))
		}
	})
}

// TestAssemblerKeepsLittle: events completed behind one that waits for its
// EOE do not pile up in what the Assembler keeps.
func TestAssemblerKeepsLittle(t *testing.T) {
	a := NewAssembler()
	now := time.Unix(100, 0)
	a.Add(Record{Type: TypeSyscall, Stamp: Stamp{Sec: 1, Serial: 1}}, now)
	for i := uint64(2); i < 100_000; i++ {
		a.Add(Record{Type: TypeSyscall, Stamp: Stamp{Sec: 1, Serial: i}}, now)
		a.Add(Record{Type: TypeEOE, Stamp: Stamp{Sec: 1, Serial: i}}, now)
	}
	if a.Pending() != 1 || len(a.began)-a.head > 4*(a.MaxPending+1) {
		t.Errorf("%d pending, %d kept in order of beginning", a.Pending(), len(a.began)-a.head)
	}
}

// FuzzReadBuffer: whatever a datagram from the audit socket holds, the
// reader's parse (parseNetlink, then ParseRecord of each record) never
// panics and never reads outside it: what the Reader passes on is
// within the bytes received.
func FuzzReadBuffer(f *testing.F) {
	msg := func(typ uint16, payload string) []byte {
		b := make([]byte, 16, 16+len(payload)+3)
		l := 16 + len(payload)
		b[0], b[1], b[2], b[3] = byte(l), byte(l>>8), byte(l>>16), byte(l>>24)
		b[4], b[5] = byte(typ), byte(typ>>8)
		b = append(b, payload...)
		for len(b)%4 != 0 {
			b = append(b, 0)
		}
		return b
	}
	f.Add(append(msg(TypeSyscall, `audit(1.000:1): syscall=82 success=yes pid=7 comm="sed"`), msg(TypeEOE, `audit(1.000:1): `)...))
	f.Add(msg(TypePath, `audit(1.000:2): item=0 name=2F6574632F6D6F7464 inode=5`))
	f.Add([]byte{0xff, 0xff, 0, 0, 0x14, 0x05, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		msgs, _ := parseNetlink(b)
		total := 0
		for _, m := range msgs {
			total += len(m.data)
			if m.typ >= 1100 {
				if r, err := ParseRecord(m.typ, m.data); err == nil {
					event([]Record{r}, true, nil)
				}
			}
		}
		if total > len(b) {
			t.Fatalf("%d bytes of messages in a datagram of %d", total, len(b))
		}
	})
}
