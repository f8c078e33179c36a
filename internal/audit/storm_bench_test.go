package audit

import (
	"fmt"
	"testing"
	"time"
)

// stormRecords are the records the kernel writes for one audited append
// (`echo x >>F` in a shell: openat with O_WRONLY|O_CREAT|O_APPEND), as
// this kernel wrote them, with the stamp's serial left to fill in: what
// --attribution=audit reads for every append of a write storm.
var stormRecords = []struct {
	typ     uint16
	payload string
}{
	{TypeSyscall, `audit(1796483320.600:%d): arch=c000003e syscall=257 success=yes exit=3 a0=ffffff9c a1=55d0c6a5c2a0 a2=441 a3=1b6 items=1 ppid=5788 pid=5789 auid=4294967295 uid=0 gid=0 euid=0 suid=0 fsuid=0 egid=0 sgid=0 fsgid=0 tty=(none) ses=4294967295 comm="sh" exe="/usr/bin/dash" subj=unconfined key="drift-monitor"`},
	{TypeCWD, `audit(1796483320.600:%d): cwd="/tmp/storm-x"`},
	{TypePath, `audit(1796483320.600:%d): item=0 name="/var/tmp/drift-bench/storm/root/etc/storm.conf" inode=9990657 dev=fe:00 mode=0100644 ouid=0 ogid=0 rdev=00:00 nametype=NORMAL cap_fp=0 cap_fi=0 cap_fe=0 cap_fver=0 cap_frootid=0`},
	{TypeProctitle, `audit(1796483320.600:%d): proctitle=7368002D6300693D303B207768696C65205B20222469222D6C742022243122205D3B20646F206563686F2078203E3E222430223B20693D2428286924312929`},
	{TypeEOE, `audit(1796483320.600:%d): `},
}

// BenchmarkStormEvent is what one audited append costs the daemon's reader
// once its records are received: each record parsed (as the Reader does:
// a repeat of the last record of its type compared, not parsed), the event
// assembled and filed in the ring the writers are looked up in.
func BenchmarkStormEvent(b *testing.B) {
	payloads := make([][][]byte, 1024)
	for i := range payloads {
		for _, r := range stormRecords {
			payloads[i] = append(payloads[i], []byte(fmt.Sprintf(r.payload, i+1)))
		}
	}
	var rp repeats
	asm := NewAssembler()
	ring := NewRing(4096)
	now := time.Unix(100, 0)
	var evs []Event
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		for k, r := range stormRecords {
			rec, err := rp.parse(r.typ, payloads[i%len(payloads)][k])
			if err != nil {
				b.Fatal(err)
			}
			evs = asm.Append(evs[:0], rec, now)
			for _, e := range evs {
				ring.Add(e)
			}
		}
	}
}
