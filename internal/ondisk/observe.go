package ondisk

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"path"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/drift-monitor/drift-monitor/internal/model"
	"golang.org/x/sys/unix"
)

// FileType is the type of what stands at a path.
type FileType int

const (
	Absent FileType = iota
	Regular
	Directory
	Symlink
	Other // device, FIFO, socket
)

func (t FileType) String() string {
	switch t {
	case Regular:
		return "regular file"
	case Directory:
		return "directory"
	case Symlink:
		return "symbolic link"
	case Other:
		return "special file"
	}
	return "nothing"
}

// ContentState says how a regular file's content compared.
type ContentState int

const (
	// NotCompared: no content declared, not a regular file, or unverifiable.
	NotCompared ContentState = iota
	Equal
	Differs
	// ReadFailed: the file could not be read (Content.Err says why).
	ReadFailed
	// Deferred: the comparison would have read more than the observer's
	// ReadLimit, so nothing was read; an observer without a limit finishes
	// it (Observation.Stamp names the version of the file it is about).
	Deferred
)

// DiffLimit bounds the bytes of a differing file kept for a diff, and what is
// read to describe one: a larger file is described by its size alone.
const DiffLimit = 256 << 10

// ContentResult is what a content comparison found. Got, GotSize and
// GotDigest are filled only when the content differs.
type ContentResult struct {
	State ContentState
	Err   error
	// Got holds the file's bytes when it is at most DiffLimit long.
	Got     []byte
	GotSize int64
	// GotDigest is the sha256 hex of the whole file when it is at most
	// DiffLimit long (Got is set); "" for a larger file, whose digest would
	// cost a read of all of it for a line in a report.
	GotDigest string
}

// Stamp names a version of a file: writing to it changes its modification
// time (and size, often), any change to its inode its change time, and
// replacing it the inode. Two observations with equal stamps saw the same
// content, as far as the kernel's timestamps can tell.
type Stamp struct {
	Dev, Ino     uint64
	Size         int64
	Mtime, Ctime int64 // nanoseconds since the epoch
}

// Observation is what stands at an entry's path.
type Observation struct {
	// Err is set when the path could not be examined (other than not
	// existing): permission denied, I/O error, a parent that is not a directory.
	Err error
	// Detour is set when a parent directory is a symlink the observer did
	// not follow (see locate.go): the path is elsewhere than declared, and
	// nothing else was examined.
	Detour *Detour
	Type   FileType
	Mode   uint32 // 07777
	UID    int
	GID    int
	Size   int64
	Dev    uint64
	Ino    uint64
	Stamp  Stamp
	Target string // symlink target, as written
	// Resolved is the host path the node was looked for at: the declared
	// path with the links among its parents followed as Ignition's
	// JoinPath followed them (v2.27.0 internal/exec/util/util.go), which is
	// the path its setfiles labelled. The declared path itself when no link
	// was on the way; "" when the parent could not be located.
	Resolved string

	Content ContentResult
	// Public: any user may read the file — it grants others read, and every
	// directory from the root to it grants them search. Found out only for
	// a regular file whose content differs, where it decides whether the
	// content may be shown.
	Public bool

	// For hard links: the inode of the declared target (TargetErr when it
	// cannot be examined; TargetType Absent when it does not exist).
	TargetType FileType
	TargetDev  uint64
	TargetIno  uint64
	TargetErr  error

	// Meta: xattrs, ACLs and inode flags (see Meta), for the entries whose
	// node Ignition writes or keeps (files, directories, links).
	Meta Meta
}

var bufPool = sync.Pool{New: func() any { b := make([]byte, 128<<10); return &b }}

// Observer examines entries inside one root. It is not safe for concurrent
// use: give each goroutine its own (they share the Root).
type Observer struct {
	dirs dirCache
	// ReadLimit, when positive, bounds the bytes one observation reads to
	// compare a file's content: a comparison that needs more is left
	// Deferred, unread, for an observer without a limit to finish elsewhere
	// (a daemon's event loop must answer its watchdog; a 74 GiB file takes
	// minutes to hash). Zero reads whatever the comparison needs.
	ReadLimit int64
	read      int64
	names     *Names // the root's account names, once read (idNames)
	xattr     xattrScratch
	nbuf      []byte // the node's name, NUL-terminated, for statx and the xattr calls
	// NoLabel leaves the SELinux label's value unread (it is still listed):
	// for checks without a policy to compare it with, on hosts where every
	// node has one.
	NoLabel bool
	// NoMeta observes as before metadata was (fstatat, no xattrs): the
	// baseline its benchmark compares with. Nothing else sets it.
	NoMeta bool
}

// BytesRead is how many bytes of file content the observer has read since
// it was made: what a comparison cost, for tests and benchmarks.
func (o *Observer) BytesRead() int64 { return o.read }

// NewObserver returns an observer for root.
func NewObserver(r *Root) *Observer {
	return &Observer{dirs: dirCache{root: r, fd: -1}}
}

// Close releases cached descriptors.
func (o *Observer) Close() { o.dirs.close() }

// Forget drops cached directory descriptors; call it before observing paths
// whose parent directories may have been replaced since the last observation.
func (o *Observer) Forget() { o.dirs.close() }

// Declare sets the links and directories of the desired state the observed
// entries belong to, which decide the symlinks followed on the way to them.
func (o *Observer) Declare(d *Declared) {
	if d != o.dirs.decl {
		o.dirs.close()
		o.dirs.decl = d
	}
}

// Observe examines the entry's path (and, for hard links, its target).
func (o *Observer) Observe(e *model.Entry) Observation {
	return o.ObserveContext(context.Background(), e)
}

// ObserveContext is Observe, whose reads stop when ctx is done (the content
// is then ReadFailed with ctx's error).
func (o *Observer) ObserveContext(ctx context.Context, e *model.Entry) Observation {
	var ob Observation
	if e.Type == model.TypeNone {
		return ob
	}
	dir, base := path.Split(e.Path)
	dir = path.Clean(dir)
	dfd, detour, err := o.dirs.get(dir)
	if err != nil {
		// A missing or non-directory parent: the path does not exist.
		if !errors.Is(err, unix.ENOENT) && !errors.Is(err, unix.ENOTDIR) {
			ob.Err = err
		}
		return ob
	}
	if detour != nil {
		ob.Detour = detour
		return ob
	}
	ob.Resolved = e.Path
	if r := o.dirs.resolved; r != dir {
		ob.Resolved = path.Join(r, base)
	}
	var st unix.Stat_t
	if err := o.stat(dfd, base, &st, &ob.Meta); err != nil {
		if !errors.Is(err, unix.ENOENT) {
			ob.Err = err
		}
		return ob
	}
	fill(&ob, &st)
	meta := hasMeta(e) && !o.NoMeta
	switch ob.Type {
	case Symlink:
		ob.Target, ob.Err = readlinkat(dfd, base)
	case Regular:
		if e.Type == model.TypeRegular && e.Content != nil && e.Content.Unverifiable == "" {
			// A file whose content is read has its xattrs read through the
			// descriptor that reads it: flistxattr and fgetxattr cost less
			// than listxattrat and getxattrat by name (no name to copy in
			// and look up), and they are the inode's whose content is
			// compared.
			var onOpen func(fd int)
			if meta {
				onOpen = func(fd int) { o.xattrsOf(fd, dfd, &ob.Meta); meta = false }
			}
			ob.Content = o.compare(ctx, dfd, base, ob.Size, e.Content, onOpen)
			if ob.Content.State == Differs && ob.Mode&0o004 != 0 {
				// A failure to climb leaves it private: not shown.
				ob.Public, _ = o.dirs.root.reachable(dfd)
			}
		}
	}
	if meta {
		o.xattrs(dfd, base, &ob.Meta)
	}
	if e.Type == model.TypeHardLink && e.Target != "" {
		o.observeTarget(e.Target, &ob)
	}
	return ob
}

// stat examines the node name in dfd, by statx (which gives the inode
// flags too) unless NoMeta. It leaves name NUL-terminated in o.nbuf, for
// the xattr calls that follow.
func (o *Observer) stat(dfd int, name string, st *unix.Stat_t, m *Meta) error {
	if strings.IndexByte(name, 0) >= 0 {
		return unix.EINVAL
	}
	o.nbuf = append(append(o.nbuf[:0], name...), 0)
	if o.NoMeta {
		return fstatat(dfd, name, st)
	}
	return statxAt(dfd, name, &o.nbuf[0], st, m)
}

// hasMeta: the entry declares a node whose metadata is compared.
func hasMeta(e *model.Entry) bool {
	switch e.Type {
	case model.TypeRegular, model.TypeDirectory, model.TypeSymlink, model.TypeHardLink:
		return true
	}
	return false
}

func (o *Observer) observeTarget(target string, ob *Observation) {
	dir, base := path.Split(target)
	// Resolved through any link in the root, as Ignition resolves it: the
	// target is only stat'ed for its inode, never read.
	dfd, err := o.dirs.root.openDir(path.Clean(dir))
	if err != nil {
		if !errors.Is(err, unix.ENOENT) && !errors.Is(err, unix.ENOTDIR) {
			ob.TargetErr = err
		}
		return
	}
	defer unix.Close(dfd)
	var st unix.Stat_t
	if err := fstatat(dfd, base, &st); err != nil {
		if !errors.Is(err, unix.ENOENT) {
			ob.TargetErr = err
		}
		return
	}
	var t Observation
	fill(&t, &st)
	ob.TargetType, ob.TargetDev, ob.TargetIno = t.Type, t.Dev, t.Ino
}

func fill(ob *Observation, st *unix.Stat_t) {
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
		ob.Type = Regular
	case unix.S_IFDIR:
		ob.Type = Directory
	case unix.S_IFLNK:
		ob.Type = Symlink
	default:
		ob.Type = Other
	}
	ob.Mode = st.Mode & 0o7777
	ob.UID, ob.GID = int(st.Uid), int(st.Gid)
	ob.Size = st.Size
	ob.Dev, ob.Ino = st.Dev, st.Ino
	ob.Stamp = Stamp{Dev: st.Dev, Ino: st.Ino, Size: st.Size, Mtime: st.Mtim.Nano(), Ctime: st.Ctim.Nano()}
}

func fstatat(dfd int, name string, st *unix.Stat_t) error {
	for {
		err := unix.Fstatat(dfd, name, st, unix.AT_SYMLINK_NOFOLLOW)
		if !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}

func readlinkat(dfd int, name string) (string, error) {
	buf := make([]byte, 256)
	for {
		n, err := unix.Readlinkat(dfd, name, buf)
		if err != nil {
			return "", err
		}
		if n < len(buf) {
			return string(buf[:n]), nil
		}
		buf = make([]byte, len(buf)*4)
	}
}

// fileReader reads an open file descriptor.
type fileReader int

func (f fileReader) Read(p []byte) (int, error) {
	for {
		n, err := unix.Read(int(f), p)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return 0, err
		}
		if n == 0 && len(p) > 0 {
			return 0, io.EOF
		}
		return n, nil
	}
}

// counted reads a file for an observer: it counts what it reads and stops
// when ctx is done.
type counted struct {
	ctx context.Context
	fd  int
	o   *Observer
}

func (r counted) Read(p []byte) (int, error) {
	if err := r.ctx.Err(); err != nil {
		return 0, err
	}
	n, err := fileReader(r.fd).Read(p)
	r.o.read += int64(n)
	return n, err
}

// readFull is io.ReadFull(r, p), without r escaping.
func (r counted) readFull(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		m, err := r.Read(p[n:])
		n += m
		if err == io.EOF && n > 0 {
			return n, io.ErrUnexpectedEOF
		}
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

func (r counted) pread(p []byte, off int64) (int, error) {
	for {
		n, err := unix.Pread(r.fd, p, off)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if n > 0 {
			r.o.read += int64(n)
		}
		return n, err
	}
}

func openFile(dfd int, name string) (int, error) {
	for {
		// O_NONBLOCK: should a FIFO replace the file between stat and open,
		// opening it must not block. O_NOFOLLOW: nor may a symlink redirect us.
		fd, err := unix.Openat(dfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC|unix.O_NOCTTY, 0)
		if !errors.Is(err, unix.EINTR) {
			return fd, err
		}
	}
}

// openNamed is openFile of name in dfd, by the NUL-terminated copy of it
// that stat left in o.nbuf (unix.Openat would make another).
func (o *Observer) openNamed(dfd int, name string) (int, error) {
	if len(o.nbuf) != len(name)+1 || string(o.nbuf[:len(name)]) != name {
		return openFile(dfd, name)
	}
	for {
		fd, _, e := unix.Syscall6(unix.SYS_OPENAT, uintptr(dfd), uintptr(unsafe.Pointer(&o.nbuf[0])),
			unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC|unix.O_NOCTTY, 0, 0, 0)
		switch e {
		case 0:
			return int(fd), nil
		case unix.EINTR:
			continue
		}
		return -1, e
	}
}

// compare streams a regular file against the wanted content and stops at the
// first difference. What stat says decides first, before anything is read:
// a file of exact content with another size differs, whatever it holds.
//
// Every read is bounded by the size stat gave (or, for a description, by
// DiffLimit), never by the end of the file: a file that grows while it is
// read — a writer that never stops — cannot keep the observer reading. Its
// writes raise their own events; the caller checks it again then.
//
// onOpen, when not nil, is given the descriptor the comparison opens (if it
// opens one) before anything is read.
func (o *Observer) compare(ctx context.Context, dfd int, name string, size int64, want *model.Content, onOpen func(fd int)) ContentResult {
	exactSize, exact := want.ExactSize()
	switch {
	case exact && size != exactSize:
		return o.differs(ctx, dfd, name, size)
	case exact && size == 0:
		return ContentResult{State: Equal}
	case !exact && size < int64(len(want.Suffix)):
		return o.differs(ctx, dfd, name, size)
	}
	// A recorded base (the first-boot record) fixes the size too.
	base := want.Base
	if base != nil && base.Unknown != "" {
		base = nil
	}
	if base != nil && size != base.Size+int64(len(want.Suffix)) {
		return o.differs(ctx, dfd, name, size)
	}
	// What the comparison reads: exact content, the file; a verification
	// hash, the whole file (its base is hashed, its appended bytes
	// compared); appended bytes alone, just them.
	need := int64(len(want.Suffix))
	if exact || want.Hash != nil || base != nil {
		need = size
	}
	if o.ReadLimit > 0 && need > o.ReadLimit && len(want.Suffix) == 0 {
		return ContentResult{State: Deferred}
	}
	fd, err := o.openNamed(dfd, name)
	if err != nil {
		return ContentResult{State: ReadFailed, Err: err}
	}
	defer unix.Close(fd)
	if onOpen != nil {
		onOpen(fd)
	}
	r := counted{ctx: ctx, fd: fd, o: o}
	if !exact {
		// The appended bytes are where stat's size puts them: if they are
		// not there, the base need not be hashed to know the file differs.
		same, err := r.suffixAt(size, want.Suffix)
		switch {
		case err != nil:
			return ContentResult{State: ReadFailed, Err: err}
		case !same:
			return o.differs(ctx, dfd, name, size)
		case want.Hash == nil && base == nil:
			return ContentResult{State: Equal}
		case o.ReadLimit > 0 && need > o.ReadLimit:
			return ContentResult{State: Deferred}
		}
	}
	bp := bufPool.Get().(*[]byte)
	defer bufPool.Put(bp)
	buf := *bp

	var same bool
	switch {
	case want.Exact != nil:
		same, err = equalStream(r, want.Exact, buf)
	case want.Stored != nil:
		same, err = equalDigest(r, want.Stored, buf)
	case base != nil:
		same, err = keyedBase(r, base, buf)
	default:
		same, err = hashBase(r, size-int64(len(want.Suffix)), want.Hash, buf)
	}
	if err != nil {
		return ContentResult{State: ReadFailed, Err: err}
	}
	if same {
		return ContentResult{State: Equal}
	}
	return o.differs(ctx, dfd, name, size)
}

// equalStream reads r to the end of want and reports whether it matched. It
// does not read past len(want): the size was already found equal by stat.
//
// r is the counted reader itself, not an io.Reader: boxing it would cost an
// allocation per file, and a full check compares thousands.
func equalStream(r counted, want []byte, buf []byte) (bool, error) {
	for len(want) > 0 {
		n := len(buf)
		if n > len(want) {
			n = len(want)
		}
		got, err := r.readFull(buf[:n])
		if !bytes.Equal(buf[:got], want[:got]) {
			return false, nil
		}
		if err == io.ErrUnexpectedEOF || err == io.EOF {
			return false, nil // shrank since the stat
		}
		if err != nil {
			return false, err
		}
		want = want[got:]
	}
	return true, nil
}

// equalDigest reads the file (whose size was found equal by stat) and
// compares its SHA-256 with the stored content's.
func equalDigest(r io.Reader, want *model.Stored, buf []byte) (bool, error) {
	sum, ok, err := sha256Of(r, want.Size, buf)
	return ok && sum == want.Sum, err
}

// sha256Of is the SHA-256 of the first n bytes of r; ok is false when r
// has fewer (it shrank since the stat).
func sha256Of(r io.Reader, n int64, buf []byte) (sum [sha256.Size]byte, ok bool, err error) {
	h := sha256.New()
	got, err := io.CopyBuffer(h, io.LimitReader(r, n), buf)
	if err != nil {
		return sum, false, err
	}
	h.Sum(sum[:0])
	return sum, got == n, nil
}

func newHash(algo string) (hash.Hash, error) {
	switch algo {
	case "sha256":
		return sha256.New(), nil
	case "sha512":
		return sha512.New(), nil
	}
	return nil, fmt.Errorf("unsupported verification hash %q", algo)
}

// hashBase reports whether the first n bytes of r have the verification
// hash want (a remote source; the appended bytes after it were compared).
func hashBase(r io.Reader, n int64, want *model.Hash, buf []byte) (bool, error) {
	h, err := newHash(want.Algorithm)
	if err != nil {
		return false, err
	}
	got, err := io.CopyBuffer(h, io.LimitReader(r, n), buf)
	if err != nil {
		return false, err
	}
	return got == n && hex.EncodeToString(h.Sum(nil)) == want.Hex, nil
}

// keyedBase reports whether the first bytes of r are the recorded base
// (the appended bytes after it were compared, and the size was found
// right by stat).
func keyedBase(r io.Reader, want *model.Base, buf []byte) (bool, error) {
	sum, ok, err := sha256Of(r, want.Size, buf)
	return ok && want.Matches(sum), err
}

func (r counted) suffixAt(size int64, suffix []byte) (bool, error) {
	if len(suffix) == 0 {
		return true, nil
	}
	got := make([]byte, len(suffix))
	n, err := r.pread(got, size-int64(len(suffix)))
	if err != nil {
		return false, err
	}
	return n == len(suffix) && bytes.Equal(got, suffix), nil
}

// differs describes a file whose content differs: its size and, when it is
// at most DiffLimit long, its bytes and digest, read once more. A larger file
// is not read at all: its size (from stat) says what a report can use, and a
// 74 GiB sparse file costs what a small one does. Only drift takes this path.
func (o *Observer) differs(ctx context.Context, dfd int, name string, size int64) ContentResult {
	r := ContentResult{State: Differs, GotSize: size}
	if size > DiffLimit {
		return r
	}
	fd, err := openFile(dfd, name)
	if err != nil {
		r.State, r.Err = ReadFailed, err
		return r
	}
	defer unix.Close(fd)
	var head bytes.Buffer
	head.Grow(int(size) + 1)
	// One byte past the limit tells a file that grew beyond it since the
	// stat: it is then described by its size, as a large one is.
	n, err := head.ReadFrom(io.LimitReader(counted{ctx: ctx, fd: fd, o: o}, DiffLimit+1))
	if err != nil {
		r.State, r.Err = ReadFailed, err
		return r
	}
	if n > DiffLimit {
		var st unix.Stat_t
		if unix.Fstat(fd, &st) == nil && st.Size > n {
			n = st.Size
		}
		r.GotSize = n
		return r
	}
	r.GotSize = n
	r.Got = head.Bytes()
	if r.Got == nil {
		r.Got = []byte{} // an empty file is still text to diff against
	}
	sum := sha256.Sum256(r.Got)
	r.GotDigest = hex.EncodeToString(sum[:])
	return r
}

// TypeOf returns the type of what stands at a host path (Absent when
// nothing does), resolving parents inside the root like Observe.
func (o *Observer) TypeOf(hostPath string) FileType {
	t, _ := o.Stat(hostPath)
	return t
}

// Stat returns the type and modification time of what stands at a host
// path (Absent and the zero time when nothing does).
func (o *Observer) Stat(hostPath string) (FileType, time.Time) {
	var ob Observation
	dir, base := path.Split(hostPath)
	dfd, detour, err := o.dirs.get(path.Clean(dir))
	if err != nil || detour != nil {
		return Absent, time.Time{}
	}
	var st unix.Stat_t
	if fstatat(dfd, base, &st) != nil {
		return Absent, time.Time{}
	}
	fill(&ob, &st)
	return ob.Type, time.Unix(st.Mtim.Unix())
}
