// Package statecache keeps derived desired states on disk, the way AIDE
// keeps its database: it is the statekey.Cache of `check` and the daemon.
//
// An entry is named by a SHA-256 of the executable's Go build ID (new code
// never reads an old entry) and the derivation's statekey.Key (the
// root, the config files, the account files): a changed byte in any of
// them is another name, so an entry is never stale and needs no
// invalidation.
//
// Each entry carries a CRC-32C of its metadata and one of its contents, and
// an entry whose bytes do not match them is a miss: the config is parsed
// again and the entry written anew. (A mapped entry's contents are checked
// when a content that differs from its file is to be reported: ModeMap.) A flipped bit, on disk or in memory
// before it got there, costs one parse, never a wrong state (a digest off by
// one bit would be lasting false drift). The checksums guard against
// damage, not against a writer: whoever can write the directory can write a
// consistent entry, which is why only the caller's or root's are read.
//
// Entries hold secret files' declared contents: the directory is 0700 and
// every entry 0600, owned by the caller. A directory or entry that another
// user could have written is neither read nor written. Nothing but a speed-up
// depends on the cache: when it cannot be used, Get misses and Put keeps
// nothing, and the state is parsed.
//
// Beside the entries it remembers config files' digests by their stamps
// (statekey.DigestMemo, digests.go), so that a load names the state of an
// unchanged config without reading it; an entry is then as fresh as the
// stamps are (statekey.FileStamp says where they are trusted).
//
// It does not promise that an entry survives: the directory is trimmed to
// MaxBytes, least recently used first, and anyone with root may remove
// entries. A lazy state (ModeLazy) keeps its entry open, so that removing it
// does not take the declared contents away from the state.
package statecache

import (
	"bufio"
	"crypto/sha256"
	"debug/elf"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/debug"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/drift-monitor/drift-monitor/internal/desired/statekey"
	"github.com/drift-monitor/drift-monitor/internal/fsx"
	"github.com/drift-monitor/drift-monitor/internal/model"
	"golang.org/x/sys/unix"
)

// Mode is how an entry is brought into memory on a hit.
type Mode int

const (
	// ModeRead reads the entry into fresh memory: for a caller that keeps
	// states a while and may load again.
	ModeRead Mode = iota
	// ModeMap maps the entry into memory: for a process that loads once
	// and exits (check), whose declared contents then stay in the page
	// cache instead of being copied onto fresh heap pages (a mapping costs
	// a fraction of a read). The mapping is
	// never released, and an entry truncated while mapped would fault: the
	// daemon, which lives long and reloads, does not map. The contents'
	// checksum is checked when the state's user asks (VerifyContents, see
	// mapped), not at the load, where summing every declared byte held up
	// the start of every check.
	ModeMap
	// ModeLazy keeps declared contents out of memory: a state's exact
	// contents become model.Stored (size and SHA-256), read back from the
	// entry through State.Store only to show a diff; the files on disk are
	// compared by digest. Put serves the entry it just stored. For the
	// daemon, whose state is otherwise mostly declared contents.
	ModeLazy
)

// Cache is a directory of entries. A nil *Cache is valid and caches
// nothing.
type Cache struct {
	Dir string
	// MaxBytes bounds the entries kept (the newest is always kept); 0 is
	// DefaultBytes.
	MaxBytes int64
	Mode     Mode
	// Log receives a warning when an entry is damaged (and so ignored);
	// nil discards it.
	Log *slog.Logger

	// The key of the state served last (lastgood.go, Served).
	servedMu sync.Mutex
	served   statekey.Key
	servedOK bool
}

// DefaultBytes bounds a cache directory's size unless the newest entry
// alone is larger (the entry of the largest configs make bench derives).
const DefaultBytes = 256 << 20

// cacheSuffix ends every entry's name; trim removes nothing else but the
// answers of labels.go.
const cacheSuffix = ".state"

// Default is the cache used by `check` and the daemon: the directory
// systemd gives the unit ($CACHE_DIRECTORY, from CacheDirectory=) or, for
// root, /var/cache/drift-monitor; nil (no cache) for other users, whose
// entries root must never read.
func Default() *Cache {
	if d := os.Getenv("CACHE_DIRECTORY"); d != "" {
		d, _, _ = strings.Cut(d, ":")
		return &Cache{Dir: d}
	}
	if os.Geteuid() == 0 {
		return &Cache{Dir: "/var/cache/drift-monitor"}
	}
	return nil
}

// entryKey names the entry of the derivation k by this executable; false
// when the executable cannot be identified (then nothing is cached).
func entryKey(k statekey.Key) (key [sha256.Size]byte, ok bool) {
	id := executableID()
	if id == nil {
		return key, false
	}
	h := sha256.New()
	for _, f := range [][]byte{[]byte(cacheMagic), id} {
		// Length-prefixed, so that no two pairs hash alike.
		var n [8]byte
		binary.LittleEndian.PutUint64(n[:], uint64(len(f)))
		h.Write(n[:])
		h.Write(f)
	}
	h.Write(k[:])
	h.Sum(key[:0])
	return key, true
}

// Get returns the state stored under k, if there is a trustworthy entry
// of it (see statekey.Cache).
func (c *Cache) Get(k statekey.Key) (model.State, bool) {
	if c == nil {
		return model.State{}, false
	}
	key, ok := entryKey(k)
	if !ok {
		return model.State{}, false
	}
	st, ok := c.get(key)
	if ok {
		c.serve(k)
	}
	return st, ok
}

// Put stores *st under k. In ModeLazy it then replaces *st with the entry
// read back lazily, after returning the memory of *st to the system; false
// when that read back failed (see statekey.Cache). A state that cannot be
// stored stays as it is.
func (c *Cache) Put(k statekey.Key, st *model.State) bool {
	if c == nil {
		return true
	}
	key, ok := entryKey(k)
	if !ok || !c.put(key, st) {
		return true
	}
	if c.Mode != ModeLazy {
		c.serve(k)
		return true
	}
	// The parse's garbage and the state just stored are most of the heap:
	// return them first, so that the lazy state is laid out in few spans
	// rather than among the freed ones, which the runtime cannot return
	// while one object in them lives.
	*st = model.State{}
	debug.FreeOSMemory()
	lazy, ok := c.get(key)
	*st = lazy
	if ok {
		c.serve(k)
	}
	return ok
}

var (
	exeIDOnce sync.Once
	exeID     []byte
)

// executableID identifies the running code: the Go build ID, a hash of the
// build's inputs, or (when the binary has none) the executable file's inode,
// size and modification time. Nil when neither can be read.
func executableID() []byte {
	exeIDOnce.Do(func() {
		// /proc/self/exe is the running binary even after an upgrade
		// replaced the file at its path.
		exe := "/proc/self/exe"
		if _, err := os.Stat(exe); err != nil {
			if exe, err = os.Executable(); err != nil {
				return
			}
		}
		if f, err := elf.Open(exe); err == nil {
			if s := f.Section(".note.go.buildid"); s != nil {
				if data, err := s.Data(); err == nil && len(data) > 16 {
					exeID = append([]byte("buildid:"), data...)
				}
			}
			f.Close()
		}
		if exeID != nil {
			return
		}
		var st syscall.Stat_t
		if err := syscall.Stat(exe, &st); err == nil {
			exeID = fmt.Appendf(nil, "file:%d:%d:%d:%d.%d", st.Dev, st.Ino, st.Size, st.Mtim.Sec, st.Mtim.Nsec)
		}
	})
	return exeID
}

// trusted reports whether st, a cache directory or entry, can only have been
// written by the caller (or root).
func trusted(st *unix.Stat_t) bool {
	euid := uint32(os.Geteuid())
	return (st.Uid == euid || st.Uid == 0) && st.Mode&0o022 == 0
}

func entryName(key [sha256.Size]byte) string {
	return hex.EncodeToString(key[:]) + cacheSuffix
}

func (c *Cache) entryPath(key [sha256.Size]byte) string {
	return filepath.Join(c.Dir, entryName(key))
}

// openDir opens the cache directory, which must be a directory (not a
// symbolic link to one) that only the caller or root can write; create
// makes it first (0700). Entries are then opened, created and renamed
// relative to it, so that nothing can swap the directory in between.
func (c *Cache) openDir(create bool) (int, bool) {
	if create {
		if err := os.MkdirAll(c.Dir, 0o700); err != nil {
			return -1, false
		}
	}
	fd, err := unix.Open(c.Dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, false
	}
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR || !trusted(&st) {
		unix.Close(fd)
		return -1, false
	}
	return fd, true
}

// openTrusted opens the file name in the cache directory dfd (path names
// it) for reading: a regular file that only the caller or root can have
// written; false when it is not one. O_NONBLOCK: a FIFO in its place must
// not block the open.
func openTrusted(dfd int, name, path string) (*os.File, unix.Stat_t, bool) {
	var st unix.Stat_t
	fd, err := unix.Openat(dfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, st, false
	}
	f := os.NewFile(uintptr(fd), path)
	if unix.Fstat(fd, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG || !trusted(&st) {
		f.Close()
		return nil, st, false
	}
	return f, st, true
}

// get reads the entry named key, if there is a trustworthy one, and marks
// it used (its modification time: trim keeps the most recently used).
func (c *Cache) get(key [sha256.Size]byte) (model.State, bool) {
	dfd, ok := c.openDir(false)
	if !ok {
		return model.State{}, false
	}
	defer unix.Close(dfd)
	name := entryName(key)
	f, st, ok := openTrusted(dfd, name, filepath.Join(c.Dir, name))
	if !ok {
		return model.State{}, false
	}
	fd := int(f.Fd())
	size := st.Size
	var state model.State
	var err error
	switch {
	case c.Mode == ModeLazy:
		// The entry stays open: its stored contents are read from it, even
		// after it is removed from the directory.
		state, err = decodeLazy(f, size, key)
	case c.Mode == ModeMap && size > 0 && size == int64(int(size)):
		var data []byte
		var contentsOK func() error
		if data, err = unix.Mmap(fd, 0, int(size), unix.PROT_READ, unix.MAP_SHARED|unix.MAP_POPULATE); err == nil {
			if state, contentsOK, err = decodeMapped(data, key); err == nil {
				state.Store = &mapped{c: c, contentsOK: sync.OnceValue(contentsOK)}
			}
		}
	default:
		data := make([]byte, size)
		if _, err = io.ReadFull(f, data); err == nil {
			state, err = decodeState(data, key)
		}
	}
	if c.Mode != ModeLazy || err != nil {
		f.Close()
	}
	if err != nil {
		if c.Log != nil {
			// Not named: an entry's name is a digest of the configs, whose
			// secrets a name in the journal would let be guessed offline.
			c.Log.Warn(fmt.Sprintf("ignoring a state cache entry in %s: %v; parsing the config again", c.Dir, err))
		}
		return model.State{}, false
	}
	unix.UtimesNanoAt(dfd, name, nil, unix.AT_SYMLINK_NOFOLLOW)
	return state, true
}

// put writes st as the entry named key (a temporary file renamed into place,
// so that a reader never sees half an entry) and trims the directory. Errors
// are ignored: the cache is only a speed-up.
func (c *Cache) put(key [sha256.Size]byte, st *model.State) bool {
	dfd, ok := c.openDir(true)
	if !ok {
		return false
	}
	defer unix.Close(dfd)
	// No fsync: a cache may lose an entry to a power cut.
	err := fsx.WriteFile(fsx.Sys{}, dfd, fsx.File{
		Name: entryName(key), Pattern: tmpPrefix + "*", Mode: 0o600, How: fsx.Replace, NoSync: true,
	}, func(f io.Writer) error {
		w := bufio.NewWriterSize(f, 1<<20)
		if err := encodeState(w, key, st); err != nil {
			return err
		}
		return w.Flush()
	})
	if err != nil {
		return false
	}
	c.trim(dfd, entryName(key))
	return true
}

// tmpPrefix starts the name of a file being written (fsx.WriteFile's
// Pattern in this package).
const tmpPrefix = ".tmp-"

// staleTemp is the age after which a temporary file is a leftover: a
// process that exited while it wrote (a stop abandons a load under way,
// daemon.Close) leaves it, and nothing renames it any more. A writer
// renames its own within the time it takes to write one state.
const staleTemp = time.Hour

// removeStaleTemp unlinks the temporary file name of dfd when it is a
// leftover (staleTemp), so that leftovers neither pile up nor escape
// MaxBytes.
func removeStaleTemp(dfd int, name string) {
	var st unix.Stat_t
	if unix.Fstatat(dfd, name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		return
	}
	if time.Since(time.Unix(st.Mtim.Unix())) > staleTemp {
		unix.Unlinkat(dfd, name, 0)
	}
}

// trim removes the least recently used entries beyond MaxBytes, and the
// leftovers of writes that never ended (removeStaleTemp); keep and the
// last good state's entry (lastgood.go) are never removed.
func (c *Cache) trim(dfd int, keep string) {
	good := lastGoodEntry(dfd)
	max := c.MaxBytes
	if max == 0 {
		max = DefaultBytes
	}
	dup, err := unix.Dup(dfd)
	if err != nil {
		return
	}
	dir := os.NewFile(uintptr(dup), c.Dir)
	defer dir.Close()
	names, err := dir.Readdirnames(-1)
	if err != nil {
		return
	}
	type ent struct {
		name  string
		size  int64
		mtime int64
	}
	var ents []ent
	total := int64(0)
	for _, n := range names {
		var st unix.Stat_t
		if strings.HasPrefix(n, tmpPrefix) {
			removeStaleTemp(dfd, n)
			continue
		}
		kept := strings.HasSuffix(n, cacheSuffix) || strings.HasSuffix(n, labelsSuffix) // labels.go
		if !kept || unix.Fstatat(dfd, n, &st, unix.AT_SYMLINK_NOFOLLOW) != nil ||
			st.Mode&unix.S_IFMT != unix.S_IFREG {
			continue
		}
		if n == keep || n == good {
			total += st.Size
			continue
		}
		ents = append(ents, ent{n, st.Size, st.Mtim.Nano()})
	}
	sort.Slice(ents, func(i, j int) bool { return ents[i].mtime > ents[j].mtime })
	for _, e := range ents {
		total += e.size
		if total > max {
			unix.Unlinkat(dfd, e.name, 0)
		}
	}
}

// mapped is the Store of a state read from a mapped entry (ModeMap): its
// contents are Exact, in the mapping, and their checksum is checked only
// when VerifyContents is called. A check calls it when a content it
// compared differs (cli's runFullCheck): a declared content that equals
// its file is right whatever the checksum says, since a flipped bit that
// made it so would have had to make the same change to the file; one that
// differs is reported only once the checksum matches, and otherwise the
// config is parsed again, as at a damaged load.
type mapped struct {
	c          *Cache
	contentsOK func() error
}

// ReadStored: a mapped state keeps no Stored contents.
func (m *mapped) ReadStored(*model.Stored) ([]byte, error) {
	return nil, errors.New("a mapped state cache entry keeps its contents in memory")
}

// VerifyContents checks the contents' checksum (once), warning as a
// damaged load does when it does not match.
func (m *mapped) VerifyContents() error {
	err := m.contentsOK()
	if err != nil && m.c.Log != nil {
		m.c.Log.Warn(fmt.Sprintf("ignoring a state cache entry in %s: %v; parsing the config again", m.c.Dir, err))
	}
	return err
}
