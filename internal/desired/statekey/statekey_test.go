package statekey

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/drift-monitor/drift-monitor/test/harness"

	"github.com/drift-monitor/drift-monitor/internal/desired/desiredtest"
	"github.com/drift-monitor/drift-monitor/internal/desired/discover"
)

// TestOfChunks: a key hashes a config file in chunks on every core, and
// names the same bytes alike whether they were read from the file or held
// (the hit path and the Put path must agree), and any changed, added or
// removed byte, in any chunk, names another state.
func TestOfChunks(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "big.ign")
	raw := make([]byte, 2*hashChunk+hashChunk/2)
	for i := range raw {
		raw[i] = byte(i * 7)
	}
	src := discover.Files{Root: desiredtest.DirHost(dir), Explicit: true}
	keyOfFile := func(b []byte) (Key, bool) {
		t.Helper()
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return Of(src, []string{p}, [4][]byte{}, nil, Digests{})
	}
	want, ok := keyOfFile(raw)
	if !ok {
		t.Fatal("Of of a regular file: not ok")
	}
	if held, _ := Of(src, []string{p}, [4][]byte{}, [][]byte{raw}, Digests{}); held != want {
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
		if held, _ := Of(src, []string{p}, [4][]byte{}, [][]byte{b}, Digests{}); held != got {
			t.Errorf("%s: the key of the bytes held differs from the key of the file read", name)
		}
	}
	if _, ok := Of(src, []string{dir}, [4][]byte{}, nil, Digests{}); ok {
		t.Error("Of of a directory: ok; want not ok")
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

// TestOfMemo: a config file's digest is remembered by its stamp only
// once the stamp was settled when taken, a remembered digest names the
// file without reading it (the key is the one its bytes give), a file
// changed in place, whose change time moves, is read and hashed again,
// and the memo is read and written at most once per key.
func TestOfMemo(t *testing.T) {
	dir := t.TempDir()
	p, q := filepath.Join(dir, "a.ign"), filepath.Join(dir, "b.ign")
	for _, f := range []string{p, q} {
		if err := os.WriteFile(f, []byte("first version of "+f), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	files := []string{p, q}
	// The two writes may fall in different granules of the clock that
	// stamps them: "under the margin" is measured from the earlier change,
	// "settled" from the later.
	sp, sq := trustedStamp(t, p), trustedStamp(t, q)
	first, changed := time.Unix(0, min(sp.Ctime, sq.Ctime)), time.Unix(0, max(sp.Ctime, sq.Ctime))
	src := discover.Files{Root: desiredtest.DirHost(dir), Explicit: true}
	want, _ := Of(src, files, [4][]byte{}, nil, Digests{})
	memo := &recordingMemo{}
	at := func(d time.Duration) Digests {
		return Digests{Memo: memo, Now: func() time.Time { return changed.Add(d) }}
	}
	young := Digests{Memo: memo, Now: func() time.Time { return first.Add(racyMargin - time.Nanosecond) }}
	if got, ok := Of(src, files, [4][]byte{}, nil, young); !ok || got != want {
		t.Fatalf("key with a memo: ok %v, same %v; want the key of the bytes", ok, got == want)
	}
	if memo.remembers != 0 || memo.asked != 1 {
		t.Errorf("files changed under %v ago: remembered %d times, memo read %d times; want 0 and 1", racyMargin, memo.remembers, memo.asked)
	}
	if got, _ := Of(src, files, [4][]byte{}, nil, at(racyMargin)); got != want || memo.remembers != 1 || len(memo.digests) != 2 {
		t.Fatalf("settled: remembered %d times, %d digests, same key %v; want once, 2 and the key of the bytes", memo.remembers, len(memo.digests), got == want)
	}
	// Served by the memo: a wrong digest remembered for these stamps
	// shows that the files were not read.
	for s := range memo.digests {
		memo.digests[s] = FileDigest{1}
	}
	if got, _ := Of(src, files, [4][]byte{}, nil, at(racyMargin)); got == want {
		t.Error("remembered stamps: the files were read; want their remembered digests used")
	}
	// Changed in place, same size: another stamp, read again (and b.ign,
	// unchanged, still named by its stamp, its true digest remembered anew).
	memo.digests = nil
	Of(src, files, [4][]byte{}, nil, at(racyMargin))
	f, err := os.OpenFile(p, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("other"), 0); err != nil {
		t.Fatal(err)
	}
	f.Close()
	edited, _ := Of(src, files, [4][]byte{}, nil, Digests{})
	if got, _ := Of(src, files, [4][]byte{}, nil, at(racyMargin)); got != edited || got == want {
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
