package statekey

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// FileStamp is what the kernel says of a file's identity and last change:
// its mount, inode, size, modification, change and birth times. On a local
// filesystem this kernel writes, a write to the file, a truncate, a chmod
// or a rename over it sets its change time (ctime) from this kernel's
// clock, and no system call sets it to a chosen value; so while a file's
// stamp stays the same, so do its contents.
//
// Where that does not hold, no stamp is trusted (stampOf):
//   - filesystems whose times come from elsewhere: an image built with
//     fixed times (EROFS and composefs' overlay, squashfs), a server's clock
//     (NFS, CIFS, FUSE, virtiofs). Only ext2/3/4, XFS, Btrfs, F2FS and tmpfs
//     qualify;
//   - a kernel that cannot name the mount uniquely (STATX_MNT_ID_UNIQUE,
//     Linux 6.8): another image mounted in the same place keeps the device
//     number, and can keep inode numbers and times too;
//   - another boot: the memo binds what it remembers to the boot (see
//     statecache), since a clock restarted from the same point can repeat
//     an earlier change time.
//
// And within those, a change made in the granule of the clock that
// stamped the file (git calls such an entry "racily clean",
// Documentation/technical/racy-git.txt) is answered by Settled: a stamp is
// remembered only once its times are racyMargin older than the moment it
// was taken. What is left, a clock stepped back to the nanosecond of an
// earlier change or a write below the filesystem, is not an accident.
type FileStamp struct {
	Dev, Ino, Mount     uint64
	Size                int64
	Mtime, Ctime, Btime int64 // nanoseconds since the epoch; Btime 0 where the filesystem has none
	Mode                uint32
}

// FileDigest is the digest of one config file's contents as Of hashes
// them (SHA-256 over the SHA-256 of each hashChunk).
type FileDigest [sha256.Size]byte

// DigestScheme names how a FileDigest is computed: a memo must not serve a
// digest computed another way (by another version of this program).
var DigestScheme = fmt.Sprintf("sha256 of the sha256 of each %d-byte chunk\n", hashChunk)

// DigestMemo remembers config files' digests by their stamps, so that a
// load need not read a config it has hashed before just to name the state
// it derives: with thousands of declared files a config is megabytes, and
// hashing it was a large part of a cached check. A Cache that implements it
// is asked before a config is read.
type DigestMemo interface {
	// Digests returns the digests remembered, by stamp. It is asked once
	// per load.
	Digests() map[FileStamp]FileDigest
	// Remember keeps these digests beside those remembered, once per load
	// that hashed a settled file (see Settled).
	Remember(map[FileStamp]FileDigest)
}

// Digests is where Of finds config files' digests without reading them:
// Memo (nil: nowhere), with the time Now tells deciding what is settled
// (nil: nothing is remembered).
type Digests struct {
	Memo DigestMemo
	Now  func() time.Time
}

// racyMargin is how old a file's times must be, when its stamp is taken,
// for the stamp to be remembered: far beyond any timestamp granule of the
// filesystems stampOf trusts.
const racyMargin = 2 * time.Second

// Settled reports whether s, taken at now, can stand for the file's
// contents from now on: its change and modification times are at least
// racyMargin before now (a time ahead of the clock is not).
func (s FileStamp) Settled(now time.Time) bool {
	return now.UnixNano()-max(s.Ctime, s.Mtime) >= int64(racyMargin)
}

// stampFilesystems are the filesystems whose files' times this kernel sets
// (statfs(2) f_type): local, written by this kernel only.
var stampFilesystems = map[int64]bool{
	unix.EXT4_SUPER_MAGIC:  true, // ext2, ext3 and ext4 share it
	unix.XFS_SUPER_MAGIC:   true,
	unix.BTRFS_SUPER_MAGIC: true,
	unix.F2FS_SUPER_MAGIC:  true,
	unix.TMPFS_MAGIC:       true,
}

// stampMask is what a stamp is made of; a statx that does not fill all of it
// gives no trusted stamp.
const stampMask = unix.STATX_TYPE | unix.STATX_MODE | unix.STATX_INO | unix.STATX_SIZE |
	unix.STATX_MTIME | unix.STATX_CTIME | unix.STATX_MNT_ID_UNIQUE

// stampOf returns the stamp of the open file f, and whether it can be
// trusted to stand for its contents (see FileStamp). Where statx is not
// there (an old kernel, a container's seccomp filter), the stamp holds
// only the file's type and size, from fstat, and is not trusted.
func stampOf(f *os.File) (s FileStamp, trusted bool, err error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return FileStamp{}, false, err
	}
	var sx unix.Statx_t
	var fs unix.Statfs_t
	var serr, ferr error
	err = rc.Control(func(fd uintptr) {
		for {
			serr = unix.Statx(int(fd), "", unix.AT_EMPTY_PATH|unix.AT_STATX_SYNC_AS_STAT, stampMask|unix.STATX_BTIME, &sx)
			if serr != unix.EINTR {
				break
			}
		}
		if serr == nil {
			ferr = unix.Fstatfs(int(fd), &fs)
		}
	})
	if err == nil {
		err = serr
	}
	if errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EPERM) {
		fi, err := f.Stat()
		if err != nil {
			return FileStamp{}, false, err
		}
		return FileStamp{Size: fi.Size(), Mode: uint32(fileType(fi.Mode()))}, false, nil
	}
	if err != nil {
		return FileStamp{}, false, &os.PathError{Op: "statx", Path: f.Name(), Err: err}
	}
	ns := func(t unix.StatxTimestamp) int64 { return t.Sec*1e9 + int64(t.Nsec) }
	s = FileStamp{
		Dev:   unix.Mkdev(sx.Dev_major, sx.Dev_minor),
		Ino:   sx.Ino,
		Mount: sx.Mnt_id,
		Size:  int64(sx.Size),
		Mtime: ns(sx.Mtime),
		Ctime: ns(sx.Ctime),
		Mode:  uint32(sx.Mode),
	}
	if sx.Mask&unix.STATX_BTIME != 0 {
		s.Btime = ns(sx.Btime)
	}
	trusted = sx.Mask&stampMask == stampMask && ferr == nil && stampFilesystems[int64(fs.Type)]
	return s, trusted, nil
}

// fileType is the S_IFMT bits of a file mode, as statx gives them.
func fileType(m os.FileMode) uint32 {
	if m.IsRegular() {
		return unix.S_IFREG
	}
	return 0 // not a regular file: hashFile needs no more
}

// heldDigest is the FileDigest of contents in memory.
func heldDigest(b []byte) FileDigest {
	return sha256.Sum256(chunkDigests(int64(len(b)), func(_ []byte, off, end int64) ([]byte, error) {
		return b[off:end], nil
	}))
}

// hashFile returns the size and the digest of the regular file name as open
// opens it now; false when it is not one or cannot be read whole. Only
// regular files are hashed (see discover.Files.Open), the rest not cached.
// A file whose trusted stamp lookup knows is not read. A file hashed is put
// in learned when its stamp is trusted, was settled when taken (at now())
// and is the same after the read.
func hashFile(open func(string) (*os.File, error), name string, lookup func(FileStamp) (FileDigest, bool), now func() time.Time,
	learned map[FileStamp]FileDigest) (size int64, d FileDigest, ok bool) {
	f, err := open(name)
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
