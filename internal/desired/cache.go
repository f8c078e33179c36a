package desired

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"io"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/drift-monitor/drift-monitor/internal/desired/discover"
	"github.com/drift-monitor/drift-monitor/internal/model"
)

// Cache keeps derived states between loads, so that a load does not parse
// and validate the whole config again (most of a cold check's time:
// docs/benchmarks.md, the cold load); package statecache keeps them on disk. Neither method
// fails loudly: a cache is only a speed-up, and a load that cannot use it
// parses.
type Cache interface {
	// Get returns the state derived under key, if the cache holds it.
	Get(key StateKey) (model.State, bool)
	// Put keeps *st as the state derived under key. A cache that serves
	// declared contents from where it keeps them (Content.Stored, read
	// through State.Store) may replace *st with the state as it serves
	// it, after dropping *st to return its memory first: false means it
	// did so and could not read the state back (*st is then empty, and
	// the caller derives it again). The caller should hold nothing else of
	// the derivation when it calls Put.
	Put(key StateKey, st *model.State) bool
}

// StateKey names a derivation by everything it reads: a SHA-256 over the
// root, the config files' names and contents and the root's account
// files. A changed byte in any of them is another key, so a state kept
// under a key is never stale. (A config file's digest may come from a
// DigestMemo, by a stamp that stands for those bytes: see FileStamp.) It
// does not name the code that derives: a cache that outlives the process
// adds that itself.
type StateKey [sha256.Size]byte

// keyDomain starts every key's hash, so that no other hash of this
// program's collides with one.
const keyDomain = "drift-monitor derivation, chunked\n"

// LoadCached is LoadState through c: a state that c holds under the key of
// these inputs is served from it, and a state derived is given to it. Only
// successful loads are kept: a bad config is parsed every time and
// reported with its position. Configs that cannot be hashed without being
// consumed (a pipe) are not cached at all. The SSH keys are then put where
// root's layout puts them, decided at every load: it is the host's, not
// the config's. A nil c caches nothing.
func LoadCached(c Cache, root Host, explicit []string) (model.State, error) {
	st, err := loadState(c, root, explicit)
	if err != nil {
		return st, err
	}
	return st, applySSHLayout(root, &st)
}

func loadState(c Cache, root Host, explicit []string) (model.State, error) {
	files, err := discover.Fragments(root, explicit)
	if err != nil {
		return model.State{}, err
	}
	return loadFiles(c, discover.Files{Root: root, Explicit: len(explicit) > 0}, files)
}

// loadFiles is loadState for the config files listed, read through src.
// A config another user could have written is refused (writers.go).
func loadFiles(c Cache, src discover.Files, files []string) (model.State, error) {
	if err := src.CheckWriters(files); err != nil {
		return model.State{}, err
	}
	root := src.Root
	acct, err := readAccountFiles(root)
	if err != nil {
		return model.State{}, fmt.Errorf("reading accounts in %s: %w", root.Dir(), err)
	}
	if c != nil {
		// The config files are hashed as they are read, without holding them
		// (or named by their stamps, unread): on a hit their bytes are not
		// needed.
		memo, _ := c.(DigestMemo)
		key, ok := keyOf(src, files, acct, nil, digests{memo, time.Now})
		if !ok {
			c = nil
		} else if st, ok := c.Get(key); ok {
			return st, nil
		}
	}
	raws, err := src.ReadAll(files)
	if err != nil {
		return model.State{}, err
	}
	var key StateKey
	ok := false
	if c != nil {
		// Named by the bytes parsed, which may differ from those hashed above.
		key, ok = keyOf(src, files, acct, raws, digests{})
	}
	// The parse lets go of the bytes (reading one again should its report
	// need it), and nothing of it stays alive into Put (see Cache).
	reread := func(file string) func() ([]byte, error) {
		// Only a regular file can be read again (discover.Files.Open
		// opens nothing else): a pipe's bytes are kept.
		f, err := src.Open(file)
		if err != nil {
			return nil
		}
		f.Close()
		return func() ([]byte, error) {
			r, err := src.ReadAll([]string{file})
			if err != nil {
				return nil, err
			}
			return r[0], nil
		}
	}
	var size int64
	for _, r := range raws {
		size += int64(len(r))
	}
	lift := boundMemory(size) // until the state is stored, which copies its contents
	defer lift()
	st, err := deriveStateFrom(root.Dir(), files, raws, acct, reread)
	raws = nil
	if err != nil {
		return model.State{}, err
	}
	if c != nil {
		if ok && !c.Put(key, &st) {
			// The state went into the cache, which lost it (an entry
			// removed by hand in between): parse again.
			return loadFiles(nil, src, files)
		}
	}
	return st, nil
}

// LoadInRoot is LoadState for the config files at these host paths, read
// inside root as the default locations are (a link on the way resolved as
// if root were /, never to the running host's file), merged in the order
// given. Errors name the files inside root (Host.Join).
func LoadInRoot(root Host, hostFiles []string) (model.State, error) {
	files := make([]string, len(hostFiles))
	for i, f := range hostFiles {
		files[i] = root.Join(f)
	}
	st, err := loadFiles(nil, discover.Files{Root: root}, files)
	if err != nil {
		return st, err
	}
	return st, applySSHLayout(root, &st)
}

// keyOf names the derivation of files (with contents raws, or as src reads
// them now if raws is nil) and the account files acct under src's root. ok
// is false when a file cannot be read whole. A file read from src whose
// trusted stamp dg's memo knows is not read: its remembered digest names
// it; those hashed with a settled stamp are remembered, at once.
func keyOf(src discover.Files, files []string, acct [4][]byte, raws [][]byte, dg digests) (key StateKey, ok bool) {
	abs, err := filepath.Abs(src.Root.Dir())
	if err != nil {
		return key, false
	}
	sizes, sums, ok := fileDigests(src, files, raws, dg)
	if !ok {
		return key, false
	}
	h := sha256.New()
	length := func(n int64) {
		// Every field is length-prefixed, so that no two sequences of fields
		// hash alike.
		var b [8]byte
		binary.LittleEndian.PutUint64(b[:], uint64(n))
		h.Write(b[:])
	}
	field := func(b []byte) {
		length(int64(len(b)))
		h.Write(b)
	}
	field([]byte(keyDomain))
	field([]byte(abs))
	for _, a := range acct {
		if a == nil {
			field([]byte("missing"))
		} else {
			field([]byte("present"))
			field(a)
		}
	}
	for i, name := range files {
		field([]byte(name))
		length(sizes[i])
		h.Write(sums[i][:])
	}
	h.Sum(key[:0])
	return key, true
}

// fileDigests returns the size and FileDigest of each of files: of raws[i]
// when raws is not nil, else of the file as src reads it now (see keyOf).
// The memo is read at most once and written at most once.
func fileDigests(src discover.Files, files []string, raws [][]byte, dg digests) (sizes []int64, sums []FileDigest, ok bool) {
	sizes, sums = make([]int64, len(files)), make([]FileDigest, len(files))
	if raws != nil {
		for i, r := range raws {
			sizes[i], sums[i] = int64(len(r)), heldDigest(r)
		}
		return sizes, sums, true
	}
	var known map[FileStamp]FileDigest
	lookup := func(s FileStamp) (FileDigest, bool) {
		if dg.memo == nil {
			return FileDigest{}, false
		}
		if known == nil {
			if known = dg.memo.Digests(); known == nil {
				known = map[FileStamp]FileDigest{}
			}
		}
		d, ok := known[s]
		return d, ok
	}
	learned := map[FileStamp]FileDigest{}
	for i, name := range files {
		if sizes[i], sums[i], ok = hashFile(src, name, lookup, dg.now, learned); !ok {
			return nil, nil, false
		}
	}
	if len(learned) > 0 && dg.memo != nil {
		dg.memo.Remember(learned)
	}
	return sizes, sums, true
}

// heldDigest is the FileDigest of contents in memory.
func heldDigest(b []byte) FileDigest {
	return sha256.Sum256(chunkDigests(int64(len(b)), func(_ []byte, off, end int64) ([]byte, error) {
		return b[off:end], nil
	}))
}

// hashFile returns the size and the digest of the regular file name as src
// reads it now; false when it is not one or cannot be read whole. Only
// regular files are hashed (see discover.Files.Open), the rest not cached.
// A file whose trusted stamp lookup knows is not read. A file hashed is put
// in learned when its stamp is trusted, was settled when taken (at now())
// and is the same after the read.
func hashFile(src discover.Files, name string, lookup func(FileStamp) (FileDigest, bool), now func() time.Time,
	learned map[FileStamp]FileDigest) (size int64, d FileDigest, ok bool) {
	f, err := src.Open(name)
	if err != nil {
		return 0, d, false
	}
	defer f.Close()
	var taken time.Time
	if now != nil {
		taken = now() // before the stamp: git's racy rule measures from here
	}
	before, trusted, err := stampOf(f)
	if err != nil || before.Mode&unix.S_IFMT != unix.S_IFREG {
		return 0, d, false
	}
	size = before.Size
	if trusted {
		if d, ok := lookup(before); ok {
			return size, d, true
		}
	}
	chunks := chunkDigests(size, func(buf []byte, off, end int64) ([]byte, error) {
		n, err := f.ReadAt(buf[:end-off], off)
		return buf[:n], err
	})
	if chunks == nil {
		return 0, d, false
	}
	// The file must end where it ended when it was measured: a file that
	// grew is not the one hashed.
	var one [1]byte
	if n, err := f.ReadAt(one[:], size); n != 0 || err != io.EOF {
		return 0, d, false
	}
	d = sha256.Sum256(chunks)
	if trusted && now != nil && before.Settled(taken) {
		// Remembered only if nothing changed it while it was read.
		if after, _, err := stampOf(f); err == nil && after == before {
			learned[before] = d
		}
	}
	return size, d, true
}

// hashChunk is the span of a config file that one SHA-256 covers. A key
// hashes the SHA-256 of each span in turn rather than the bytes
// themselves, so that the spans are hashed on every core: a cached check
// hashes the whole config before it can compare anything, and with
// thousands of declared files the config is megabytes.
const hashChunk = 256 << 10

// chunkDigests returns the SHA-256 of each hashChunk of size bytes,
// concatenated; nil when one cannot be read. read returns the bytes from off
// to end, in buf (a worker's, hashChunk long) or elsewhere. The chunks are
// hashed in parallel. Changing a byte changes the digest of its chunk, and
// so the key: the key is as collision-resistant as SHA-256 over the
// concatenation, and the sizes hashed before it fix where chunks begin.
func chunkDigests(size int64, read func(buf []byte, off, end int64) ([]byte, error)) []byte {
	n := int((size + hashChunk - 1) / hashChunk)
	out := make([]byte, n*sha256.Size)
	workers := min(runtime.GOMAXPROCS(0), n)
	var next atomic.Int64
	var failed atomic.Bool
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var buf []byte
			for {
				i := next.Add(1) - 1
				if i >= int64(n) || failed.Load() {
					return
				}
				if buf == nil {
					buf = make([]byte, hashChunk)
				}
				off := i * hashChunk
				end := min(off+hashChunk, size)
				b, err := read(buf, off, end)
				if err != nil || int64(len(b)) != end-off {
					failed.Store(true)
					return
				}
				sum := sha256.Sum256(b)
				copy(out[i*sha256.Size:], sum[:])
			}
		}()
	}
	wg.Wait()
	if failed.Load() {
		return nil
	}
	return out
}
