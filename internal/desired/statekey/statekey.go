// Package statekey names a derived state by everything it is derived from
// (Key: the root, the config files' names and bytes, the root's account
// files), and says what a store of derived states offers the loader
// (Cache). It exists apart from the load so that the state cache
// (package statecache), which the daemon keeps, the daemon's record of its
// last good state, and check, which names the SELinux policy's files the
// same way (DigestFiles), name what they keep without linking any config
// reader: naming reads bytes and file stamps (FileStamp, DigestMemo), never
// what they mean.
package statekey

import (
	"crypto/sha256"
	"encoding/binary"
	"os"
	"path/filepath"

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
	Get(key Key) (model.State, bool)
	// Put keeps *st as the state derived under key. A cache that serves
	// declared contents from where it keeps them (Content.Stored, read
	// through State.Store) may replace *st with the state as it serves
	// it, after dropping *st to return its memory first: false means it
	// did so and could not read the state back (*st is then empty, and
	// the caller derives it again). The caller should hold nothing else of
	// the derivation when it calls Put.
	Put(key Key, st *model.State) bool
}

// Key names a derivation by everything it reads: a SHA-256 over the
// root, the config files' names and contents and the root's account
// files. A changed byte in any of them is another key, so a state kept
// under a key is never stale. (A config file's digest may come from a
// DigestMemo, by a stamp that stands for those bytes: see FileStamp.) It
// does not name the code that derives: a cache that outlives the process
// adds that itself.
type Key [sha256.Size]byte

// keyDomain starts every key's hash, so that no other hash of this
// program's collides with one.
const keyDomain = "drift-monitor derivation, chunked\n"

// Of names the derivation of files (with contents raws, or as src reads
// them now if raws is nil) and the account files acct under src's root. ok
// is false when a file cannot be read whole. A file read from src whose
// trusted stamp dg's memo knows is not read: its remembered digest names
// it; those hashed with a settled stamp are remembered, at once.
func Of(src discover.Files, files []string, acct [4][]byte, raws [][]byte, dg Digests) (key Key, ok bool) {
	abs, err := filepath.Abs(src.Root.Dir())
	if err != nil {
		return key, false
	}
	sizes, sums, ok := fileDigests(src.Open, files, raws, dg)
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
// when raws is not nil, else of the file as open opens it now (see Of).
// The memo is read at most once and written at most once.
func fileDigests(open func(string) (*os.File, error), files []string, raws [][]byte, dg Digests) (sizes []int64, sums []FileDigest, ok bool) {
	sizes, sums = make([]int64, len(files)), make([]FileDigest, len(files))
	if raws != nil {
		for i, r := range raws {
			sizes[i], sums[i] = int64(len(r)), heldDigest(r)
		}
		return sizes, sums, true
	}
	var known map[FileStamp]FileDigest
	lookup := func(s FileStamp) (FileDigest, bool) {
		if dg.Memo == nil {
			return FileDigest{}, false
		}
		if known == nil {
			if known = dg.Memo.Digests(); known == nil {
				known = map[FileStamp]FileDigest{}
			}
		}
		d, ok := known[s]
		return d, ok
	}
	learned := map[FileStamp]FileDigest{}
	for i, name := range files {
		if sizes[i], sums[i], ok = hashFile(open, name, lookup, dg.Now, learned); !ok {
			return nil, nil, false
		}
	}
	if len(learned) > 0 && dg.Memo != nil {
		dg.Memo.Remember(learned)
	}
	return sizes, sums, true
}
