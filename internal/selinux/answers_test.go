package selinux_test

import (
	"encoding/binary"
	"io/fs"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/drift-monitor/drift-monitor/internal/selinux"
)

// TestAnswersRoundTrip: what EncodeAnswers writes, DecodeAnswers reads
// back, and Find and Seek give each answer for its path and type only;
// of two answers to one lookup the first is kept.
func TestAnswersRoundTrip(t *testing.T) {
	list := []selinux.Answer{
		{Path: "/etc/b", Type: selinux.Regular, Context: "u:r:b_t:s0", OK: true},
		{Path: "/etc/a", Type: selinux.Directory, Context: "u:r:dir_t:s0", OK: true},
		{Path: "/etc/a", Type: selinux.Regular, Context: "u:r:etc_t:s0", OK: true},
		{Path: "/proc/x", Type: selinux.Regular},
		{Path: "/etc/b", Type: selinux.Regular, Context: "u:r:later_t:s0", OK: true},
		{Path: "/etc/c", Type: selinux.Symlink, Context: "u:r:etc_t:s0", OK: true},
	}
	a, err := selinux.DecodeAnswers(selinux.EncodeAnswers(list))
	if err != nil {
		t.Fatal(err)
	}
	if a.Len() != 5 {
		t.Errorf("%d answers, want 5 (one lookup answered twice)", a.Len())
	}
	for _, want := range list[:4] {
		i, found := a.Find(want.Path, want.Type)
		if !found {
			t.Errorf("Find(%s, %c): not found", want.Path, want.Type)
			continue
		}
		if got := a.Answer(i); got != want {
			t.Errorf("answer of Find(%s, %c) (-want +got):\n%s", want.Path, want.Type, cmp.Diff(want, got))
		}
		for hint := range a.Len() + 1 {
			if j, found := a.Seek(want.Path, want.Type, hint); !found || j != i {
				t.Errorf("Seek(%s, %c, %d) = %d, %v; Find says %d", want.Path, want.Type, hint, j, found, i)
			}
		}
	}
	for _, q := range []selinux.Answer{{Path: "/etc/a", Type: selinux.Symlink}, {Path: "/etc", Type: selinux.Regular}, {Path: "/zz", Type: selinux.Regular}, {Path: "/etc/a/", Type: selinux.Regular}} {
		if _, found := a.Find(q.Path, q.Type); found {
			t.Errorf("Find(%s, %c): found, none was kept", q.Path, q.Type)
		}
	}
}

// FuzzDecodeAnswers: no block of bytes makes DecodeAnswers or what it
// returns panic, and a block it reads answers only what it holds.
func FuzzDecodeAnswers(f *testing.F) {
	f.Add(selinux.EncodeAnswers([]selinux.Answer{{Path: "/etc/a", Type: selinux.Regular, Context: "u:r:etc_t:s0", OK: true}, {Path: "/x", Type: selinux.Directory}}), "/etc/a")
	f.Add(binary.LittleEndian.AppendUint32(binary.LittleEndian.AppendUint32(nil, 1<<30), 1<<30), "/")
	f.Add([]byte{}, "")
	f.Fuzz(func(t *testing.T, b []byte, p string) {
		a, err := selinux.DecodeAnswers(b)
		if err != nil {
			return
		}
		for i := range a.Len() {
			x := a.Answer(i)
			if j, found := a.Find(x.Path, x.Type); found {
				if y := a.Answer(j); y.Path != x.Path || y.Type != x.Type {
					t.Fatalf("Find(%q, %c) found %+v", x.Path, x.Type, y)
				}
			}
		}
		for _, typ := range []selinux.FileType{selinux.Regular, selinux.Directory} {
			if j, found := a.Find(p, typ); found && a.Answer(j).Path != p {
				t.Fatalf("Find(%q) found %+v", p, a.Answer(j))
			}
			a.Seek(p, typ, len(p))
		}
	})
}

// TestSlotsRememberTheFirstAnswer: a slot gives back what was put in it
// for that path and type only, and keeps the first.
func TestSlotsRememberTheFirstAnswer(t *testing.T) {
	s := selinux.NewSlots(2)
	if _, _, found := s.Get(0, "/etc/a", selinux.Regular); found {
		t.Fatal("an empty slot answers")
	}
	s.Put(0, "/etc/a", selinux.Regular, "u:r:etc_t:s0", true)
	s.Put(0, "/etc/a", selinux.Directory, "u:r:dir_t:s0", true)
	if c, ok, found := s.Get(0, "/etc/a", selinux.Regular); !found || !ok || c != "u:r:etc_t:s0" {
		t.Errorf("Get(0, /etc/a, file) = %q, %v, %v; want etc_t", c, ok, found)
	}
	for _, q := range []struct {
		i int
		p string
		t selinux.FileType
	}{{0, "/etc/a", selinux.Directory}, {0, "/etc/b", selinux.Regular}, {1, "/etc/a", selinux.Regular}} {
		if _, _, found := s.Get(q.i, q.p, q.t); found {
			t.Errorf("Get(%d, %s, %c) answers", q.i, q.p, q.t)
		}
	}
}

// TestMemoSlotsFollowTheirList: a memo gives the same slots for a list as
// long, and new ones for another length; slots reused for another list
// answer only for the paths put in them, and take the new list's.
func TestMemoSlotsFollowTheirList(t *testing.T) {
	c, err := selinux.Load(func(p string) ([]byte, error) {
		if p == "/fc" {
			return []byte("/.* u:r:x_t:s0\n"), nil
		}
		return nil, fs.ErrNotExist
	}, "/fc")
	if err != nil {
		t.Fatal(err)
	}
	m := selinux.NewMemo(c)
	first := m.Slots(3)
	if m.Slots(3) != first {
		t.Error("a list as long got new slots")
	}
	first.Put(0, "/a", selinux.Regular, "u:r:a_t:s0", true)
	if _, _, found := first.Get(0, "/b", selinux.Regular); found {
		t.Error("a slot answers for another path")
	}
	first.Put(0, "/b", selinux.Regular, "u:r:b_t:s0", true)
	if c, _, found := first.Get(0, "/b", selinux.Regular); !found || c != "u:r:b_t:s0" {
		t.Errorf("a slot put for another path answers %q, %v; want b_t", c, found)
	}
	if m.Slots(4) == first {
		t.Error("a list of another length got the same slots")
	}
}
