package audit

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// readRecords reads a file of records as the netlink reader receives
// them: one per line, the record type, a space, the payload.
func readRecords(t *testing.T, name string) []Record {
	t.Helper()
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var rs []Record
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		typ, payload, ok := strings.Cut(sc.Text(), " ")
		n, err := strconv.ParseUint(typ, 10, 16)
		if !ok || err != nil {
			t.Fatalf("%s: %q: not TYPE PAYLOAD", name, sc.Text())
		}
		r, err := ParseRecord(uint16(n), []byte(payload))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		rs = append(rs, r)
	}
	return rs
}

// TestI386Records: the records of a 32-bit (i386) process on an x86_64
// kernel, as the kernel sent them (a GOARCH=386 program making its calls
// through int 0x80 under a `-w DIR -p wa` rule, linux 6.18): each call is
// named by the i386 table its arch=40000003 says, never x86_64's (where 83
// is mkdir, 5 fstat, 38 setitimer).
func TestI386Records(t *testing.T) {
	asm := NewAssembler()
	var evs []Event
	for _, r := range readRecords(t, "testdata/i386-records.txt") {
		evs = append(evs, asm.Add(r, time.Unix(0, 0))...)
	}
	var got []string
	for _, e := range evs {
		got = append(got, e.Writer.Syscall)
	}
	want := []string{"symlink", "open", "rename", "chmod", "chown32", "mkdir", "unlink"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("system calls (-want +got):\n%s", diff)
	}
	// symlink is no *at call: its relative name is the CWD's.
	if p := evs[0].Paths; len(p) != 3 || p[2].Path != "/var/tmp/parts-i386-d/link" || p[2].NameType != "CREATE" {
		t.Errorf("symlink's paths: %+v", p)
	}
}

func TestSyscallName(t *testing.T) {
	for _, tc := range []struct {
		arch string
		n    int
		want string
	}{
		{"c000003e", 83, "mkdir"},
		{"c000003e", 257, "openat"},
		{"40000003", 83, "symlink"},
		{"40000003", 212, "chown32"},
		{"40000003", 182, "chown"},
		{"c00000b7", 56, "openat"},
		{"c00000b7", 83, "syscall 83"}, // fdatasync: no write to a path
		{"40000028", 322, "openat"},
		{"c0000015", 286, "openat"},
		{"80000015", 38, "rename"},
		{"80000016", 288, "openat"},
		{"i386", 83, "symlink"},      // ausearch -i
		{"x86_64", 316, "renameat2"}, // ausearch -i
		{"c000003e", 999, "syscall 999"},
		{"40000008", 83, "syscall 83 (arch 40000008)"}, // mips: not known here
		{"", 83, "syscall 83 (arch unknown)"},
		{"\x1b[2J", 83, "syscall 83 (arch unknown)"},
	} {
		if got := SyscallName(tc.arch, tc.n); got != tc.want {
			t.Errorf("SyscallName(%q, %d) = %q, want %q", tc.arch, tc.n, got, tc.want)
		}
	}
}
