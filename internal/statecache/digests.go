package statecache

import (
	"encoding/binary"
	"hash/crc32"
	"io"
	"os"

	"golang.org/x/sys/unix"

	"github.com/drift-monitor/drift-monitor/internal/desired"
	"github.com/drift-monitor/drift-monitor/internal/fsx"
)

// The config files' digests by their stamps (desired.DigestMemo) are kept
// in one file beside the entries: digestsMagic, then one record per file
// (its stamp and its digest, fixed size), then the CRC-32C of all of it. A
// file that does not read as one is empty: a digest not found costs one
// hash of the config, nothing else. It holds what the entries' names hold
// (digests of configs that may contain secrets) and is kept as they are
// (0600, in the 0700 directory, read only when the caller or root wrote it).
const (
	digestsName  = "config-digests"
	digestsMagic = "drift-monitor config digests 1\n"
	// maxDigests bounds the records kept, the newest: a host has a few
	// config files, and each edit of one adds a record.
	maxDigests = 256
	recordLen  = 6*8 + 4 + 32
)

type digestRecord struct {
	stamp  desired.FileStamp
	digest desired.FileDigest
}

// Digest returns the digest remembered for a config file whose stamp is s.
// The records are read from the directory at each call: another process
// (a check beside the daemon) may have added one, and there are few.
func (c *Cache) Digest(s desired.FileStamp) (desired.FileDigest, bool) {
	if c == nil {
		return desired.FileDigest{}, false
	}
	dfd, ok := c.openDir(false)
	if !ok {
		return desired.FileDigest{}, false
	}
	defer unix.Close(dfd)
	for _, r := range readDigests(dfd) {
		if r.stamp == s {
			return r.digest, true
		}
	}
	return desired.FileDigest{}, false
}

// Remember keeps d as the digest of the config file whose stamp is s,
// with the newest maxDigests records already kept (a record of the same
// inode is replaced). Errors are ignored: the memo is only a speed-up.
func (c *Cache) Remember(s desired.FileStamp, d desired.FileDigest) {
	if c == nil {
		return
	}
	dfd, ok := c.openDir(true)
	if !ok {
		return
	}
	defer unix.Close(dfd)
	var kept []digestRecord
	for _, r := range readDigests(dfd) {
		if r.stamp.Dev != s.Dev || r.stamp.Ino != s.Ino {
			kept = append(kept, r)
		}
	}
	kept = append(kept, digestRecord{s, d})
	if len(kept) > maxDigests {
		kept = kept[len(kept)-maxDigests:]
	}
	fsx.WriteFile(fsx.Sys{}, dfd, fsx.File{
		Name: digestsName, Pattern: ".tmp-*", Mode: 0o600, How: fsx.Replace, NoSync: true,
	}, func(w io.Writer) error {
		_, err := w.Write(encodeDigests(kept))
		return err
	})
}

func encodeDigests(rs []digestRecord) []byte {
	b := append(make([]byte, 0, len(digestsMagic)+len(rs)*recordLen+crcLen), digestsMagic...)
	for _, r := range rs {
		s := r.stamp
		for _, v := range [...]uint64{s.Dev, s.Ino, uint64(s.Size), uint64(s.Mtime), uint64(s.Ctime), uint64(s.Btime)} {
			b = binary.LittleEndian.AppendUint64(b, v)
		}
		b = binary.LittleEndian.AppendUint32(b, s.Mode)
		b = append(b, r.digest[:]...)
	}
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

// readDigests reads the records kept in the directory dfd: none when there
// is no trustworthy file of them, or it does not read as one.
func readDigests(dfd int) []digestRecord {
	fd, err := unix.Openat(dfd, digestsName, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil
	}
	f := os.NewFile(uintptr(fd), digestsName)
	defer f.Close()
	var st unix.Stat_t
	const most = len(digestsMagic) + maxDigests*recordLen + crcLen
	if unix.Fstat(fd, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG || !trusted(&st) || st.Size > int64(most) {
		return nil
	}
	b, err := io.ReadAll(io.LimitReader(f, int64(most)+1))
	if err != nil {
		return nil
	}
	return decodeDigests(b)
}

func decodeDigests(b []byte) []digestRecord {
	body := len(b) - len(digestsMagic) - crcLen
	if body < 0 || body%recordLen != 0 || string(b[:len(digestsMagic)]) != digestsMagic ||
		checkCRC(b[len(b)-crcLen:], crc32.Checksum(b[:len(b)-crcLen], castagnoli)) != nil {
		return nil
	}
	rs := make([]digestRecord, body/recordLen)
	p := b[len(digestsMagic):]
	u := func() uint64 {
		v := binary.LittleEndian.Uint64(p)
		p = p[8:]
		return v
	}
	for i := range rs {
		s := &rs[i].stamp
		s.Dev, s.Ino, s.Size, s.Mtime, s.Ctime, s.Btime = u(), u(), int64(u()), int64(u()), int64(u()), int64(u())
		s.Mode = binary.LittleEndian.Uint32(p)
		p = p[4:]
		p = p[copy(rs[i].digest[:], p):]
	}
	return rs
}
