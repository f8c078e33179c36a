package ondisk

import (
	"bytes"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"path"
	"sync"
	"time"

	"github.com/drift-monitor/drift-monitor/internal/desired"
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
)

// DiffLimit bounds the bytes of a differing file kept for a diff.
const DiffLimit = 256 << 10

// ContentResult is what a content comparison found. Got, GotSize and
// GotDigest are filled only when the content differs.
type ContentResult struct {
	State ContentState
	Err   error
	// Got holds the file's bytes when it is at most DiffLimit long.
	Got       []byte
	GotSize   int64
	GotDigest string // sha256 hex of the whole file
	// Algorithm of GotDigest when a verification hash was compared instead.
	HashGot string
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
	Target string // symlink target, as written

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
}

var bufPool = sync.Pool{New: func() any { b := make([]byte, 128<<10); return &b }}

// Observer examines entries inside one root. It is not safe for concurrent
// use: give each goroutine its own (they share the Root).
type Observer struct {
	dirs dirCache
}

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
func (o *Observer) Observe(e *desired.Entry) Observation {
	var ob Observation
	if e.Type == desired.TypeNone {
		return ob
	}
	dir, base := path.Split(e.Path)
	dfd, detour, err := o.dirs.get(path.Clean(dir))
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
	var st unix.Stat_t
	if err := fstatat(dfd, base, &st); err != nil {
		if !errors.Is(err, unix.ENOENT) {
			ob.Err = err
		}
		return ob
	}
	fill(&ob, &st)
	switch ob.Type {
	case Symlink:
		ob.Target, ob.Err = readlinkat(dfd, base)
	case Regular:
		if e.Type == desired.TypeRegular && e.Content != nil && e.Content.Unverifiable == "" {
			ob.Content = compare(dfd, base, ob.Size, e.Content)
			if ob.Content.State == Differs && ob.Mode&0o004 != 0 {
				// A failure to climb leaves it private: not shown.
				ob.Public, _ = o.dirs.root.reachable(dfd)
			}
		}
	}
	if e.Type == desired.TypeHardLink && e.Target != "" {
		o.observeTarget(e.Target, &ob)
	}
	return ob
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

// compare streams a regular file against the wanted content and stops at the
// first difference; size decides before any byte is read where it can.
func compare(dfd int, name string, size int64, want *desired.Content) ContentResult {
	exactSize, exact := want.ExactSize()
	switch {
	case exact:
		if size != exactSize {
			return differs(dfd, name)
		}
		if size == 0 {
			return ContentResult{State: Equal}
		}
	case want.Hash == nil && size < int64(len(want.Suffix)):
		return differs(dfd, name)
	}
	fd, err := openFile(dfd, name)
	if err != nil {
		return ContentResult{State: ReadFailed, Err: err}
	}
	defer unix.Close(fd)
	bp := bufPool.Get().(*[]byte)
	defer bufPool.Put(bp)
	buf := *bp

	var same bool
	switch {
	case want.Exact != nil:
		same, err = equalStream(fileReader(fd), want.Exact, buf)
	case want.Stored != nil:
		same, err = equalDigest(fd, want.Stored, buf)
	case want.Hash != nil:
		same, err = hashThenSuffix(fd, size, want, buf)
	default:
		same, err = suffixAt(fd, size, want.Suffix)
	}
	if err != nil {
		return ContentResult{State: ReadFailed, Err: err}
	}
	if same {
		return ContentResult{State: Equal}
	}
	return differs(dfd, name)
}

// equalStream reads r to the end of want and reports whether it matched. It
// does not read past len(want): the size was already found equal by stat.
func equalStream(r io.Reader, want []byte, buf []byte) (bool, error) {
	for len(want) > 0 {
		n := len(buf)
		if n > len(want) {
			n = len(want)
		}
		got, err := io.ReadFull(r, buf[:n])
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
func equalDigest(fd int, want *desired.Stored, buf []byte) (bool, error) {
	h := sha256.New()
	n, err := io.CopyBuffer(h, io.LimitReader(fileReader(fd), want.Size), buf)
	if err != nil {
		return false, err
	}
	var sum [sha256.Size]byte
	return n == want.Size && [sha256.Size]byte(h.Sum(sum[:0])) == want.Sum, nil
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

// hashThenSuffix checks a file made of a hashed base followed by known bytes.
func hashThenSuffix(fd int, size int64, want *desired.Content, buf []byte) (bool, error) {
	baseLen := size - int64(len(want.Suffix))
	if baseLen < 0 {
		return false, nil
	}
	h, err := newHash(want.Hash.Algorithm)
	if err != nil {
		return false, err
	}
	if _, err := io.CopyBuffer(h, io.LimitReader(fileReader(fd), baseLen), buf); err != nil {
		return false, err
	}
	if hex.EncodeToString(h.Sum(nil)) != want.Hash.Hex {
		return false, nil
	}
	return suffixAt(fd, size, want.Suffix)
}

func suffixAt(fd int, size int64, suffix []byte) (bool, error) {
	if len(suffix) == 0 {
		return true, nil
	}
	got := make([]byte, len(suffix))
	n, err := unix.Pread(fd, got, size-int64(len(suffix)))
	if err != nil {
		return false, err
	}
	return n == len(suffix) && bytes.Equal(got, suffix), nil
}

// differs reads the file once more, whole, to describe the difference: its
// size, digest and, when small, its bytes. Only drift takes this path.
func differs(dfd int, name string) ContentResult {
	r := ContentResult{State: Differs}
	fd, err := openFile(dfd, name)
	if err != nil {
		r.State, r.Err = ReadFailed, err
		return r
	}
	defer unix.Close(fd)
	h := sha256.New()
	var head bytes.Buffer
	bp := bufPool.Get().(*[]byte)
	defer bufPool.Put(bp)
	rd := fileReader(fd)
	for {
		n, err := rd.Read(*bp)
		if n > 0 {
			h.Write((*bp)[:n])
			if head.Len() <= DiffLimit {
				head.Write((*bp)[:n])
			}
			r.GotSize += int64(n)
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			r.State, r.Err = ReadFailed, err
			return r
		}
	}
	if r.GotSize <= DiffLimit {
		r.Got = head.Bytes()
		if r.Got == nil {
			r.Got = []byte{} // an empty file is still text to diff against
		}
	}
	r.GotDigest = hex.EncodeToString(h.Sum(nil))
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
