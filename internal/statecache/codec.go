package statecache

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/drift-monitor/drift-monitor/internal/model"
)

// cacheMagic starts every entry: the format's name and version. Format 3
// added the checksums, format 4 the accounts (an entry of format 3 is a
// state derived without its users and groups: it must not be served),
// format 5 the entries in parts (partLen).
const cacheMagic = "drift-monitor state cache 5\n"

// castagnoli is CRC-32C, the entries' checksum. A CRC catches every single
// flipped bit and every burst of up to 32, which is the damage a disk or a
// copy does; a random change escapes it once in 2^32. It costs next to
// nothing beside reading the entry (the CPU computes it: SSE 4.2 on amd64,
// the CRC instructions on arm64), far less than SHA-256 would. A
// cryptographic digest
// would buy nothing more: it is not keyed, and nobody but the caller or
// root can write an entry that is read.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// crcLen is the size of a stored checksum.
const crcLen = 4

// The entry format, after the magic and the key: the length of the metadata,
// the metadata (the config files, the warnings, the number of entries, the
// length of each part of the entries' metadata and of its exact contents
// (partLen), then the entries, each as flags and fields in a fixed order; an
// exact content as its length and SHA-256), the CRC-32C of everything so
// far, then the exact contents one after the other and their CRC-32C. Numbers are varints, strings and byte
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
	flagAccount
	flagNotRelabelled
)

// encodeState writes the magic, the key and st.
func encodeState(w io.Writer, key [sha256.Size]byte, st *model.State) error {
	body := make([]byte, 0, 64<<10)
	var parts []byte // each part's metadata and contents lengths
	for i := 0; i < len(st.Entries); i += partLen {
		start, contents := len(body), 0
		for j := i; j < min(i+partLen, len(st.Entries)); j++ {
			c := st.Entries[j].Content
			if c != nil && c.Stored != nil {
				// A lazy state came from an entry; it is never stored again.
				return errors.New("a state with stored contents cannot be stored")
			}
			if c != nil {
				contents += len(c.Exact)
			}
			body = appendEntry(body, &st.Entries[j])
		}
		parts = binary.AppendUvarint(parts, uint64(len(body)-start))
		parts = binary.AppendUvarint(parts, uint64(contents))
	}
	meta := make([]byte, 0, len(body)+len(parts)+1024)
	meta = appendStrings(meta, st.Files)
	meta = appendStrings(meta, st.Warnings)
	meta = binary.AppendUvarint(meta, uint64(len(st.Entries)))
	meta = append(append(meta, parts...), body...)
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

func appendEntry(b []byte, e *model.Entry) []byte {
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
	set(flagAccount, e.Account != nil)
	set(flagNotRelabelled, e.NotRelabelled)
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
	if e.Account != nil {
		b = appendAccount(b, e.Account)
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
// slice of it) or, when blob is nil, become Stored at their offset in the
// entry (blobOff, the blob's, plus theirs in it).
//
// b is the reader's own copy of the metadata, never written again: the
// strings decoded are slices of it (unsafe.String), one allocation for the
// tens of thousands of paths, units and names of a large state instead of
// one each, which were most of a cached check's decoding. They keep the
// copy alive, as long as the state they belong to (the metadata is a small
// part of an entry: its contents are apart, in the blob).
type reader struct {
	b       []byte
	err     error
	blob    []byte
	blobLen int64
	blobOff int64 // of the blob in the entry file
	next    int64 // offset in the blob of the next exact content

	// Where the entries' modes, ids, enablements and contents are
	// allocated, many at a time (see slab).
	modes    slab[uint32]
	ids      slab[int]
	bools    slab[bool]
	contents slab[model.Content]
}

// slab hands out pointers to values allocated slabLen at a time: a state
// of 10,000 files has 40,000 of them (mode, owner, group, content), each
// its own allocation before. A pointer keeps its slab alive, as long as
// the state it belongs to; every value is its own element.
type slab[T any] struct{ free []T }

const slabLen = 512

func (s *slab[T]) new(v T) *T {
	if len(s.free) == 0 {
		s.free = make([]T, slabLen)
	}
	p := &s.free[0]
	*p = v
	s.free = s.free[1:]
	return p
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

func (r *reader) string() string {
	b := r.bytes()
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

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
func (r *reader) exact(c *model.Content) {
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
		c.Stored = &model.Stored{Size: int64(n), Sum: [sha256.Size]byte(sum), Offset: r.blobOff + r.next}
	}
	r.next += int64(n)
}

func (r *reader) entry() model.Entry {
	flags := r.uvarint()
	e := model.Entry{Kind: model.Kind(r.string()), Path: r.string(), Unit: r.string(), User: r.string(),
		OwnerProblem: r.string(), GroupProblem: r.string(), Target: r.string(), Arg: r.string()}
	e.Type = model.Type(r.varint())
	e.ArgPresent = flags&flagArgPresent != 0
	e.MayBeAbsent = flags&flagMayBeAbsent != 0
	e.NotRelabelled = flags&flagNotRelabelled != 0
	if flags&flagMode != 0 {
		e.Mode = r.modes.new(uint32(r.uvarint()))
	}
	if flags&flagModeOptional != 0 {
		e.ModeOptional = uint32(r.uvarint())
	}
	if flags&flagUID != 0 {
		e.UID = r.ids.new(int(r.varint()))
	}
	if flags&flagGID != 0 {
		e.GID = r.ids.new(int(r.varint()))
	}
	if flags&flagEnabled != 0 {
		e.Enabled = r.bools.new(flags&flagEnabledTrue != 0)
	}
	if flags&flagContent != 0 {
		c := r.contents.new(model.Content{})
		if flags&flagExact != 0 {
			r.exact(c)
		}
		if flags&flagHash != 0 {
			c.Hash = &model.Hash{Algorithm: r.string(), Hex: r.string()}
		}
		if s := r.bytes(); len(s) > 0 {
			c.Suffix = s // capped: an append cannot reach the next field
		}
		c.Unverifiable = r.string()
		e.Content = c
	}
	if flags&flagAccount != 0 {
		e.Account = r.account()
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

// partLen is how many entries make a part: the entries' metadata is stored
// in parts whose lengths, and their contents', come first, so that the
// parts are decoded at once on the cores there are (decodeMeta). The
// decoding of a large state was a cached check's longest stretch on one
// core before its first comparison.
const partLen = 2048

// part is one part of the entries: its metadata, where its exact contents
// start in the blob and how long they are, and its entries' indices.
type part struct {
	meta            []byte
	blobAt, blobLen int64
	first, end      int
}

// decodeMeta takes the metadata apart, its parts on as many goroutines as
// the process may run at once.
func decodeMeta(r *reader) (model.State, error) {
	st := model.State{Files: r.strings(), Warnings: r.strings()}
	n := r.uvarint()
	// An entry takes at least minEntryLen bytes: a damaged count must not
	// make the decoder allocate many times the entry's size.
	if n > uint64(len(r.b))/minEntryLen {
		return model.State{}, errCacheEntry
	}
	parts := make([]part, (int(n)+partLen-1)/partLen)
	lens := make([][2]uint64, len(parts))
	for i := range lens {
		lens[i] = [2]uint64{r.uvarint(), r.uvarint()}
	}
	var blobAt int64
	for i := range parts {
		metaLen, blobLen := lens[i][0], lens[i][1]
		if r.err == nil && blobLen > uint64(r.blobLen-blobAt) {
			r.err = errCacheEntry
		}
		parts[i] = part{meta: r.take(metaLen), blobAt: blobAt, blobLen: int64(blobLen),
			first: i * partLen, end: min((i+1)*partLen, int(n))}
		blobAt += int64(blobLen)
	}
	if r.err == nil && (len(r.b) != 0 || blobAt != r.blobLen) {
		r.err = errCacheEntry
	}
	if r.err != nil {
		return model.State{}, r.err
	}
	st.Entries = make([]model.Entry, n)
	errs := make([]error, len(parts))
	var next atomic.Int64
	work := func() {
		for {
			i := int(next.Add(1)) - 1
			if i >= len(parts) {
				return
			}
			errs[i] = parts[i].decode(r, st.Entries)
		}
	}
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(parts)) - 1 {
		wg.Go(work)
	}
	work()
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return model.State{}, err
		}
	}
	return st, nil
}

// decode decodes p, a part of what r reads, into its entries; each part has
// its own reader, and so its own slabs.
func (p *part) decode(r *reader, entries []model.Entry) error {
	pr := reader{b: p.meta, blobLen: p.blobLen, blobOff: r.blobOff + p.blobAt}
	if r.blob != nil {
		pr.blob = r.blob[p.blobAt : p.blobAt+p.blobLen : p.blobAt+p.blobLen]
	}
	for i := p.first; i < p.end; i++ {
		entries[i] = pr.entry()
	}
	if pr.err == nil && (len(pr.b) != 0 || pr.next != pr.blobLen) {
		pr.err = errCacheEntry
	}
	return pr.err
}

// decodeState reads what encodeState wrote, whole in data, and checks that
// it is the entry for key (not a file renamed over another name) and that
// both its checksums match.
func decodeState(data []byte, key [sha256.Size]byte) (model.State, error) {
	meta, blob, blobOK, err := splitEntry(data, key)
	if err != nil {
		return model.State{}, err
	}
	// The contents' checksum is summed on another core while the metadata
	// (whose checksum matched) is decoded: both are a walk over the entry.
	// The state is returned only when the contents' checksum matches too.
	blobErr := make(chan error, 1)
	go func() { blobErr <- blobOK() }()
	st, err := decodeBody(meta, blob)
	if err := <-blobErr; err != nil {
		return model.State{}, err
	}
	return st, err
}

// decodeMapped is decodeState but for the contents' checksum, which the
// function it returns checks: for a mapped entry (ModeMap).
func decodeMapped(data []byte, key [sha256.Size]byte) (model.State, func() error, error) {
	meta, blob, blobOK, err := splitEntry(data, key)
	if err != nil {
		return model.State{}, nil, err
	}
	st, err := decodeBody(meta, blob)
	return st, blobOK, err
}

// splitEntry checks data's head and its metadata's checksum, and returns
// its metadata, its contents and the check of the contents' checksum.
func splitEntry(data []byte, key [sha256.Size]byte) (meta, blob []byte, blobOK func() error, err error) {
	metaLen, off, err := splitHead(data, key)
	if err != nil || metaLen > uint64(len(data)-off) || uint64(len(data)-off)-metaLen < 2*crcLen {
		return nil, nil, nil, errCacheEntry
	}
	end := off + int(metaLen)
	if err := checkCRC(data[end:], crc32.Checksum(data[:end], castagnoli)); err != nil {
		return nil, nil, nil, err
	}
	blob = data[end+crcLen : len(data)-crcLen]
	return data[off:end], blob, func() error { return checkCRC(data[len(data)-crcLen:], crc32.Checksum(blob, castagnoli)) }, nil
}

// decodeBody decodes the metadata of an entry whose contents are blob. The
// metadata is copied out of data, which may be a mapping (see reader).
func decodeBody(meta, blob []byte) (model.State, error) {
	return decodeMeta(&reader{b: bytes.Clone(meta), blob: blob, blobLen: int64(len(blob))})
}

// decodeLazy reads the metadata of the entry in f (of size bytes) and
// checks both checksums, streaming the contents through the second without
// keeping them: the exact contents become Stored, and the state's Store
// reads them from f (checked against their SHA-256 then).
func decodeLazy(f *os.File, size int64, key [sha256.Size]byte) (model.State, error) {
	head := make([]byte, min(size, int64(len(cacheMagic)+sha256.Size+binary.MaxVarintLen64)))
	if _, err := f.ReadAt(head, 0); err != nil {
		return model.State{}, err
	}
	metaLen, off, err := splitHead(head, key)
	if err != nil || metaLen > uint64(size-int64(off)) || uint64(size-int64(off))-metaLen < 2*crcLen {
		return model.State{}, errCacheEntry
	}
	meta := make([]byte, metaLen+crcLen)
	if _, err := f.ReadAt(meta, int64(off)); err != nil {
		return model.State{}, err
	}
	if err := checkCRC(meta[metaLen:], crc32.Update(crc32.Checksum(head[:off], castagnoli), castagnoli, meta[:metaLen])); err != nil {
		return model.State{}, err
	}
	blobOff := int64(off) + int64(metaLen) + crcLen
	blobLen := size - blobOff - crcLen
	h := crc32.New(castagnoli)
	if _, err := io.CopyBuffer(h, io.NewSectionReader(f, blobOff, blobLen), make([]byte, 1<<20)); err != nil {
		return model.State{}, err
	}
	var stored [crcLen]byte
	if _, err := f.ReadAt(stored[:], blobOff+blobLen); err != nil {
		return model.State{}, err
	}
	if err := checkCRC(stored[:], h.Sum32()); err != nil {
		return model.State{}, err
	}
	st, err := decodeMeta(&reader{b: meta[:metaLen:metaLen], blobLen: blobLen, blobOff: blobOff}) // meta is its own
	if err != nil {
		return model.State{}, err
	}
	st.Store = entryFile{f}
	return st, nil
}
