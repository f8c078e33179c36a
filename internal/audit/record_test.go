package audit

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// Records as this kernel wrote them for a writer that set its login uid to
// 1000, then dropped to uid 65534 with setpriv and appended to a watched
// file it may not write (research A2).
var deniedWrite = []struct {
	typ     uint16
	payload string
}{
	{TypeSyscall, `audit(1764770000.123:456): arch=c000003e syscall=257 success=no exit=-13 a0=ffffff9c a1=55d0 a2=441 a3=1b6 items=1 ppid=4241 pid=4242 auid=1000 uid=65534 gid=65534 euid=65534 suid=65534 fsuid=65534 egid=65534 sgid=65534 fsgid=65534 tty=pts0 ses=3 comm="sh" exe="/usr/bin/dash" subj=unconfined key="drift-monitor"`},
	{TypeCWD, `audit(1764770000.123:456): cwd="/root"`},
	{TypePath, `audit(1764770000.123:456): item=0 name="/etc/motd" inode=1311 dev=fe:01 mode=0100644 ouid=0 ogid=0 rdev=00:00 nametype=NORMAL cap_fp=0 cap_fi=0 cap_fe=0 cap_fver=0 cap_frootid=0`},
	{TypeProctitle, `audit(1764770000.123:456): proctitle=7368002D630065636B6F2079203E3E202F6574632F6D6F7464`},
}

func TestParseRecord(t *testing.T) {
	r, err := ParseRecord(deniedWrite[0].typ, []byte(deniedWrite[0].payload))
	if err != nil {
		t.Fatal(err)
	}
	if want := (Stamp{1764770000, 123, 456}); r.Stamp != want {
		t.Errorf("stamp = %v, want %v", r.Stamp, want)
	}
	for k, want := range map[string]string{"syscall": "257", "comm": "sh", "exe": "/usr/bin/dash", "key": "drift-monitor", "auid": "1000"} {
		if got, _ := r.Get(k); got != want {
			t.Errorf("%s = %q, want %q", k, got, want)
		}
	}
}

func TestParseHexAndNull(t *testing.T) {
	// A name with a space is hex-encoded by the kernel; an unset key is
	// (null).
	r, err := ParseRecord(TypePath, []byte(`audit(1.002:3): item=1 name=2F6574632F612062 inode=7 dev=00:2a nametype=CREATE`))
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := r.Get("name"); got != "/etc/a b" {
		t.Errorf("name = %q, want /etc/a b", got)
	}
	r, err = ParseRecord(TypeSyscall, []byte(`audit(1.002:3): syscall=90 success=yes exit=0 key=(null) comm=636174`))
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := r.Get("key"); got != "(null)" {
		t.Errorf("key = %q, want (null)", got)
	}
	if got, _ := r.Get("comm"); got != "cat" {
		t.Errorf("comm = %q, want cat", got)
	}
}

func TestParseNotAudit(t *testing.T) {
	for _, p := range []string{"", "hello", "audit(x.1:2): a=b", "audit(1.2): a=b"} {
		if _, err := ParseRecord(TypeSyscall, []byte(p)); err == nil {
			t.Errorf("ParseRecord(%q) = nil error", p)
		}
	}
	if _, err := ParseRecord(TypeSyscall, []byte(`audit(1.2:3): comm="unterminated`)); err == nil {
		t.Error("an unterminated quote parsed")
	}
}

func TestEvent(t *testing.T) {
	var rs []Record
	for _, d := range deniedWrite {
		r, err := ParseRecord(d.typ, []byte(d.payload))
		if err != nil {
			t.Fatal(err)
		}
		rs = append(rs, r)
	}
	e := event(rs, false, nil)
	want := Writer{PID: 4242, PPID: 4241, UID: 65534, EUID: 65534, AUID: 1000, Session: 3,
		Comm: "sh", Exe: "/usr/bin/dash", Syscall: "openat", Success: false, Exit: -13}
	if diff := cmp.Diff(want, e.Writer); diff != "" {
		t.Errorf("writer (-want +got):\n%s", diff)
	}
	if len(e.Paths) != 1 || e.Paths[0].Path != "/etc/motd" || e.Paths[0].Inode != (Inode{"fe:01", 1311}) {
		t.Errorf("paths = %+v", e.Paths)
	}
	if e.Key != "drift-monitor" || e.CWD != "/root" {
		t.Errorf("key %q cwd %q", e.Key, e.CWD)
	}
}

func TestRelativeNames(t *testing.T) {
	mk := func(syscall, name string) Event {
		s, _ := ParseRecord(TypeSyscall, []byte(`audit(1.0:1): arch=c000003e syscall=`+syscall+` success=yes`))
		c, _ := ParseRecord(TypeCWD, []byte(`audit(1.0:1): cwd="/etc"`))
		p, _ := ParseRecord(TypePath, []byte(`audit(1.0:1): item=0 name="`+name+`" inode=5 dev=fe:01 nametype=NORMAL`))
		return event([]Record{s, c, p}, false, nil)
	}
	// chmod(2) takes a CWD-relative name; fchmodat(2) a name that may be
	// relative to a directory descriptor the record does not name.
	if got := mk("90", "d/motd").Paths[0].Path; got != "/etc/d/motd" {
		t.Errorf("chmod d/motd from /etc: Path %q, want /etc/d/motd", got)
	}
	if got := mk("268", "motd").Paths[0].Path; got != "" {
		t.Errorf("fchmodat motd: Path %q, want \"\" (maybe dirfd-relative)", got)
	}
}

func FuzzParseRecord(f *testing.F) {
	for _, d := range deniedWrite {
		f.Add(d.payload)
	}
	f.Add(`audit(1.2:3): name=2F6574 x="`)
	f.Fuzz(func(t *testing.T, p string) {
		r, err := ParseRecord(TypePath, []byte(p))
		if err == nil {
			_ = event([]Record{r}, true, nil)
		}
	})
}

// FuzzRepeats: the Reader's parse, which reuses the fields of a record
// that repeats the last one of its type but for the stamp, gives what
// ParseRecord gives, whatever came before.
func FuzzRepeats(f *testing.F) {
	f.Add(deniedWrite[0].payload, `audit(1764770000.124:457): `+deniedWrite[0].payload[len(`audit(1764770000.123:456): `):])
	f.Add(deniedWrite[2].payload, deniedWrite[2].payload)
	f.Add(`audit(1.2:3): a=b`, `audit(1.2:4): a=c`)
	f.Add(`audit(1.2:3): a="b`, `audit(1.2:4): a="b`)
	f.Fuzz(func(t *testing.T, first, second string) {
		var rp repeats
		rp.parse(TypePath, []byte(first))
		got, gotErr := rp.parse(TypePath, []byte(second))
		want, wantErr := ParseRecord(TypePath, []byte(second))
		if (gotErr != nil) != (wantErr != nil) {
			t.Fatalf("after %q, parse(%q): error %v, ParseRecord's %v", first, second, gotErr, wantErr)
		}
		if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); gotErr == nil && diff != "" {
			t.Errorf("after %q, parse(%q) (-ParseRecord +parse):\n%s", first, second, diff)
		}
	})
}
