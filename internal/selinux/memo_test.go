package selinux_test

import (
	"os"
	"testing"

	"github.com/drift-monitor/drift-monitor/internal/selinux"
)

// TestMemoAnswersAsLookup: a remembered answer is the one Lookup gives,
// per path and per type (one path may want another label as a directory).
func TestMemoAnswersAsLookup(t *testing.T) {
	fc := "/etc(/.*)? system_u:object_r:etc_t:s0\n/etc/d -d system_u:object_r:dir_t:s0\n/etc/none <<none>>\n"
	c, err := selinux.Load(func(p string) ([]byte, error) {
		if p == "/fc" {
			return []byte(fc), nil
		}
		return nil, os.ErrNotExist
	}, "/fc")
	if err != nil {
		t.Fatal(err)
	}
	m := selinux.NewMemo(c)
	for round := 0; round < 2; round++ {
		for _, q := range []struct {
			p string
			t selinux.FileType
		}{{"/etc/d", selinux.Directory}, {"/etc/d", selinux.Regular}, {"/etc/none", selinux.Regular}, {"/usr/x", selinux.Regular}} {
			wc, wok := c.Lookup(q.p, q.t)
			gc, gok := m.Lookup(q.p, q.t)
			if gc != wc || gok != wok {
				t.Errorf("round %d: Memo.Lookup(%s, %c) = %q, %v; Lookup says %q, %v", round, q.p, q.t, gc, gok, wc, wok)
			}
		}
	}
}
