package statecache

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/drift-monitor/drift-monitor/internal/desired"
	"github.com/drift-monitor/drift-monitor/internal/desired/statekey"
	"github.com/drift-monitor/drift-monitor/internal/model"
	"github.com/drift-monitor/drift-monitor/internal/ondisk"
	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"
)

func ptr[T any](v T) *T { return &v }

func writeFile(t *testing.T, name, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(name, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// recorder is the cache c as desired sees it, remembering the keys it is
// asked for.
type recorder struct {
	c          *Cache
	gets, puts []statekey.Key
}

func (r *recorder) Get(k statekey.Key) (model.State, bool) {
	r.gets = append(r.gets, k)
	return r.c.Get(k)
}

func (r *recorder) Put(k statekey.Key, st *model.State) bool {
	r.puts = append(r.puts, k)
	return r.c.Put(k, st)
}

// load loads root's default configs through c.
func load(c *Cache, root string) (model.State, error) {
	r, err := ondisk.OpenRoot(root)
	if err != nil {
		return model.State{}, err
	}
	defer r.Close()
	return desired.LoadCached(c, r, nil, nil)
}

// host opens root as the root a load reads, closed at the test's end.
func host(t *testing.T, root string) *ondisk.Root {
	t.Helper()
	r, err := ondisk.OpenRoot(root)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// keyNow is the name of the entry that a load of root's default configs
// through c uses now (a load that may write it).
func keyNow(t *testing.T, c *Cache, root string) [sha256.Size]byte {
	t.Helper()
	r := &recorder{c: c}
	if _, err := desired.LoadCached(r, host(t, root), nil, nil); err != nil || len(r.gets) == 0 {
		t.Fatalf("load: %v, %d lookups", err, len(r.gets))
	}
	key, ok := entryKey(r.gets[0])
	if !ok {
		t.Fatal("no key: the test binary has no identity")
	}
	return key
}

// fill sets every field of the value v points to to something other than its
// zero value, following pointers: an Entry filled this way has every field
// an entry must carry (Content.Stored aside: it is what a lazy reading makes
// of Exact).
func fill(t *testing.T, v reflect.Value) {
	t.Helper()
	switch v.Kind() {
	case reflect.String:
		v.SetString("x")
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int64, reflect.Int32:
		v.SetInt(7)
	case reflect.Uint32, reflect.Uint64:
		v.SetUint(7)
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.String {
			v.Set(reflect.ValueOf([]string{"x", "y"}))
			return
		}
		if v.Type().Elem().Kind() != reflect.Uint8 {
			t.Fatalf("fill: slice of %s", v.Type().Elem())
		}
		v.SetBytes([]byte("bytes"))
	case reflect.Pointer:
		if v.Type() == reflect.TypeFor[*model.Stored]() {
			return // what a lazy reading makes of Exact, never written
		}
		if v.Type() == reflect.TypeFor[*model.FirstBoot]() || v.Type() == reflect.TypeFor[*model.Base]() {
			return // what the first-boot record adds after a load, never cached
		}
		v.Set(reflect.New(v.Type().Elem()))
		fill(t, v.Elem())
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			fill(t, v.Field(i))
		}
	default:
		t.Fatalf("fill: %s has a field of kind %s; teach fill, appendEntry and reader.entry about it", v.Type(), v.Kind())
	}
}

func roundTrip(t *testing.T, st model.State) model.State {
	t.Helper()
	var key [sha256.Size]byte
	key[0] = 1
	var buf bytes.Buffer
	if err := encodeState(&buf, key, &st); err != nil {
		t.Fatal(err)
	}
	got, err := decodeState(buf.Bytes(), key)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// TestCacheWireForm: a state comes back from its cache entry exactly, field
// by field, including what gob alone would lose (a pointer to zero is uid 0
// or enabled=false, not "undeclared"; an empty exact content is not "no exact
// content"). A field added to Entry without the wire form fails here.
func TestCacheWireForm(t *testing.T) {
	var full model.Entry
	fill(t, reflect.ValueOf(&full).Elem())
	zero := model.Entry{Kind: model.KindFile, Path: "/etc/zero", Mode: ptr[uint32](0), UID: ptr(0), GID: ptr(0),
		Enabled: ptr(false), Content: &model.Content{Exact: []byte{}}}
	hashed := model.Entry{Kind: model.KindFile, Path: "/etc/h", Content: &model.Content{Hash: &model.Hash{Algorithm: "sha512", Hex: "ab"}, Suffix: []byte("tail")}}
	bare := model.Entry{Kind: model.KindKernelArg, Path: "/proc/cmdline", Arg: "quiet"}
	// An account with nothing but a name, one declared absent, and one whose
	// declared strings are empty ("" is declared, not absent).
	accounts := []model.Entry{
		{Kind: model.KindGroup, Path: "/etc/group", Account: &model.Account{Name: "g"}},
		{Kind: model.KindUser, Path: "/etc/passwd", User: "gone", Account: &model.Account{Name: "gone", Absent: true}},
		{Kind: model.KindUser, Path: "/etc/passwd", User: "e", Account: &model.Account{Name: "e", ID: ptr(0), Shell: ptr(""), PasswordHash: ptr(""), Groups: []string{""}}},
	}
	want := model.State{Entries: append([]model.Entry{full, zero, hashed, bare}, accounts...), Files: []string{"/a.ign", "/b.yaml"}, Warnings: []string{"/a.ign: unused key"}}
	got := roundTrip(t, want)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
	if got.Entries[1].Content.Exact == nil {
		t.Error("an empty exact content came back as no exact content")
	}
}

// TestCacheWireMany: entries of different shapes, more than one write's
// worth, come back as they were (a field one entry omits must not take the
// value of the entry before it).
func TestCacheWireMany(t *testing.T) {
	var want model.State
	for i := range 5000 {
		e := model.Entry{Kind: model.KindFile, Path: fmt.Sprintf("/etc/f%d", i)}
		switch i % 3 {
		case 0:
			e.Mode, e.UID, e.Content = ptr[uint32](0o640), ptr(i), &model.Content{Exact: []byte(e.Path)}
		case 1:
			e.Content = &model.Content{Suffix: []byte("s")}
		}
		want.Entries = append(want.Entries, e)
	}
	if diff := cmp.Diff(want, roundTrip(t, want)); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
}

// TestCacheLazy: a lazy reading keeps each exact content as its size and
// digest, and reads the bytes back from the entry; a damaged or removed
// entry fails the read back rather than give other bytes.
func TestCacheLazy(t *testing.T) {
	var want model.State
	for i := range 2*partLen + 300 { // parts apart, each with its contents' offset
		e := model.Entry{Kind: model.KindFile, Path: fmt.Sprintf("/etc/f%d", i), Mode: ptr[uint32](0o644)}
		switch i % 3 {
		case 0:
			e.Content = &model.Content{Exact: []byte(strings.Repeat(e.Path, i%7))}
		case 1:
			e.Content = &model.Content{Hash: &model.Hash{Algorithm: "sha256", Hex: "00"}, Suffix: []byte("s")}
		}
		want.Entries = append(want.Entries, e)
	}
	c := &Cache{Dir: t.TempDir(), Mode: ModeLazy}
	var key [sha256.Size]byte
	key[1] = 2
	if !c.put(key, &want) {
		t.Fatal("put failed")
	}
	got, ok := c.get(key)
	if !ok {
		t.Fatal("no lazy reading of the entry just stored")
	}
	var stored []*model.Stored
	for i := range got.Entries {
		g, w := got.Entries[i].Content, want.Entries[i].Content
		if w == nil || w.Exact == nil {
			continue
		}
		if g.Exact != nil || g.Stored == nil {
			t.Fatalf("entry %d: Exact %q, Stored %v; want only Stored", i, g.Exact, g.Stored)
		}
		if n, ok := g.ExactSize(); !ok || n != int64(len(w.Exact)) || g.Digest() != w.Digest() {
			t.Errorf("entry %d: size %d (%v), digest %x; want %d, %x", i, n, ok, g.Digest(), len(w.Exact), w.Digest())
		}
		b, err := got.Store.ReadStored(g.Stored)
		if err != nil || !bytes.Equal(b, w.Exact) {
			t.Errorf("entry %d: read back %q, %v; want %q", i, b, err, w.Exact)
		}
		stored = append(stored, g.Stored)
		g.Exact, g.Stored = w.Exact, nil
	}
	store := got.Store
	if store == nil {
		t.Fatal("a lazy state without a store")
	}
	got.Store = nil
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("lazy reading, contents aside (-want +got):\n%s", diff)
	}
	// A content's bytes changed in the entry: the digest refuses them.
	s := stored[len(stored)-1]
	f, err := os.OpenFile(c.entryPath(key), os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt([]byte("X"), s.Offset)
	f.Close()
	if b, err := store.ReadStored(s); err == nil {
		t.Errorf("a changed content was read back: %q", b)
	}
	// Removed from the directory (trimmed, or by hand), the entry stays
	// readable: the state holds it open.
	os.Remove(c.entryPath(key))
	if b, err := store.ReadStored(stored[1]); err != nil || !bytes.Equal(b, want.Entries[3].Content.Exact) {
		t.Errorf("a content of a removed entry read back as %q, %v; want %q", b, err, want.Entries[3].Content.Exact)
	}
}

// TestCacheTrimKeepsRecentlyUsed: a hit marks its entry used, so trimming
// removes the entry used least recently, not the one written first (a
// daemon's entry, read at every restart, outlives the checks of other
// roots).
func TestCacheTrimKeepsRecentlyUsed(t *testing.T) {
	st := model.State{Entries: []model.Entry{{Kind: model.KindFile, Path: "/etc/a", Content: &model.Content{Exact: bytes.Repeat([]byte("x"), 1000)}}}}
	c := &Cache{Dir: filepath.Join(t.TempDir(), "cache")}
	a, b, d := [sha256.Size]byte{1}, [sha256.Size]byte{2}, [sha256.Size]byte{3}
	for _, k := range [][sha256.Size]byte{a, b} {
		if !c.put(k, &st) {
			t.Fatal("put failed")
		}
	}
	fi, err := os.Stat(c.entryPath(a))
	if err != nil {
		t.Fatal(err)
	}
	c.MaxBytes = 2*fi.Size() + fi.Size()/2 // room for two entries
	// Both written an hour ago, b last: then a is used now.
	old := time.Now().Add(-time.Hour)
	os.Chtimes(c.entryPath(a), old, old)
	os.Chtimes(c.entryPath(b), old.Add(time.Second), old.Add(time.Second))
	if _, ok := c.get(a); !ok {
		t.Fatal("no hit")
	}
	if !c.put(d, &st) {
		t.Fatal("put failed")
	}
	var got []string
	for _, p := range cacheEntries(t, c.Dir) {
		got = append(got, filepath.Base(p))
	}
	if want := []string{entryName(a), entryName(d)}; !cmp.Equal(want, got) {
		t.Errorf("entries after trimming: %q; want the one just used and the one just written, %q", got, want)
	}
}

// TestCacheConfigFromAPipe: a config that is not a regular file (a pipe,
// --config /dev/stdin) is not cached, and parses whole.
func TestCacheConfigFromAPipe(t *testing.T) {
	root, cfg := cacheRoot(t)
	raw := mustRead(t, cfg)
	want, err := desired.LoadState(host(t, root), []string{cfg})
	if err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(t.TempDir(), "config.ign")
	if err := unix.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- os.WriteFile(fifo, raw, 0o600) }()
	c := &Cache{Dir: filepath.Join(t.TempDir(), "cache")}
	got, err := desired.LoadCached(c, host(t, root), []string{fifo}, nil)
	if err != nil {
		t.Fatalf("LoadState(a pipe): %v", err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	want.Files = []string{fifo}
	for i, w := range want.Warnings {
		want.Warnings[i] = fifo + strings.TrimPrefix(w, cfg)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("state from a pipe (-from the file +from the pipe):\n%s", diff)
	}
	if n := len(cacheEntries(t, c.Dir)); n != 0 {
		t.Errorf("%d entries stored for a config read from a pipe", n)
	}
}

// cacheRoot writes a root with account files and one config declaring a
// file owned by alice, and returns the root and the config's path.
func cacheRoot(t *testing.T) (root, cfg string) {
	root = t.TempDir()
	writeFile(t, filepath.Join(root, "etc/passwd"), "root:x:0:0::/root:/bin/sh\nalice:x:1000:1000::/home/alice:/bin/sh\n")
	writeFile(t, filepath.Join(root, "etc/group"), "root:x:0:\n")
	cfg = filepath.Join(root, "etc/drift-monitor/desired.d/10-a.ign")
	writeFile(t, cfg, `{"ignition":{"version":"3.4.0"},"storage":{"files":[
{"path":"/etc/a","mode":384,"user":{"name":"alice"},"contents":{"source":"data:,secret"}},
{"path":"/etc/b","mode":420,"user":{"id":0},"group":{"id":0}}]},
"systemd":{"units":[{"name":"x.service","enabled":false}]},"unused":1}`)
	return root, cfg
}

func cacheEntries(t *testing.T, dir string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, "*"+cacheSuffix))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestStateCache(t *testing.T) {
	root, cfg := cacheRoot(t)
	uncached, err := desired.LoadState(host(t, root), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(uncached.Warnings) == 0 {
		t.Fatal("the fixture's unused key gave no warning")
	}
	c := &Cache{Dir: filepath.Join(t.TempDir(), "cache")}

	t.Run("miss then hit give the parsed state", func(t *testing.T) {
		for i, what := range []string{"miss", "hit"} {
			got, err := load(c, root)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(uncached, got); diff != "" {
				t.Errorf("%s (-uncached +cached):\n%s", what, diff)
			}
			if n := len(cacheEntries(t, c.Dir)); n != 1 {
				t.Errorf("after load %d: %d entries, want 1", i+1, n)
			}
		}
		fi, err := os.Stat(c.Dir)
		if err != nil || fi.Mode().Perm() != 0o700 {
			t.Errorf("cache directory: %v, mode %v; want 0700", err, fi.Mode().Perm())
		}
		fi, err = os.Stat(cacheEntries(t, c.Dir)[0])
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("cache entry: %v, mode %v; want 0600 (it holds secret contents)", err, fi.Mode().Perm())
		}
	})

	t.Run("a mapped hit gives the parsed state", func(t *testing.T) {
		m := &Cache{Dir: c.Dir, Mode: ModeMap}
		got, err := load(m, root)
		if err != nil {
			t.Fatal(err)
		}
		// Its store checks the contents when asked (mapped).
		if v, ok := got.Store.(interface{ VerifyContents() error }); !ok || v.VerifyContents() != nil {
			t.Errorf("a mapped hit's store %T does not verify its contents as undamaged", got.Store)
		}
		got.Store = nil
		if diff := cmp.Diff(uncached, got); diff != "" {
			t.Errorf("mapped hit (-uncached +cached):\n%s", diff)
		}
	})

	// A hit is served from the entry, not parsed: an entry planted under the
	// key with one entry fewer comes back as it is.
	t.Run("a hit reads the entry", func(t *testing.T) {
		// The key looked up, of the files as read (hashed while read), is
		// the key stored, of the bytes parsed.
		miss := &Cache{Dir: t.TempDir()}
		r := &recorder{c: miss}
		if _, err := desired.LoadCached(r, host(t, root), nil, nil); err != nil {
			t.Fatal(err)
		}
		if len(r.gets) != 1 || len(r.puts) != 1 || r.gets[0] != r.puts[0] {
			t.Fatalf("a miss looked up %x and stored %x; want one key, the same", r.gets, r.puts)
		}
		key := r.gets[0]
		planted := uncached
		planted.Entries = planted.Entries[1:]
		c.Put(key, &planted)
		got, err := load(c, root)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(planted, got); diff != "" {
			t.Errorf("hit (-planted +got):\n%s", diff)
		}
		c.Put(key, &uncached)
	})

	t.Run("any input changed is another entry", func(t *testing.T) {
		before := len(cacheEntries(t, c.Dir))
		// The config: alice's file is now 0644.
		writeFile(t, cfg, strings.Replace(string(mustRead(t, cfg)), `"mode":384`, `"mode":420`, 1))
		st, err := load(c, root)
		if err != nil {
			t.Fatal(err)
		}
		if m := *st.Entries[0].Mode; m != 0o644 {
			t.Errorf("after the config changed, mode %o; want 644", m)
		}
		// An account file: alice is now uid 1001.
		writeFile(t, filepath.Join(root, "etc/passwd"), "root:x:0:0::/root:/bin/sh\nalice:x:1001:1000::/home/alice:/bin/sh\n")
		st, err = load(c, root)
		if err != nil {
			t.Fatal(err)
		}
		if u := *st.Entries[0].UID; u != 1001 {
			t.Errorf("after /etc/passwd changed, uid %d; want 1001", u)
		}
		// A second config file, in /usr/lib.
		writeFile(t, filepath.Join(root, "usr/lib/drift-monitor/desired.d/20-b.ign"),
			`{"ignition":{"version":"3.4.0"},"storage":{"directories":[{"path":"/etc/d"}]}}`)
		st, err = load(c, root)
		if err != nil {
			t.Fatal(err)
		}
		if len(st.Files) != 2 {
			t.Errorf("after a fragment was added, files %q; want 2", st.Files)
		}
		if n := len(cacheEntries(t, c.Dir)); n != before+3 {
			t.Errorf("%d entries, want %d", n, before+3)
		}
	})

	t.Run("a bad config is reported, not cached", func(t *testing.T) {
		before := len(cacheEntries(t, c.Dir))
		bad := filepath.Join(root, "etc/drift-monitor/desired.d/30-bad.ign")
		writeFile(t, bad, `{"ignition":{"version":"3.4.0"},`)
		defer os.Remove(bad)
		for range 2 {
			if _, err := load(c, root); err == nil || !strings.HasPrefix(err.Error(), bad+":") {
				t.Errorf("LoadCached = %v, want an error naming %s", err, bad)
			}
		}
		if n := len(cacheEntries(t, c.Dir)); n != before {
			t.Errorf("%d entries, want %d", n, before)
		}
	})

	t.Run("a damaged entry is parsed again", func(t *testing.T) {
		want, err := desired.LoadState(host(t, root), nil)
		if err != nil {
			t.Fatal(err)
		}
		p := c.entryPath(keyNow(t, c, root))
		data := mustRead(t, p)
		if err := os.WriteFile(p, data[:len(data)/2], 0o600); err != nil {
			t.Fatal(err)
		}
		got, err := load(c, root)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("after truncating the entry (-want +got):\n%s", diff)
		}
		// An entry renamed over another key's name is refused by its key.
		other := c.entryPath([sha256.Size]byte{9})
		if err := os.WriteFile(other, mustRead(t, p), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, ok := c.get([sha256.Size]byte{9}); ok {
			t.Error("an entry stored under another key's name was read")
		}
	})

	t.Run("an entry others could write is not read", func(t *testing.T) {
		key := keyNow(t, c, root)
		p := c.entryPath(key)
		if _, ok := c.get(key); !ok {
			t.Fatal("no entry to start with")
		}
		if err := os.Chmod(p, 0o622); err != nil {
			t.Fatal(err)
		}
		if _, ok := c.get(key); ok {
			t.Error("a group- and world-writable entry was read")
		}
		os.Chmod(p, 0o600)
		if err := os.Chmod(c.Dir, 0o777); err != nil {
			t.Fatal(err)
		}
		defer os.Chmod(c.Dir, 0o700)
		if _, ok := c.get(key); ok {
			t.Error("an entry in a world-writable directory was read")
		}
		// A symbolic link in place of the entry is not followed.
		os.Chmod(c.Dir, 0o700)
		os.Rename(p, p+".real")
		os.Symlink(p+".real", p)
		if _, ok := c.get(key); ok {
			t.Error("an entry behind a symbolic link was read")
		}
	})

	t.Run("the directory is trimmed to its budget, newest first", func(t *testing.T) {
		small := &Cache{Dir: t.TempDir(), MaxBytes: 1}
		os.Chmod(small.Dir, 0o700)
		for _, mode := range []string{"384", "416", "420"} {
			writeFile(t, cfg, `{"ignition":{"version":"3.4.0"},"storage":{"files":[{"path":"/etc/a","mode":`+mode+`}]}}`)
			if _, err := load(small, root); err != nil {
				t.Fatal(err)
			}
		}
		key := keyNow(t, small, root)
		if got := cacheEntries(t, small.Dir); len(got) != 1 || got[0] != small.entryPath(key) {
			t.Errorf("entries %q; want only the newest, %s", got, small.entryPath(key))
		}
	})
}

// damageState is an entry with every field and an exact content, so that
// a damage test covers the metadata and the contents both.
func damageState(t *testing.T) (model.State, [sha256.Size]byte, []byte) {
	t.Helper()
	var full model.Entry
	fill(t, reflect.ValueOf(&full).Elem())
	st := model.State{Entries: []model.Entry{full, {Kind: model.KindFile, Path: "/etc/z", UID: ptr(0), Content: &model.Content{Exact: []byte("zz")}}},
		Files: []string{"/a"}, Warnings: []string{"w"}}
	var key [sha256.Size]byte
	key[3] = 3
	var buf bytes.Buffer
	if err := encodeState(&buf, key, &st); err != nil {
		t.Fatal(err)
	}
	return st, key, buf.Bytes()
}

// TestCacheEntryDamage: an entry cut short anywhere, or with any one bit
// flipped anywhere (magic, key, lengths, metadata, a stored digest, the
// contents, the checksums themselves), is refused by every reader: a miss,
// never another state.
func TestCacheEntryDamage(t *testing.T) {
	st, key, data := damageState(t)
	if got, err := decodeState(data, key); err != nil || !cmp.Equal(st, got) {
		t.Fatalf("the undamaged entry: %v, or it came back different", err)
	}
	file := filepath.Join(t.TempDir(), "entry")
	if err := os.WriteFile(file, data, 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(file, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	lazy := func(n int64) error {
		_, err := decodeLazy(f, n, key)
		return err
	}
	if err := lazy(int64(len(data))); err != nil {
		t.Fatalf("the undamaged entry read lazily: %v", err)
	}
	for n := range len(data) {
		if _, err := decodeState(data[:n:n], key); err == nil {
			t.Errorf("an entry cut to %d of %d bytes was read", n, len(data))
		}
		if err := lazy(int64(n)); err == nil {
			t.Errorf("an entry cut to %d of %d bytes was read lazily", n, len(data))
		}
	}
	for i := range data {
		for bit := range 8 {
			d := bytes.Clone(data)
			d[i] ^= 1 << bit
			if got, err := decodeState(d, key); err == nil {
				t.Errorf("byte %d bit %d flipped: read as a state (%d entries)", i, bit, len(got.Entries))
			}
			if _, err := f.WriteAt(d[i:i+1], int64(i)); err != nil {
				t.Fatal(err)
			}
			if err := lazy(int64(len(d))); err == nil {
				t.Errorf("byte %d bit %d flipped: read lazily as a state", i, bit)
			}
			if _, err := f.WriteAt(data[i:i+1], int64(i)); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestCacheEntryTrailingData: an entry followed by anything — a second
// entry appended, a stray byte — is refused by every reader, even with
// checksums that fit the longer file: nothing after an entry is read as
// part of it.
func TestCacheEntryTrailingData(t *testing.T) {
	_, key, data := damageState(t)
	for name, d := range map[string][]byte{
		"two entries": append(bytes.Clone(data), data...),
		"a byte more": append(bytes.Clone(data), 'x'),
	} {
		for _, sealed := range []bool{false, true} {
			if sealed {
				reseal(d, key)
			}
			if got, err := decodeState(d, key); err == nil {
				t.Errorf("%s (checksums resealed: %v): read as a state (%d entries)", name, sealed, len(got.Entries))
			}
			if _, _, err := decodeMapped(d, key); err == nil {
				t.Errorf("%s (checksums resealed: %v): mapped as a state", name, sealed)
			}
			file := filepath.Join(t.TempDir(), "entry")
			if err := os.WriteFile(file, d, 0o600); err != nil {
				t.Fatal(err)
			}
			f, err := os.Open(file)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := decodeLazy(f, int64(len(d)), key); err == nil {
				t.Errorf("%s (checksums resealed: %v): read lazily as a state", name, sealed)
			}
			f.Close()
		}
	}
}

// TestMappedContentsCheckedWhenAsked: a mapped entry whose contents have a
// flipped bit is served, and its store says it is damaged when asked (once
// a content differs from its file, see mapped); any other damage is a
// miss, as for every reader.
func TestMappedContentsCheckedWhenAsked(t *testing.T) {
	st, key, data := damageState(t)
	metaLen, off, err := splitHead(data, key)
	if err != nil {
		t.Fatal(err)
	}
	blobStart := off + int(metaLen) + crcLen
	if _, ok, err := decodeMapped(data, key); err != nil || ok() != nil {
		t.Fatalf("the undamaged entry mapped: %v, contents %v", err, ok())
	}
	for i := range data {
		d := bytes.Clone(data)
		d[i] ^= 0x08
		got, ok, err := decodeMapped(d, key)
		inContents := i >= blobStart && i < len(data)-crcLen
		switch {
		case inContents && err != nil:
			t.Errorf("byte %d (contents) flipped: a miss (%v), want the state and its contents found damaged when asked", i, err)
		case inContents && ok() == nil:
			t.Errorf("byte %d (contents) flipped: the contents' check passes", i)
		case inContents && !cmp.Equal(len(st.Entries), len(got.Entries)):
			t.Errorf("byte %d (contents) flipped: %d entries, want %d", i, len(got.Entries), len(st.Entries))
		case !inContents && err == nil && ok() == nil:
			t.Errorf("byte %d flipped: read as a state whose contents check", i)
		}
	}
}

// reseal writes the checksums that fit the (changed) metadata length of d,
// if it can still be found: the decoder then sees the damage itself.
func reseal(d []byte, key [sha256.Size]byte) {
	metaLen, off, err := splitHead(d, key)
	if err != nil || metaLen > uint64(len(d)-off) || uint64(len(d)-off)-metaLen < 2*crcLen {
		return
	}
	end := off + int(metaLen)
	binary.LittleEndian.PutUint32(d[end:], crc32.Checksum(d[:end], castagnoli))
	binary.LittleEndian.PutUint32(d[len(d)-crcLen:], crc32.Checksum(d[end+crcLen:len(d)-crcLen], castagnoli))
}

// TestCacheDecoderBehindChecksums: were a changed byte to get past the
// checksums, the decoder still refuses the entry or reads some state: it
// never panics nor allocates beyond the entry's size.
func TestCacheDecoderBehindChecksums(t *testing.T) {
	_, key, data := damageState(t)
	for i := len(cacheMagic) + sha256.Size; i < len(data); i++ {
		for _, x := range []byte{0x01, 0x80, 0xff} {
			d := bytes.Clone(data)
			d[i] ^= x
			reseal(d, key)
			decodeState(d, key)
		}
	}
}

// TestCacheDecoderPartsBehindChecksums: were a changed byte of the parts'
// lengths to get past the checksums, the decoder refuses the entry or reads
// a state of as many entries: it never panics, nor reads a part's entries
// from another's bytes without noticing.
func TestCacheDecoderPartsBehindChecksums(t *testing.T) {
	var st model.State
	for i := range 2*partLen + 5 {
		st.Entries = append(st.Entries, model.Entry{Kind: model.KindFile, Path: fmt.Sprintf("/etc/f%d", i),
			Content: &model.Content{Exact: []byte(fmt.Sprint(i))}})
	}
	var key [sha256.Size]byte
	var buf bytes.Buffer
	if err := encodeState(&buf, key, &st); err != nil {
		t.Fatal(err)
	}
	data := buf.Bytes()
	if got, err := decodeState(data, key); err != nil || !cmp.Equal(st, got) {
		t.Fatalf("the undamaged entry: %v, or it came back different", err)
	}
	_, off, err := splitHead(data, key)
	if err != nil {
		t.Fatal(err)
	}
	// The files, the warnings (none), the count, then the parts' lengths.
	for i := off; i < off+32; i++ {
		for _, x := range []byte{0x01, 0x80, 0xff} {
			d := bytes.Clone(data)
			d[i] ^= x
			reseal(d, key)
			if got, err := decodeState(d, key); err == nil {
				for j := range got.Entries {
					if c := got.Entries[j].Content; c == nil || string(c.Exact) != fmt.Sprint(j) {
						t.Fatalf("byte %d ^ %#x: entry %d read with another's content", i, x, j)
					}
				}
			}
		}
	}
}

func mustRead(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestCacheDamagedEntryIsParsedAgain: with one bit of a stored digest
// flipped (the file it describes would be drifted until the cache was
// deleted), every kind of reader misses: the config is parsed again, the
// reason is logged, and the entry written anew, so the next load is a hit.
func TestCacheDamagedEntryIsParsedAgain(t *testing.T) {
	root, _ := cacheRoot(t)
	want, err := desired.LoadState(host(t, root), nil)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte("secret"))
	for _, mode := range []struct {
		name string
		Mode
	}{{"read", ModeRead}, {"map", ModeMap}, {"lazy", ModeLazy}} {
		t.Run(mode.name, func(t *testing.T) {
			var log bytes.Buffer
			c := &Cache{Dir: filepath.Join(t.TempDir(), "cache"), Mode: mode.Mode,
				Log: slog.New(slog.NewTextHandler(&log, nil))}
			if _, err := load(c, root); err != nil {
				t.Fatal(err)
			}
			entry := cacheEntries(t, c.Dir)[0]
			b := mustRead(t, entry)
			at := bytes.Index(b, sum[:])
			if at < 0 {
				t.Fatal("the digest of /etc/a's content is not in the entry")
			}
			b[at+5] ^= 0x10
			writeFile(t, entry, string(b))
			os.Chmod(entry, 0o600)

			got, err := load(c, root)
			if err != nil {
				t.Fatal(err)
			}
			if d := got.Entries[0].Content.Digest(); d != sum {
				t.Errorf("/etc/a's content digest %x after the damage, want %x", d, sum)
			}
			if mode.Mode != ModeLazy {
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("state after the damage (-parsed +got):\n%s", diff)
				}
			}
			// The directory, never the entry's name: a digest of the
			// configs, secrets included.
			if !strings.Contains(log.String(), "ignoring a state cache entry in "+c.Dir+":") || !strings.Contains(log.String(), "checksum mismatch") ||
				strings.Contains(log.String(), filepath.Base(entry)) {
				t.Errorf("log %q; want a warning naming %s and the checksum, not %s", log.String(), c.Dir, filepath.Base(entry))
			}
			if bytes.Equal(mustRead(t, entry), b) {
				t.Error("the damaged entry was left in place")
			}
			log.Reset()
			if _, err := load(c, root); err != nil {
				t.Fatal(err)
			}
			if log.Len() != 0 {
				t.Errorf("the rewritten entry was refused: %s", log.String())
			}
		})
	}
}

// TestNilCache: a nil *Cache (Default for a user who is not root) is a
// cache that keeps nothing: a load through it is a parse.
func TestNilCache(t *testing.T) {
	root, _ := cacheRoot(t)
	want, err := desired.LoadState(host(t, root), nil)
	if err != nil {
		t.Fatal(err)
	}
	var c *Cache
	for range 2 {
		got, err := load(c, root)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("through a nil cache (-parsed +got):\n%s", diff)
		}
	}
	if _, ok := c.Get(statekey.Key{}); ok {
		t.Error("a nil cache served a state")
	}
}

// TestCacheTrimRemovesLeftovers: a temporary file an exited writer left
// (a stop abandons a load under way) is removed once it is stale, and one
// being written now is not.
func TestCacheTrimRemovesLeftovers(t *testing.T) {
	st := model.State{Entries: []model.Entry{{Kind: model.KindFile, Path: "/etc/a", Content: &model.Content{Exact: []byte("x")}}}}
	c := &Cache{Dir: filepath.Join(t.TempDir(), "cache")}
	if !c.put([sha256.Size]byte{1}, &st) {
		t.Fatal("put failed")
	}
	left, writing := filepath.Join(c.Dir, tmpPrefix+"left"), filepath.Join(c.Dir, tmpPrefix+"writing")
	for _, p := range []string{left, writing} {
		if err := os.WriteFile(p, []byte("half a state"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	old := time.Now().Add(-2 * staleTemp)
	os.Chtimes(left, old, old)
	if !c.put([sha256.Size]byte{2}, &st) {
		t.Fatal("put failed")
	}
	if _, err := os.Lstat(left); !os.IsNotExist(err) {
		t.Errorf("a stale temporary file is left: %v", err)
	}
	if _, err := os.Lstat(writing); err != nil {
		t.Errorf("a temporary file being written was removed: %v", err)
	}
}
