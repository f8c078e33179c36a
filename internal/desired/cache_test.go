package desired

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"

	"github.com/drift-monitor/drift-monitor/test/harness"

	"github.com/drift-monitor/drift-monitor/internal/desired/discover"
	"github.com/drift-monitor/drift-monitor/internal/model"
)

// memCache is a Cache in memory that, like one on disk, hands out a copy of
// what it keeps.
type memCache struct {
	states     map[StateKey]model.State
	hits, puts int
}

func (m *memCache) Get(k StateKey) (model.State, bool) {
	st, ok := m.states[k]
	if ok {
		m.hits++
	}
	st.Entries = slices.Clone(st.Entries)
	return st, ok
}

func (m *memCache) Put(k StateKey, st *model.State) bool {
	if m.states == nil {
		m.states = map[StateKey]model.State{}
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

func (l *losingCache) Get(StateKey) (model.State, bool) { return model.State{}, false }

func (l *losingCache) Put(_ StateKey, st *model.State) bool {
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
	src := discover.Files{Root: dirHost(dir), Explicit: true}
	keyOfFile := func(b []byte) (StateKey, bool) {
		t.Helper()
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return keyOf(src, []string{p}, [4][]byte{}, nil, digests{})
	}
	want, ok := keyOfFile(raw)
	if !ok {
		t.Fatal("keyOf of a regular file: not ok")
	}
	if held, _ := keyOf(src, []string{p}, [4][]byte{}, [][]byte{raw}, digests{}); held != want {
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
		if held, _ := keyOf(src, []string{p}, [4][]byte{}, [][]byte{b}, digests{}); held != got {
			t.Errorf("%s: the key of the bytes held differs from the key of the file read", name)
		}
	}
	if _, ok := keyOf(src, []string{dir}, [4][]byte{}, nil, digests{}); ok {
		t.Error("keyOf of a directory: ok; want not ok")
	}
}

// recordingMemo is a DigestMemo in memory that counts what it is asked.
type recordingMemo struct {
	digests          map[FileStamp]FileDigest
	asked, remembers int
}

func (m *recordingMemo) Digests() map[FileStamp]FileDigest {
	m.asked++
	return maps.Clone(m.digests)
}

func (m *recordingMemo) Remember(learned map[FileStamp]FileDigest) {
	if m.digests == nil {
		m.digests = map[FileStamp]FileDigest{}
	}
	m.remembers++
	maps.Copy(m.digests, learned)
}

// trustedStamp returns p's stamp, which must be trusted: the test's files
// are on a filesystem this kernel writes (ext4 or tmpfs here).
func trustedStamp(t *testing.T, p string) FileStamp {
	t.Helper()
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s, trusted, err := stampOf(f)
	if err != nil {
		t.Fatal(err)
	}
	if !trusted {
		harness.Unavailable(t, "%s: no trusted stamp on this filesystem or kernel (needs ext4, XFS, Btrfs, F2FS or tmpfs and STATX_MNT_ID_UNIQUE, Linux 6.8)", p)
	}
	return s
}

// TestKeyOfMemo: a config file's digest is remembered by its stamp only
// once the stamp was settled when taken, a remembered digest names the
// file without reading it (the key is the one its bytes give), a file
// changed in place, whose change time moves, is read and hashed again,
// and the memo is read and written at most once per key.
func TestKeyOfMemo(t *testing.T) {
	dir := t.TempDir()
	p, q := filepath.Join(dir, "a.ign"), filepath.Join(dir, "b.ign")
	for _, f := range []string{p, q} {
		if err := os.WriteFile(f, []byte("first version of "+f), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	files := []string{p, q}
	changed := time.Unix(0, max(trustedStamp(t, p).Ctime, trustedStamp(t, q).Ctime))
	src := discover.Files{Root: dirHost(dir), Explicit: true}
	want, _ := keyOf(src, files, [4][]byte{}, nil, digests{})
	memo := &recordingMemo{}
	at := func(d time.Duration) digests {
		return digests{memo, func() time.Time { return changed.Add(d) }}
	}
	if got, ok := keyOf(src, files, [4][]byte{}, nil, at(racyMargin-time.Nanosecond)); !ok || got != want {
		t.Fatalf("key with a memo: ok %v, same %v; want the key of the bytes", ok, got == want)
	}
	if memo.remembers != 0 || memo.asked != 1 {
		t.Errorf("files changed under %v ago: remembered %d times, memo read %d times; want 0 and 1", racyMargin, memo.remembers, memo.asked)
	}
	if got, _ := keyOf(src, files, [4][]byte{}, nil, at(racyMargin)); got != want || memo.remembers != 1 || len(memo.digests) != 2 {
		t.Fatalf("settled: remembered %d times, %d digests, same key %v; want once, 2 and the key of the bytes", memo.remembers, len(memo.digests), got == want)
	}
	// Served by the memo: a wrong digest remembered for these stamps
	// shows that the files were not read.
	for s := range memo.digests {
		memo.digests[s] = FileDigest{1}
	}
	if got, _ := keyOf(src, files, [4][]byte{}, nil, at(racyMargin)); got == want {
		t.Error("remembered stamps: the files were read; want their remembered digests used")
	}
	// Changed in place, same size: another stamp, read again (and b.ign,
	// unchanged, still named by its stamp, its true digest remembered anew).
	memo.digests = nil
	keyOf(src, files, [4][]byte{}, nil, at(racyMargin))
	f, err := os.OpenFile(p, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("other"), 0); err != nil {
		t.Fatal(err)
	}
	f.Close()
	edited, _ := keyOf(src, files, [4][]byte{}, nil, digests{})
	if got, _ := keyOf(src, files, [4][]byte{}, nil, at(racyMargin)); got != edited || got == want {
		t.Errorf("after a change in place: same as the new bytes' key %v, same as the old %v; want the new bytes' key", got == edited, got == want)
	}
}

// TestStampSettled: a stamp is settled once both its change and its
// modification times are racyMargin old, never while either is younger or
// ahead of the clock.
func TestStampSettled(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	old := now.Add(-time.Hour).UnixNano()
	for _, c := range []struct {
		name         string
		ctime, mtime time.Time
		want         bool
	}{
		{"changed just now", now, now, false},
		{"changed just under the margin ago", now.Add(-racyMargin + time.Nanosecond), now.Add(-time.Hour), false},
		{"changed the margin ago", now.Add(-racyMargin), now.Add(-time.Hour), true},
		{"changed an hour ago", now.Add(-time.Hour), now.Add(-time.Hour), true},
		{"changed in the future", now.Add(time.Hour), now.Add(-time.Hour), false},
		{"modified in the future (touch -d)", now.Add(-time.Hour), now.Add(time.Hour), false},
	} {
		s := FileStamp{Ctime: c.ctime.UnixNano(), Mtime: c.mtime.UnixNano(), Btime: old}
		if got := s.Settled(now); got != c.want {
			t.Errorf("%s: settled %v, want %v", c.name, got, c.want)
		}
	}
}

// TestStampTrusted: a stamp is trusted on the filesystems whose times this
// kernel sets, never on others (procfs stands for them here), and a
// DigestScheme names the chunk size it hashes with.
func TestStampTrusted(t *testing.T) {
	p := filepath.Join(t.TempDir(), "a.ign")
	if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if s := trustedStamp(t, p); s.Mount == 0 || s.Ino == 0 || s.Ctime == 0 || s.Size != 1 || s.Mode&unix.S_IFMT != unix.S_IFREG {
		t.Errorf("stamp of a regular file: %+v; want its mount, inode, times, size and type", s)
	}
	f, err := os.Open("/proc/self/cmdline")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, trusted, err := stampOf(f); err != nil || trusted {
		t.Errorf("a procfs file's stamp: trusted %v (%v); want not trusted", trusted, err)
	}
	if !strings.Contains(DigestScheme, strconv.Itoa(hashChunk)) {
		t.Errorf("DigestScheme %q does not name hashChunk %d", DigestScheme, hashChunk)
	}
}
