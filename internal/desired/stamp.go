package desired

import (
	"crypto/sha256"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// FileStamp is what the kernel says of a file's identity and last change:
// its inode, size, modification, change and birth times. A write to the
// file, a truncate, a chmod or a rename over it changes its change time
// (ctime), which no system call sets to a chosen value; so while a file's
// stamp stays the same, so do its contents.
//
// Two things break that, and a stamp is trusted only where neither can:
// a change made within the granule of the clock that stamped the file
// (the coarse clock: a few milliseconds; git calls such an index entry
// "racily clean", Documentation/technical/racy-git.txt), and a clock set
// back to the moment of an earlier change. The first is answered by
// Settled, which trusts a stamp only once its change time is racyMargin
// old. The second needs root, and so does writing a desired-state file or
// the cache that remembers stamps: whoever can do it can change the
// desired state openly.
type FileStamp struct {
	Dev, Ino            uint64
	Size                int64
	Mtime, Ctime, Btime int64 // nanoseconds since the epoch; Btime 0 where the filesystem has none
	Mode                uint32
}

// FileDigest is the digest of one config file's contents as keyOf hashes
// them (SHA-256 over the SHA-256 of each hashChunk).
type FileDigest [sha256.Size]byte

// DigestMemo remembers config files' digests by their stamps, so that a
// load need not read a config it has hashed before just to name the state
// it derives: at 10,000 declared files the config is 17 MiB, and hashing
// it was a third of a cached check. A Cache that implements it is asked
// before a config is read.
type DigestMemo interface {
	// Digest returns the digest remembered for a file whose stamp is s.
	Digest(s FileStamp) (FileDigest, bool)
	// Remember keeps d as the digest of the file whose stamp is s. It is
	// called only with settled stamps (see Settled).
	Remember(s FileStamp, d FileDigest)
}

// digests is where keyOf finds config files' digests without reading them:
// memo (nil: nowhere), with the time now tells deciding what is settled.
type digests struct {
	memo DigestMemo
	now  func() time.Time
}

// racyMargin is how old a file's change time must be for its stamp to be
// remembered: far beyond any filesystem's timestamp granule.
const racyMargin = 2 * time.Second

// Settled reports whether s, taken at now, can stand for the file's
// contents from now on: its change time is at least racyMargin in the past
// (a change time ahead of the clock is not).
func (s FileStamp) Settled(now time.Time) bool {
	return now.UnixNano()-s.Ctime >= int64(racyMargin)
}

// stampOf returns the stamp of the open file f.
func stampOf(f *os.File) (FileStamp, error) {
	var sx unix.Statx_t
	rc, err := f.SyscallConn()
	if err != nil {
		return FileStamp{}, err
	}
	var serr error
	err = rc.Control(func(fd uintptr) {
		serr = unix.Statx(int(fd), "", unix.AT_EMPTY_PATH|unix.AT_STATX_SYNC_AS_STAT,
			unix.STATX_BASIC_STATS|unix.STATX_BTIME, &sx)
	})
	if err == nil {
		err = serr
	}
	if err != nil {
		return FileStamp{}, &os.PathError{Op: "statx", Path: f.Name(), Err: err}
	}
	ns := func(t unix.StatxTimestamp) int64 { return t.Sec*1e9 + int64(t.Nsec) }
	s := FileStamp{
		Dev:   unix.Mkdev(sx.Dev_major, sx.Dev_minor),
		Ino:   sx.Ino,
		Size:  int64(sx.Size),
		Mtime: ns(sx.Mtime),
		Ctime: ns(sx.Ctime),
		Mode:  uint32(sx.Mode),
	}
	if sx.Mask&unix.STATX_BTIME != 0 {
		s.Btime = ns(sx.Btime)
	}
	return s, nil
}
