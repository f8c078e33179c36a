package statecache

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"io"
	"os"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/drift-monitor/drift-monitor/internal/desired/statekey"
	"github.com/drift-monitor/drift-monitor/internal/fsx"
)

// The config files' digests by their stamps (statekey.DigestMemo) are kept
// in one file beside the entries: digestsMagic, the boot they were taken
// in and how they were computed (statekey.DigestScheme), each on a line of
// its own, then one record per file (its stamp and its digest, fixed
// size), then the CRC-32C of all of it. A file that does not read as one,
// or that another boot or another way of hashing wrote, is empty: a digest
// not found costs one hash of the config, nothing else. It holds what the
// entries' names hold (digests of configs that may contain secrets) and is
// kept as they are (0600, in the 0700 directory, read only when the caller
// or root wrote it).
const (
	digestsName  = "config-digests"
	digestsMagic = "drift-monitor config digests 2\n"
	// maxDigests bounds the records kept, the newest: a host has a few
	// config files, and each edit of one adds a record.
	maxDigests = 1024
	recordLen  = 7*8 + 4 + 32
)

type digestRecord struct {
	stamp  statekey.FileStamp
	digest statekey.FileDigest
}

var (
	bootOnce sync.Once
	bootID   []byte
)

// thisBoot identifies the running boot (the kernel's random boot id); nil
// when it cannot be read, and then nothing is remembered.
func thisBoot() []byte {
	bootOnce.Do(func() {
		b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
		if b = bytes.TrimSpace(b); err == nil && len(b) > 0 && !bytes.ContainsAny(b, "\n") {
			bootID = b
		}
	})
	return bootID
}

// digestsHead is what starts a file of digests this boot and this program
// can use.
func digestsHead() []byte {
	if thisBoot() == nil {
		return nil
	}
	return []byte(digestsMagic + "boot " + string(thisBoot()) + "\n" + "scheme " + statekey.DigestScheme)
}

// Digests returns the digests remembered this boot, by stamp; nil when
// there are none.
func (c *Cache) Digests() map[statekey.FileStamp]statekey.FileDigest {
	if c == nil {
		return nil
	}
	dfd, ok := c.openDir(false)
	if !ok {
		return nil
	}
	defer unix.Close(dfd)
	rs := readDigests(dfd)
	if len(rs) == 0 {
		return nil
	}
	m := make(map[statekey.FileStamp]statekey.FileDigest, len(rs))
	for _, r := range rs {
		m[r.stamp] = r.digest
	}
	return m
}

// Remember keeps the digests learned beside the newest of those already
// kept (a record of the same file, by mount and inode, is replaced), up to
// maxDigests. Errors are ignored: the memo is only a speed-up.
func (c *Cache) Remember(learned map[statekey.FileStamp]statekey.FileDigest) {
	if c == nil || len(learned) == 0 || digestsHead() == nil {
		return
	}
	dfd, ok := c.openDir(true)
	if !ok {
		return
	}
	defer unix.Close(dfd)
	type file struct{ mount, dev, ino uint64 }
	replaced := map[file]bool{}
	for s := range learned {
		replaced[file{s.Mount, s.Dev, s.Ino}] = true
	}
	var kept []digestRecord
	for _, r := range readDigests(dfd) {
		if !replaced[file{r.stamp.Mount, r.stamp.Dev, r.stamp.Ino}] {
			kept = append(kept, r)
		}
	}
	for s, d := range learned {
		kept = append(kept, digestRecord{s, d})
	}
	if len(kept) > maxDigests {
		kept = kept[len(kept)-maxDigests:]
	}
	fsx.WriteFile(fsx.Sys{}, dfd, fsx.File{
		Name: digestsName, Pattern: tmpPrefix + "*", Mode: 0o600, How: fsx.Replace, NoSync: true,
	}, func(w io.Writer) error {
		_, err := w.Write(encodeDigests(digestsHead(), kept))
		return err
	})
}

func encodeDigests(head []byte, rs []digestRecord) []byte {
	b := append(make([]byte, 0, len(head)+len(rs)*recordLen+crcLen), head...)
	for _, r := range rs {
		s := r.stamp
		for _, v := range [...]uint64{s.Dev, s.Ino, s.Mount, uint64(s.Size), uint64(s.Mtime), uint64(s.Ctime), uint64(s.Btime)} {
			b = binary.LittleEndian.AppendUint64(b, v)
		}
		b = binary.LittleEndian.AppendUint32(b, s.Mode)
		b = append(b, r.digest[:]...)
	}
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

// readDigests reads the records kept in the directory dfd this boot: none
// when there is no trustworthy file of them, or it does not read as one.
func readDigests(dfd int) []digestRecord {
	head := digestsHead()
	if head == nil {
		return nil
	}
	f, st, ok := openTrusted(dfd, digestsName, digestsName)
	if !ok {
		return nil
	}
	defer f.Close()
	most := len(head) + maxDigests*recordLen + crcLen
	if st.Size > int64(most) {
		return nil
	}
	b, err := io.ReadAll(io.LimitReader(f, int64(most)+1))
	if err != nil {
		return nil
	}
	return decodeDigests(head, b)
}

// decodeDigests reads the records of b, a file that must start with head.
func decodeDigests(head, b []byte) []digestRecord {
	body := len(b) - len(head) - crcLen
	if body < 0 || body%recordLen != 0 || !bytes.HasPrefix(b, head) ||
		checkCRC(b[len(b)-crcLen:], crc32.Checksum(b[:len(b)-crcLen], castagnoli)) != nil {
		return nil
	}
	rs := make([]digestRecord, body/recordLen)
	p := b[len(head):]
	u := func() uint64 {
		v := binary.LittleEndian.Uint64(p)
		p = p[8:]
		return v
	}
	for i := range rs {
		s := &rs[i].stamp
		s.Dev, s.Ino, s.Mount, s.Size, s.Mtime, s.Ctime, s.Btime = u(), u(), u(), int64(u()), int64(u()), int64(u()), int64(u())
		s.Mode = binary.LittleEndian.Uint32(p)
		p = p[4:]
		p = p[copy(rs[i].digest[:], p):]
	}
	return rs
}
