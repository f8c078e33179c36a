package audit

import (
	"fmt"
	"runtime"
	"testing"
	"time"
)

func rec(t *testing.T, typ uint16, payload string) Record {
	t.Helper()
	r, err := ParseRecord(typ, []byte(payload))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestAssembler(t *testing.T) {
	a := NewAssembler()
	now := time.Unix(100, 0)
	// Two events interleaved; one completes with its EOE.
	for _, r := range []Record{
		rec(t, TypeSyscall, `audit(1.000:1): syscall=82 success=yes pid=7 comm="sed" key="drift-monitor"`),
		rec(t, TypeSyscall, `audit(1.000:2): syscall=90 success=yes pid=8 comm="chmod" key="drift-monitor"`),
		rec(t, TypePath, `audit(1.000:1): item=0 name="/etc/motd" inode=5 dev=fe:01 nametype=CREATE`),
	} {
		if got := a.Add(r, now); len(got) != 0 {
			t.Fatalf("event before its EOE: %+v", got)
		}
	}
	got := a.Add(rec(t, TypeEOE, `audit(1.000:1): `), now)
	if len(got) != 1 || got[0].Writer.Comm != "sed" || len(got[0].Paths) != 1 || got[0].Partial {
		t.Fatalf("on EOE: %+v", got)
	}
	// A CONFIG_CHANGE is an event at once.
	got = a.Add(rec(t, TypeConfigChange, `audit(1.000:3): auid=0 ses=1 op=remove_rule key="drift-monitor" list=4 res=1`), now)
	if len(got) != 1 || got[0].Config == nil || got[0].Config.Op != "remove_rule" || !got[0].Config.OK || got[0].Key != Key {
		t.Fatalf("config change: %+v", got)
	}
	// The one without EOE is flushed partial after the bound, not before.
	if got := a.Flush(now.Add(a.Bound - time.Millisecond)); len(got) != 0 {
		t.Fatalf("flushed early: %+v", got)
	}
	got = a.Flush(now.Add(a.Bound))
	if len(got) != 1 || !got[0].Partial || got[0].Writer.Comm != "chmod" {
		t.Fatalf("flush: %+v", got)
	}
	if a.Pending() != 0 {
		t.Errorf("pending %d after flush", a.Pending())
	}
	// MaxPending bounds what waits.
	a.MaxPending = 2
	var forced []Event
	for i := 10; i < 15; i++ {
		forced = append(forced, a.Add(rec(t, TypeSyscall, fmt.Sprintf(`audit(1.000:%d): syscall=2 pid=%d`, i, i)), now)...)
	}
	if a.Pending() != 2 || len(forced) != 3 || forced[0].Writer.PID != 10 || !forced[0].Partial {
		t.Errorf("pending %d, forced %+v", a.Pending(), forced)
	}
}

func ev(serial uint64, comm string, items ...PathItem) Event {
	return Event{Stamp: Stamp{Sec: int64(serial), Serial: serial}, Key: Key, Writer: Writer{PID: int(serial), Comm: comm, Success: true}, Paths: items}
}

func TestRing(t *testing.T) {
	parent := Inode{"fe:01", 2}
	oldIno, newIno := Inode{"fe:01", 10}, Inode{"fe:01", 11}
	r := NewRing(3)
	// chmod by path and inode; sed's rename: old inode deleted, new created
	// under the parent by base name only (a dirfd-relative name).
	r.Add(ev(1, "chmod", PathItem{Name: "/etc/motd", Path: "/etc/motd", Inode: oldIno, NameType: "NORMAL"}))
	r.Add(ev(2, "sed",
		PathItem{Name: "", Inode: parent, NameType: "PARENT"},
		PathItem{Name: "motd", Inode: oldIno, NameType: "DELETE"},
		PathItem{Name: "motd", Inode: newIno, NameType: "CREATE"}))
	r.Add(ev(3, "other", PathItem{Name: "/etc/issue", Path: "/etc/issue", Inode: Inode{"fe:01", 12}, NameType: "NORMAL"}))
	tests := []struct {
		name string
		q    Query
		want []string
	}{
		{"path", Query{Path: "/etc/motd"}, []string{"chmod"}},
		{"former inode", Query{Former: []Inode{oldIno}}, []string{"sed", "chmod"}},
		// A current inode that a DELETE named is a reused number.
		{"current inode", Query{Inodes: []Inode{oldIno}}, []string{"chmod"}},
		{"new inode", Query{Inodes: []Inode{newIno}}, []string{"sed"}},
		{"parent entry", Query{Path: "/etc/motd", Parent: parent}, []string{"sed", "chmod"}},
		{"other entry of the parent", Query{Path: "/etc/hosts", Parent: parent}, nil},
		{"inode on another device", Query{Inodes: []Inode{{"fe:02", 10}}}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, e := range r.Find(tt.q) {
				got = append(got, e.Writer.Comm)
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("Find = %v, want %v (newest first)", got, tt.want)
			}
		})
	}
	if !r.Complete(time.Unix(0, 0)) {
		t.Error("nothing evicted yet, but not complete")
	}
	// A fourth evicts the chmod from every index.
	r.Add(ev(4, "late"))
	if got := r.Find(Query{Path: "/etc/motd"}); len(got) != 0 {
		t.Errorf("evicted event still found: %+v", got)
	}
	if r.Complete(time.Unix(1, 0)) || !r.Complete(time.Unix(2, 0)) {
		t.Error("Complete does not say what was evicted")
	}
	if r.Len() != 3 || r.Evicted() != 1 || len(r.byPath) != 1 {
		t.Errorf("len %d evicted %d paths indexed %d", r.Len(), r.Evicted(), len(r.byPath))
	}
}

// BenchmarkRingMemory fills a ring with writes to 100,000 distinct declared
// paths (more than it holds: the bound is the ring's, not the paths') and
// reports the heap it keeps.
func BenchmarkRingMemory(b *testing.B) {
	const declared = 100_000
	for _, size := range []int{4096, 16384} {
		b.Run(fmt.Sprintf("ring=%d/paths=%d", size, declared), func(b *testing.B) {
			var kept uint64
			for i := 0; i < b.N; i++ {
				runtime.GC()
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				r := NewRing(size)
				for p := 0; p < declared; p++ {
					dir := fmt.Sprintf("/etc/app%03d", p%1000)
					name := fmt.Sprintf("%s/file%06d.conf", dir, p)
					r.Add(Event{
						Stamp: Stamp{Sec: int64(p), Serial: uint64(p)}, Key: Key,
						Writer: Writer{PID: 4242, Comm: "sed", Exe: "/usr/bin/sed", Syscall: "rename", Success: true},
						CWD:    "/root",
						Paths: []PathItem{
							{Name: dir + "/", Path: dir, Inode: Inode{"fe:01", uint64(p % 1000)}, NameType: "PARENT"},
							{Name: name, Path: name, Inode: Inode{"fe:01", uint64(1000 + p)}, NameType: "DELETE"},
							{Name: name, Path: name, Inode: Inode{"fe:01", uint64(200000 + p)}, NameType: "CREATE"},
						},
					})
				}
				runtime.GC()
				runtime.ReadMemStats(&after)
				kept = after.HeapAlloc - before.HeapAlloc
				runtime.KeepAlive(r)
			}
			b.ReportMetric(float64(kept), "ring-bytes")
			b.ReportMetric(float64(kept)/float64(size), "bytes/event")
		})
	}
}

// TestRingRepeats: a writer that writes the same node again and again (a
// script appending in a loop) takes one place in the ring, stamped with
// its last write, so that it evicts no other writer; a write between two
// of its writes, or one naming the node otherwise, is an event of its own.
func TestRingRepeats(t *testing.T) {
	motd := PathItem{Name: "/etc/motd", Path: "/etc/motd", Inode: Inode{"fe:01", 10}, NameType: "NORMAL"}
	r := NewRing(3)
	r.Add(ev(1, "chmod", motd))
	for i := uint64(2); i < 10_000; i++ {
		e := ev(2, "sh", motd)
		e.Stamp = Stamp{Sec: int64(i), Serial: i}
		r.Add(e)
	}
	got := r.Find(Query{Path: "/etc/motd"})
	if len(got) != 2 || got[0].Writer.Comm != "sh" || got[1].Writer.Comm != "chmod" {
		t.Fatalf("Find after a loop of appends = %+v, want sh then chmod", got)
	}
	if got[0].Stamp.Serial != 9_999 || r.Len() != 2 || r.Evicted() != 0 {
		t.Errorf("the repeated write: stamp %v, %d held, %d evicted; want the last stamp, 2 held, none evicted", got[0].Stamp, r.Len(), r.Evicted())
	}
	// Another writer between two of sh's writes; then sh again, and sh
	// renaming (another system call): each an event.
	r.Add(ev(3, "cp", motd))
	r.Add(ev(2, "sh", motd))
	renamed := ev(2, "sh", motd)
	renamed.Writer.Syscall = "rename"
	r.Add(renamed)
	var comms []string
	for _, e := range r.Find(Query{Path: "/etc/motd"}) {
		comms = append(comms, e.Writer.Comm+"/"+e.Writer.Syscall)
	}
	if want := "[sh/rename sh/ cp/]"; fmt.Sprint(comms) != want {
		t.Errorf("Find = %v, want %s", comms, want)
	}
}
