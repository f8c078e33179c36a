package statecache

import (
	"bytes"
	"crypto/sha256"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/drift-monitor/drift-monitor/internal/desired"
	"github.com/drift-monitor/drift-monitor/internal/model"
	"github.com/google/go-cmp/cmp"
)

// TestLastGood: the key of the state a load got (Served), remembered as
// the last good one, is found again by another Cache on the directory (a
// restarted daemon), and its state with it; trimming never removes that
// entry; a damaged or foreign record is no record.
func TestLastGood(t *testing.T) {
	root, _ := cacheRoot(t)
	dir := filepath.Join(t.TempDir(), "cache")
	c := &Cache{Dir: dir, Mode: ModeLazy}
	if _, ok := c.Served(); ok {
		t.Fatal("a key served before any load")
	}
	want, err := desired.LoadCached(c, host(t, root), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	k, ok := c.Served()
	if !ok {
		t.Fatal("no key served by a load that stored its state")
	}
	if _, ok := c.Served(); ok {
		t.Error("Served did not forget the key it returned")
	}
	if _, ok := c.LastGood(); ok {
		t.Fatal("a last good state before any was marked")
	}
	c.MarkGood(k)

	restarted := &Cache{Dir: dir, Mode: ModeLazy}
	got, ok := restarted.LastGood()
	if !ok || got != k {
		t.Fatalf("LastGood = %x, %v; want %x", got, ok, k)
	}
	st, ok := desired.FromCache(restarted, host(t, root), got)
	if !ok {
		t.Fatal("the last good state is not in the cache")
	}
	if diff := cmp.Diff(want.Files, st.Files); diff != "" || len(st.Entries) != len(want.Entries) {
		t.Errorf("the last good state: %d entries (want %d), files (-want +got):\n%s", len(st.Entries), len(want.Entries), diff)
	}

	// Trimming to one entry keeps the newest and the last good one.
	key, _ := entryKey(k)
	restarted.MaxBytes = 1
	other := model.State{Entries: []model.Entry{{Kind: model.KindFile, Path: "/etc/x", Content: &model.Content{Exact: bytes.Repeat([]byte("x"), 1000)}}}}
	old := time.Now().Add(-time.Hour)
	os.Chtimes(restarted.entryPath(key), old, old)
	if !restarted.put([sha256.Size]byte{9}, &other) {
		t.Fatal("put failed")
	}
	if _, err := os.Stat(restarted.entryPath(key)); err != nil {
		t.Errorf("trimming removed the last good state's entry: %v", err)
	}

	for name, damage := range map[string]func([]byte) []byte{
		"a flipped bit": func(b []byte) []byte { b[len(lastGoodMagic)] ^= 1; return b },
		"another magic": func(b []byte) []byte { b[0] = 'X'; return b },
		"truncated":     func(b []byte) []byte { return b[:len(b)-1] },
	} {
		t.Run(name, func(t *testing.T) {
			p := filepath.Join(dir, lastGoodName)
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.WriteFile(p, b, 0o600) })
			if err := os.WriteFile(p, damage(bytes.Clone(b)), 0o600); err != nil {
				t.Fatal(err)
			}
			if k, ok := restarted.LastGood(); ok {
				t.Errorf("a damaged record read as %x", k)
			}
		})
	}
	p := filepath.Join(dir, lastGoodName)
	if err := os.Chmod(p, 0o622); err != nil {
		t.Fatal(err)
	}
	if _, ok := restarted.LastGood(); ok {
		t.Error("a record others could write was read")
	}
}
