package desired

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/drift-monitor/drift-monitor/internal/desired/statekey"
	"github.com/drift-monitor/drift-monitor/internal/model"
)

// memCache is a statekey.Cache in memory that, like one on disk, hands out a copy of
// what it keeps.
type memCache struct {
	states     map[statekey.Key]model.State
	hits, puts int
}

func (m *memCache) Get(k statekey.Key) (model.State, bool) {
	st, ok := m.states[k]
	if ok {
		m.hits++
	}
	st.Entries = slices.Clone(st.Entries)
	return st, ok
}

func (m *memCache) Put(k statekey.Key, st *model.State) bool {
	if m.states == nil {
		m.states = map[statekey.Key]model.State{}
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

func (l *losingCache) Get(statekey.Key) (model.State, bool) { return model.State{}, false }

func (l *losingCache) Put(_ statekey.Key, st *model.State) bool {
	l.puts++
	*st = model.State{}
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
	got, err := LoadCached(lost, dirHost(root), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" || lost.puts != 1 {
		t.Errorf("after the cache lost the state (%d puts; want 1), (-want +got):\n%s", lost.puts, diff)
	}
	m := &memCache{}
	if _, err := LoadCached(m, dirHost(root), nil, nil); err != nil {
		t.Fatal(err)
	}
	for k, st := range m.states {
		st.Warnings = []string{"served by the cache"}
		m.states[k] = st
	}
	got, err = LoadCached(m, dirHost(root), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if m.hits != 1 || !slices.Equal(got.Warnings, []string{"served by the cache"}) {
		t.Errorf("%d hits, warnings %q; want the state the cache holds", m.hits, got.Warnings)
	}
}
