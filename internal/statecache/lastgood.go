package statecache

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"io"
	"os"

	"golang.org/x/sys/unix"

	"github.com/drift-monitor/drift-monitor/internal/desired/statekey"
	"github.com/drift-monitor/drift-monitor/internal/fsx"
)

// The last good state: the key of the state the daemon last loaded, kept in
// one file beside the entries (lastGoodMagic, the statekey.Key, the
// CRC-32C of both), so that a daemon restarted while the config in place is
// refused checks against that state, not nothing. The entry it names is
// never trimmed. Like the entries, it is only a help: when it cannot be
// written, read, or its entry is gone (removed by hand, or written by another
// build of the program, whose entries this one does not read), there is no
// last good state, and the daemon says so.
const (
	lastGoodName  = "last-good"
	lastGoodMagic = "drift-monitor last good state 1\n"
	lastGoodLen   = len(lastGoodMagic) + len(statekey.Key{}) + crcLen
)

// Served returns the key of the state that the last Get found or the last
// Put stored, and forgets it: after a load, the key of the state it
// returned, when it came through the cache. False when no state was served
// since the last call.
func (c *Cache) Served() (statekey.Key, bool) {
	if c == nil {
		return statekey.Key{}, false
	}
	c.servedMu.Lock()
	defer c.servedMu.Unlock()
	k, ok := c.served, c.servedOK
	c.servedOK = false
	return k, ok
}

// serve notes that the state of k was served (see Served).
func (c *Cache) serve(k statekey.Key) {
	c.servedMu.Lock()
	c.served, c.servedOK = k, true
	c.servedMu.Unlock()
}

// MarkGood remembers k as the last good state. Errors are ignored (see
// above).
func (c *Cache) MarkGood(k statekey.Key) {
	if c == nil {
		return
	}
	dfd, ok := c.openDir(true)
	if !ok {
		return
	}
	defer unix.Close(dfd)
	if old, ok := readLastGood(dfd); ok && old == k {
		return // a reload of the same state writes nothing
	}
	b := append([]byte(lastGoodMagic), k[:]...)
	b = binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
	fsx.WriteFile(fsx.Sys{}, dfd, fsx.File{
		Name: lastGoodName, Pattern: tmpPrefix + "*", Mode: 0o600, How: fsx.Replace, NoSync: true,
	}, func(w io.Writer) error {
		_, err := w.Write(b)
		return err
	})
}

// LastGood returns the key MarkGood remembered; false when there is no
// trustworthy record of one.
func (c *Cache) LastGood() (statekey.Key, bool) {
	if c == nil {
		return statekey.Key{}, false
	}
	dfd, ok := c.openDir(false)
	if !ok {
		return statekey.Key{}, false
	}
	defer unix.Close(dfd)
	return readLastGood(dfd)
}

// readLastGood reads the record in the directory dfd.
func readLastGood(dfd int) (k statekey.Key, ok bool) {
	fd, err := unix.Openat(dfd, lastGoodName, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return k, false
	}
	f := os.NewFile(uintptr(fd), lastGoodName)
	defer f.Close()
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG || !trusted(&st) || st.Size != int64(lastGoodLen) {
		return k, false
	}
	b := make([]byte, lastGoodLen)
	if _, err := io.ReadFull(f, b); err != nil || !bytes.HasPrefix(b, []byte(lastGoodMagic)) ||
		checkCRC(b[len(b)-crcLen:], crc32.Checksum(b[:len(b)-crcLen], castagnoli)) != nil {
		return k, false
	}
	copy(k[:], b[len(lastGoodMagic):])
	return k, true
}

// lastGoodEntry is the name of the entry the last good record names, ""
// when there is none: trim keeps it.
func lastGoodEntry(dfd int) string {
	k, ok := readLastGood(dfd)
	if !ok {
		return ""
	}
	key, ok := entryKey(k)
	if !ok {
		return ""
	}
	return entryName(key)
}
