package desired

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// memCache is a Cache in memory that, like one on disk, hands out a copy of
// what it keeps.
type memCache struct {
	states     map[StateKey]State
	hits, puts int
}

func (m *memCache) Get(k StateKey) (State, bool) {
	st, ok := m.states[k]
	if ok {
		m.hits++
	}
	st.Entries = slices.Clone(st.Entries)
	return st, ok
}

func (m *memCache) Put(k StateKey, st *State) bool {
	if m.states == nil {
		m.states = map[StateKey]State{}
	}
	m.puts++
	kept := *st
	kept.Entries = slices.Clone(st.Entries)
	m.states[k] = kept
	return true
}

// losingCache is a cache that, like a lazy one whose entry vanished, drops
// the state it is given and cannot serve it back.
type losingCache struct{ puts int }

func (l *losingCache) Get(StateKey) (State, bool) { return State{}, false }

func (l *losingCache) Put(_ StateKey, st *State) bool {
	l.puts++
	*st = State{}
	return false
}

// TestLoadCached: a state the cache lost in Put is parsed again, and a hit
// is served by the cache, not parsed.
func TestLoadCached(t *testing.T) {
	root := t.TempDir()
	writeFile(t, filepath.Join(root, "etc/drift-monitor/desired.d/a.ign"),
		`{"ignition":{"version":"3.4.0"},"storage":{"files":[{"path":"/etc/a","mode":420,"contents":{"source":"data:,a"}}]}}`)
	want, err := LoadState(dirHost(root), nil)
	if err != nil {
		t.Fatal(err)
	}
	lost := &losingCache{}
	got, err := LoadCached(lost, dirHost(root), nil)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" || lost.puts != 1 {
		t.Errorf("after the cache lost the state (%d puts; want 1), (-want +got):\n%s", lost.puts, diff)
	}
	m := &memCache{}
	if _, err := LoadCached(m, dirHost(root), nil); err != nil {
		t.Fatal(err)
	}
	for k, st := range m.states {
		st.Warnings = []string{"served by the cache"}
		m.states[k] = st
	}
	got, err = LoadCached(m, dirHost(root), nil)
	if err != nil {
		t.Fatal(err)
	}
	if m.hits != 1 || !slices.Equal(got.Warnings, []string{"served by the cache"}) {
		t.Errorf("%d hits, warnings %q; want the state the cache holds", m.hits, got.Warnings)
	}
}

// TestKeyOfChunks: a key hashes a config file in chunks on every core, and
// names the same bytes alike whether they were read from the file or held
// (the hit path and the Put path must agree), and any changed, added or
// removed byte, in any chunk, names another state.
func TestKeyOfChunks(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "big.ign")
	raw := make([]byte, 2*hashChunk+hashChunk/2)
	for i := range raw {
		raw[i] = byte(i * 7)
	}
	src := fragmentFiles{root: dirHost(dir), explicit: true}
	keyOfFile := func(b []byte) (StateKey, bool) {
		t.Helper()
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return keyOf(src, []string{p}, [4][]byte{}, nil)
	}
	want, ok := keyOfFile(raw)
	if !ok {
		t.Fatal("keyOf of a regular file: not ok")
	}
	if held, _ := keyOf(src, []string{p}, [4][]byte{}, [][]byte{raw}); held != want {
		t.Errorf("the key of the bytes held differs from the key of the file read")
	}
	for name, b := range map[string][]byte{
		"a byte changed in the first chunk": slices.Concat(raw[:10], []byte{raw[10] ^ 1}, raw[11:]),
		"a byte changed in the last chunk":  slices.Concat(raw[:len(raw)-1], []byte{raw[len(raw)-1] ^ 1}),
		"a byte added":                      slices.Concat(raw, []byte{0}),
		"a byte removed":                    raw[:len(raw)-1],
		"empty":                             {},
	} {
		got, ok := keyOfFile(b)
		if !ok || got == want {
			t.Errorf("%s: ok %v, same key %v; want another key", name, ok, got == want)
		}
		if held, _ := keyOf(src, []string{p}, [4][]byte{}, [][]byte{b}); held != got {
			t.Errorf("%s: the key of the bytes held differs from the key of the file read", name)
		}
	}
	if _, ok := keyOf(src, []string{dir}, [4][]byte{}, nil); ok {
		t.Error("keyOf of a directory: ok; want not ok")
	}
}
