package desired

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"debug/elf"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/debug"
	"sort"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// StateCache keeps derived states on disk, the way AIDE keeps its database,
// so that a check does not parse and validate the whole Ignition config again
// (at 10,000 files that is 95% of a check's time).
//
// An entry is named by a SHA-256 of everything a derivation reads: the
// executable's Go build ID (new code never reads an old entry), the root, the
// config files' names and contents and the root's account files. A changed
// byte in any of them is another name, so an entry is never stale and needs
// no invalidation. Only successful loads are kept: a bad config is parsed
// every time and reported with its position.
//
// Each entry carries a CRC-32C of its metadata and one of its contents, and
// an entry whose bytes do not match them is a miss: the config is parsed
// again and the entry written anew. A flipped bit, on disk or in memory
// before it got there, costs one parse, never a wrong state (a digest off by
// one bit was lasting false drift, issue 10). The checksums guard against
// damage, not against a writer: whoever can write the directory can write a
// consistent entry, which is why only the caller's or root's are read.
//
// Entries hold secret files' declared contents: the directory is 0700 and
// every entry 0600, owned by the caller. A directory or entry that another
// user could have written is neither read nor written. Nothing but a speed-up
// depends on the cache: when it cannot be used the state is parsed.
//
// A nil *StateCache is valid and caches nothing.
type StateCache struct {
	Dir string
	// MaxBytes bounds the entries kept (the newest is always kept); 0 is
	// DefaultCacheBytes.
	MaxBytes int64
	// Map maps an entry into memory rather than reading it: for a process
	// that loads once and exits (check), whose declared contents then stay
	// in the page cache instead of being copied onto fresh heap pages (on
	// these machines reading 13 MB cost 40 ms, mapping it 3 ms). The mapping
	// is never released, and an entry truncated while mapped would fault:
	// the daemon, which lives long and reloads, reads.
	Map bool
	// Lazy keeps declared contents out of memory: a state's exact contents
	// become Stored (size and SHA-256), read back from the entry only to
	// show a diff; the files on disk are compared by digest. After a miss,
	// the entry just stored is served. For the daemon, whose state at
	// 100,000 files was 128 MB of contents in a 175 MB heap.
	Lazy bool
	// Log receives a warning when an entry is damaged (and so ignored);
	// nil discards it.
	Log *slog.Logger
}

// DefaultCacheBytes bounds a cache directory's size unless the newest entry
// alone is larger (a config of 100,000 files derives about 140 MB).
const DefaultCacheBytes = 256 << 20

const (
	cacheMagic  = "drift-monitor state cache 3\n"
	cacheSuffix = ".state"
)

// castagnoli is CRC-32C, the entries' checksum. A CRC catches every single
// flipped bit and every burst of up to 32, which is the damage a disk or a
// copy does; a random change escapes it once in 2^32. It costs next to
// nothing beside reading the entry: 23 GB/s on these machines (SSE 4.2 on
// amd64, the CRC instructions on arm64), where SHA-256 gives 1.7 GB/s, 6 ms
// against 80 ms for the 140 MB entry of 100,000 files that a check maps. A
// cryptographic digest would buy nothing more: it is not keyed, and nobody
// but the caller or root can write an entry that is read.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// crcLen is the size of a stored checksum.
const crcLen = 4

// DefaultCache is the cache used by `check` and the daemon: the directory
// systemd gives the unit ($CACHE_DIRECTORY, from CacheDirectory=) or, for
// root, /var/cache/drift-monitor; nil (no cache) for other users, whose
// entries root must never read.
func DefaultCache() *StateCache {
	if d := os.Getenv("CACHE_DIRECTORY"); d != "" {
		d, _, _ = strings.Cut(d, ":")
		return &StateCache{Dir: d}
	}
	if os.Geteuid() == 0 {
		return &StateCache{Dir: "/var/cache/drift-monitor"}
	}
	return nil
}

// LoadState is the package's LoadState through the cache, with the SSH
// keys where root's layout puts them (decided each time: it is the host's,
// not the config's).
func (c *StateCache) LoadState(root Host, explicit []string) (State, error) {
	st, err := c.loadState(root, explicit)
	if err != nil {
		return st, err
	}
	return st, applySSHLayout(root.Dir(), &st)
}

func (c *StateCache) loadState(root Host, explicit []string) (State, error) {
	files, err := Fragments(root, explicit)
	if err != nil {
		return State{}, err
	}
	src := fragmentFiles{root, len(explicit) > 0}
	acct, err := readAccountFiles(root)
	if err != nil {
		return State{}, fmt.Errorf("reading accounts in %s: %w", root.Dir(), err)
	}
	if c != nil {
		// The config files are hashed as they are read, without holding them:
		// on a hit their bytes are not needed. Configs that cannot be hashed
		// so (a pipe) are not cached at all.
		key, ok := keyOf(src, files, acct, nil)
		if !ok {
			c = nil
		} else if st, ok := c.get(key); ok {
			return st, nil
		}
	}
	raws, err := readConfigs(src, files)
	if err != nil {
		return State{}, err
	}
	st, err := deriveState(root.Dir(), files, raws, acct)
	if err != nil {
		return State{}, err
	}
	if c != nil {
		// Named by the bytes parsed, which may differ from those hashed above.
		if key, ok := keyOf(src, files, acct, raws); ok && c.put(key, &st) && c.Lazy {
			// The parse's garbage and the state just stored are most of the
			// heap: return them first, so that the lazy state is laid out
			// in few spans rather than among the freed ones, which the
			// runtime cannot return while one object in them lives.
			st, raws = State{}, nil
			debug.FreeOSMemory()
			if lazy, ok := c.get(key); ok {
				return lazy, nil
			}
			// The entry vanished in between (removed by hand): parse again.
			var none *StateCache
			return none.loadState(root, explicit)
		}
	}
	return st, nil
}

// Lazify stores st in an entry of c and returns it read back lazily, its
// exact contents Stored: what a daemon holds (c.Lazy aside). The entry is
// named at random, not by what st came from.
func (c *StateCache) Lazify(st *State) (State, error) {
	var key [sha256.Size]byte
	rand.Read(key[:])
	if !c.put(key, st) {
		return State{}, fmt.Errorf("cannot store a state in %s", c.Dir)
	}
	lazy := *c
	lazy.Lazy = true
	if got, ok := lazy.get(key); ok {
		return got, nil
	}
	return State{}, fmt.Errorf("cannot read back the state stored in %s", c.Dir)
}

// keyOf names the derivation of files (with contents raws, or as src reads
// them now if raws is nil) and the account files acct under src's root by
// this executable. ok is false when the executable cannot be identified or a
// file cannot be read whole.
func keyOf(src fragmentFiles, files []string, acct [4][]byte, raws [][]byte) (key [sha256.Size]byte, ok bool) {
	id := executableID()
	if id == nil {
		return key, false
	}
	abs, err := filepath.Abs(src.root.Dir())
	if err != nil {
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
	field([]byte(cacheMagic))
	field(id)
	field([]byte(abs))
	for _, a := range acct {
		if a == nil {
			field([]byte("missing"))
		} else {
			field([]byte("present"))
			field(a)
		}
	}
	var buf []byte
	for i, name := range files {
		field([]byte(name))
		if raws != nil {
			field(raws[i])
			continue
		}
		// Only regular files are hashed (see open), the rest not cached.
		f, err := src.open(name)
		if err != nil {
			return key, false
		}
		fi, err := f.Stat()
		if err == nil && !fi.Mode().IsRegular() {
			err = errors.New("not a regular file")
		}
		if err == nil {
			length(fi.Size())
			if buf == nil {
				buf = make([]byte, 256<<10)
			}
			var n int64
			n, err = io.CopyBuffer(struct{ io.Writer }{h}, io.LimitReader(f, fi.Size()+1), buf)
			if err == nil && n != fi.Size() {
				err = errors.New("changed while read")
			}
		}
		f.Close()
		if err != nil {
			return key, false
		}
	}
	h.Sum(key[:0])
	return key, true
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

func (c *StateCache) entryPath(key [sha256.Size]byte) string {
	return filepath.Join(c.Dir, entryName(key))
}

// openDir opens the cache directory, which must be a directory (not a
// symbolic link to one) that only the caller or root can write; create
// makes it first (0700). Entries are then opened, created and renamed
// relative to it, so that nothing can swap the directory in between.
func (c *StateCache) openDir(create bool) (int, bool) {
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

// get reads the entry named key, if there is a trustworthy one, and marks
// it used (its modification time: trim keeps the most recently used).
func (c *StateCache) get(key [sha256.Size]byte) (State, bool) {
	dfd, ok := c.openDir(false)
	if !ok {
		return State{}, false
	}
	defer unix.Close(dfd)
	name := entryName(key)
	// O_NONBLOCK: a FIFO in its place must not block the open.
	fd, err := unix.Openat(dfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return State{}, false
	}
	f := os.NewFile(uintptr(fd), filepath.Join(c.Dir, name))
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG || !trusted(&st) {
		f.Close()
		return State{}, false
	}
	size := st.Size
	var state State
	switch {
	case c.Lazy:
		// The entry stays open: its stored contents are read from it, even
		// after it is removed from the directory.
		state, err = decodeLazy(f, size, key)
	case c.Map && size > 0 && size == int64(int(size)):
		var data []byte
		if data, err = unix.Mmap(fd, 0, int(size), unix.PROT_READ, unix.MAP_SHARED|unix.MAP_POPULATE); err == nil {
			state, err = decodeState(data, key)
		}
	default:
		data := make([]byte, size)
		if _, err = io.ReadFull(f, data); err == nil {
			state, err = decodeState(data, key)
		}
	}
	if !c.Lazy || err != nil {
		f.Close()
	}
	if err != nil {
		if c.Log != nil {
			c.Log.Warn(fmt.Sprintf("ignoring the state cache entry %s: %v; parsing the config again", f.Name(), err))
		}
		return State{}, false
	}
	unix.UtimesNanoAt(dfd, name, nil, unix.AT_SYMLINK_NOFOLLOW)
	return state, true
}

// put writes st as the entry named key (a temporary file renamed into place,
// so that a reader never sees half an entry) and trims the directory. Errors
// are ignored: the cache is only a speed-up.
func (c *StateCache) put(key [sha256.Size]byte, st *State) bool {
	dfd, ok := c.openDir(true)
	if !ok {
		return false
	}
	defer unix.Close(dfd)
	var rnd [8]byte
	rand.Read(rnd[:])
	tmp := ".tmp-" + hex.EncodeToString(rnd[:])
	fd, err := unix.Openat(dfd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return false
	}
	f := os.NewFile(uintptr(fd), tmp)
	w := bufio.NewWriterSize(f, 1<<20)
	if encodeState(w, key, st) != nil || w.Flush() != nil || f.Close() != nil ||
		unix.Renameat(dfd, tmp, dfd, entryName(key)) != nil {
		f.Close()
		unix.Unlinkat(dfd, tmp, 0)
		return false
	}
	c.trim(dfd, entryName(key))
	return true
}

// trim removes the least recently used entries beyond MaxBytes; keep is
// never removed.
func (c *StateCache) trim(dfd int, keep string) {
	max := c.MaxBytes
	if max == 0 {
		max = DefaultCacheBytes
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
		if !strings.HasSuffix(n, cacheSuffix) || unix.Fstatat(dfd, n, &st, unix.AT_SYMLINK_NOFOLLOW) != nil ||
			st.Mode&unix.S_IFMT != unix.S_IFREG {
			continue
		}
		if n == keep {
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

// The entry format, after the magic and the key: the length of the metadata,
// the metadata (the config files, the warnings, then the entries, each as
// flags and fields in a fixed order; an exact content as its length and
// SHA-256), the CRC-32C of everything so far, then the exact contents one
// after the other and their CRC-32C. Numbers are varints, strings and byte
// strings a length and their bytes, checksums 4 bytes little-endian. Keeping
// the contents apart lets a lazy reader skip them, and a mapped or read entry
// serve them without a copy: a state's Exact slices share the entry's buffer
// (capped, so that nothing appends into a neighbour).
const (
	flagMode = 1 << iota
	flagUID
	flagGID
	flagEnabled
	flagEnabledTrue
	flagArgPresent
	flagContent
	flagExact
	flagHash
	flagModeOptional
	flagMayBeAbsent
)

// encodeState writes the magic, the key and st.
func encodeState(w io.Writer, key [sha256.Size]byte, st *State) error {
	meta := make([]byte, 0, 64<<10)
	meta = appendStrings(meta, st.Files)
	meta = appendStrings(meta, st.Warnings)
	meta = binary.AppendUvarint(meta, uint64(len(st.Entries)))
	for i := range st.Entries {
		if c := st.Entries[i].Content; c != nil && c.Stored != nil {
			// A lazy state came from an entry; it is never stored again.
			return errors.New("a state with stored contents cannot be stored")
		}
		meta = appendEntry(meta, &st.Entries[i])
	}
	head := append([]byte(cacheMagic), key[:]...)
	head = binary.AppendUvarint(head, uint64(len(meta)))
	sum := crc32.Update(crc32.Checksum(head, castagnoli), castagnoli, meta)
	if _, err := w.Write(head); err != nil {
		return err
	}
	if _, err := w.Write(binary.LittleEndian.AppendUint32(meta, sum)); err != nil {
		return err
	}
	sum = 0
	for i := range st.Entries {
		if c := st.Entries[i].Content; c != nil && c.Exact != nil {
			sum = crc32.Update(sum, castagnoli, c.Exact)
			if _, err := w.Write(c.Exact); err != nil {
				return err
			}
		}
	}
	_, err := w.Write(binary.LittleEndian.AppendUint32(nil, sum))
	return err
}

func appendBytes(b, s []byte) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

func appendString(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

func appendStrings(b []byte, ss []string) []byte {
	b = binary.AppendUvarint(b, uint64(len(ss)))
	for _, s := range ss {
		b = appendString(b, s)
	}
	return b
}

func appendEntry(b []byte, e *Entry) []byte {
	var flags uint64
	set := func(f uint64, on bool) {
		if on {
			flags |= f
		}
	}
	c := e.Content
	set(flagMode, e.Mode != nil)
	set(flagUID, e.UID != nil)
	set(flagGID, e.GID != nil)
	set(flagEnabled, e.Enabled != nil)
	set(flagEnabledTrue, e.Enabled != nil && *e.Enabled)
	set(flagArgPresent, e.ArgPresent)
	set(flagContent, c != nil)
	set(flagExact, c != nil && c.Exact != nil)
	set(flagHash, c != nil && c.Hash != nil)
	set(flagModeOptional, e.ModeOptional != 0)
	set(flagMayBeAbsent, e.MayBeAbsent)
	b = binary.AppendUvarint(b, flags)
	for _, s := range [...]string{string(e.Kind), e.Path, e.Unit, e.User, e.OwnerProblem, e.GroupProblem, e.Target, e.Arg} {
		b = appendString(b, s)
	}
	b = binary.AppendVarint(b, int64(e.Type))
	if e.Mode != nil {
		b = binary.AppendUvarint(b, uint64(*e.Mode))
	}
	if e.ModeOptional != 0 {
		b = binary.AppendUvarint(b, uint64(e.ModeOptional))
	}
	if e.UID != nil {
		b = binary.AppendVarint(b, int64(*e.UID))
	}
	if e.GID != nil {
		b = binary.AppendVarint(b, int64(*e.GID))
	}
	if c != nil {
		if c.Exact != nil {
			b = binary.AppendUvarint(b, uint64(len(c.Exact)))
			sum := sha256.Sum256(c.Exact)
			b = append(b, sum[:]...)
		}
		if c.Hash != nil {
			b = appendString(b, c.Hash.Algorithm)
			b = appendString(b, c.Hash.Hex)
		}
		b = appendBytes(b, c.Suffix)
		b = appendString(b, c.Unverifiable)
	}
	return b
}

var (
	errCacheEntry   = errors.New("not a state cache entry for this key")
	errCacheDamaged = errors.New("damaged: checksum mismatch")
)

// checkCRC compares the checksum stored in the first crcLen bytes of stored
// with sum.
func checkCRC(stored []byte, sum uint32) error {
	if binary.LittleEndian.Uint32(stored) != sum {
		return errCacheDamaged
	}
	return nil
}

// reader takes the metadata apart; the first malformed field sets err, and
// every later read returns zero values. Exact contents come from blob (a
// slice of it) or, when blob is nil, become Stored at blobOff in file.
type reader struct {
	b       []byte
	err     error
	blob    []byte
	blobLen int64
	blobOff int64    // of the blob in the entry file
	file    *os.File // the entry, for a lazy reading
	next    int64    // offset in the blob of the next exact content
}

func (r *reader) uvarint() uint64 { return number(r, binary.Uvarint) }

func (r *reader) varint() int64 { return number(r, binary.Varint) }

// number reads one varint with decode (binary.Uvarint or binary.Varint).
func number[T uint64 | int64](r *reader, decode func([]byte) (T, int)) T {
	if r.err != nil {
		return 0
	}
	v, n := decode(r.b)
	if n <= 0 {
		r.err = errCacheEntry
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) take(n uint64) []byte {
	if r.err != nil {
		return nil
	}
	if n > uint64(len(r.b)) {
		r.err = errCacheEntry
		return nil
	}
	s := r.b[:n:n]
	r.b = r.b[n:]
	return s
}

func (r *reader) bytes() []byte { return r.take(r.uvarint()) }

func (r *reader) string() string { return string(r.bytes()) }

func (r *reader) strings() []string {
	n := r.uvarint()
	if n > uint64(len(r.b)) {
		r.err = errCacheEntry
	}
	if r.err != nil || n == 0 {
		return nil
	}
	ss := make([]string, n)
	for i := range ss {
		ss[i] = r.string()
	}
	return ss
}

// exact reads an exact content's length and digest and sets it in c.
func (r *reader) exact(c *Content) {
	n := r.uvarint()
	sum := r.take(sha256.Size)
	if r.err != nil {
		return
	}
	if n > uint64(r.blobLen-r.next) {
		r.err = errCacheEntry
		return
	}
	if r.blob != nil {
		c.Exact = r.blob[r.next : r.next+int64(n) : r.next+int64(n)]
	} else {
		c.Stored = &Stored{Size: int64(n), Sum: [sha256.Size]byte(sum), f: r.file, off: r.blobOff + r.next}
	}
	r.next += int64(n)
}

func (r *reader) entry() Entry {
	flags := r.uvarint()
	e := Entry{Kind: Kind(r.string()), Path: r.string(), Unit: r.string(), User: r.string(),
		OwnerProblem: r.string(), GroupProblem: r.string(), Target: r.string(), Arg: r.string()}
	e.Type = Type(r.varint())
	e.ArgPresent = flags&flagArgPresent != 0
	e.MayBeAbsent = flags&flagMayBeAbsent != 0
	if flags&flagMode != 0 {
		m := uint32(r.uvarint())
		e.Mode = &m
	}
	if flags&flagModeOptional != 0 {
		e.ModeOptional = uint32(r.uvarint())
	}
	if flags&flagUID != 0 {
		u := int(r.varint())
		e.UID = &u
	}
	if flags&flagGID != 0 {
		g := int(r.varint())
		e.GID = &g
	}
	if flags&flagEnabled != 0 {
		on := flags&flagEnabledTrue != 0
		e.Enabled = &on
	}
	if flags&flagContent != 0 {
		c := &Content{}
		if flags&flagExact != 0 {
			r.exact(c)
		}
		if flags&flagHash != 0 {
			c.Hash = &Hash{Algorithm: r.string(), Hex: r.string()}
		}
		if s := r.bytes(); len(s) > 0 {
			if r.blob == nil {
				// A lazy reading's metadata buffer is dropped after it:
				// a slice of it would keep all of it.
				s = bytes.Clone(s)
			}
			c.Suffix = s
		}
		c.Unverifiable = r.string()
		e.Content = c
	}
	return e
}

// splitHead checks an entry's magic and key and returns the length of its
// metadata and where the metadata starts.
func splitHead(head []byte, key [sha256.Size]byte) (metaLen uint64, metaOff int, err error) {
	n := len(cacheMagic) + sha256.Size
	if len(head) < n || string(head[:len(cacheMagic)]) != cacheMagic || !bytes.Equal(head[len(cacheMagic):n], key[:]) {
		return 0, 0, errCacheEntry
	}
	metaLen, m := binary.Uvarint(head[n:])
	if m <= 0 {
		return 0, 0, errCacheEntry
	}
	return metaLen, n + m, nil
}

// minEntryLen is the least an encoded entry takes: its flags, eight string
// lengths and its type.
const minEntryLen = 10

// decodeMeta takes the metadata apart.
func decodeMeta(r *reader) (State, error) {
	st := State{Files: r.strings(), Warnings: r.strings()}
	n := r.uvarint()
	// An entry takes at least minEntryLen bytes: a damaged count must not
	// make the decoder allocate many times the entry's size.
	if n > uint64(len(r.b))/minEntryLen {
		return State{}, errCacheEntry
	}
	st.Entries = make([]Entry, 0, n)
	for range n {
		st.Entries = append(st.Entries, r.entry())
	}
	if r.err == nil && (len(r.b) != 0 || r.next != r.blobLen) {
		r.err = errCacheEntry
	}
	if r.err != nil {
		return State{}, r.err
	}
	return st, nil
}

// decodeState reads what encodeState wrote, whole in data, and checks that
// it is the entry for key (not a file renamed over another name) and that
// both its checksums match.
func decodeState(data []byte, key [sha256.Size]byte) (State, error) {
	metaLen, off, err := splitHead(data, key)
	if err != nil || metaLen > uint64(len(data)-off) || uint64(len(data)-off)-metaLen < 2*crcLen {
		return State{}, errCacheEntry
	}
	end := off + int(metaLen)
	if err := checkCRC(data[end:], crc32.Checksum(data[:end], castagnoli)); err != nil {
		return State{}, err
	}
	blob := data[end+crcLen : len(data)-crcLen]
	if err := checkCRC(data[len(data)-crcLen:], crc32.Checksum(blob, castagnoli)); err != nil {
		return State{}, err
	}
	return decodeMeta(&reader{b: data[off:end], blob: blob, blobLen: int64(len(blob))})
}

// decodeLazy reads the metadata of the entry in f (of size bytes) and
// checks both checksums, streaming the contents through the second without
// keeping them: the exact contents become Stored, read from f (and checked
// against their SHA-256 then).
func decodeLazy(f *os.File, size int64, key [sha256.Size]byte) (State, error) {
	head := make([]byte, min(size, int64(len(cacheMagic)+sha256.Size+binary.MaxVarintLen64)))
	if _, err := f.ReadAt(head, 0); err != nil {
		return State{}, err
	}
	metaLen, off, err := splitHead(head, key)
	if err != nil || metaLen > uint64(size-int64(off)) || uint64(size-int64(off))-metaLen < 2*crcLen {
		return State{}, errCacheEntry
	}
	meta := make([]byte, metaLen+crcLen)
	if _, err := f.ReadAt(meta, int64(off)); err != nil {
		return State{}, err
	}
	if err := checkCRC(meta[metaLen:], crc32.Update(crc32.Checksum(head[:off], castagnoli), castagnoli, meta[:metaLen])); err != nil {
		return State{}, err
	}
	blobOff := int64(off) + int64(metaLen) + crcLen
	blobLen := size - blobOff - crcLen
	h := crc32.New(castagnoli)
	if _, err := io.CopyBuffer(h, io.NewSectionReader(f, blobOff, blobLen), make([]byte, 1<<20)); err != nil {
		return State{}, err
	}
	var stored [crcLen]byte
	if _, err := f.ReadAt(stored[:], blobOff+blobLen); err != nil {
		return State{}, err
	}
	if err := checkCRC(stored[:], h.Sum32()); err != nil {
		return State{}, err
	}
	return decodeMeta(&reader{b: meta[:metaLen], blobLen: blobLen, blobOff: blobOff, file: f})
}
