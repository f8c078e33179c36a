package statecache

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash/crc32"
	"io"

	"golang.org/x/sys/unix"

	"github.com/drift-monitor/drift-monitor/internal/fsx"
	"github.com/drift-monitor/drift-monitor/internal/selinux"
)

// Beside the states, the cache keeps the SELinux defaults a check looked
// up (check.LabelStore), one file per policy: labelsMagic, the policy's key,
// the answers (selinux.EncodeAnswers), then the CRC-32C of all of it. It is
// named by a SHA-256 of the executable's identity and the policy's key,
// which names the policy by its files' contents: the answers of another
// policy, or of another lookup's code, are another file. Kept, read and
// trimmed as the entries are (only the caller's or root's, least recently
// used first), and it holds nothing secret: paths a config declares (an
// entry holds them too) and the policy's contexts.
const (
	labelsMagic  = "drift-monitor label answers 1\n"
	labelsSuffix = ".labels"
)

// labelsName names the answers of the policy key.
func labelsName(key selinux.PolicyKey) (string, bool) {
	id := executableID()
	if id == nil {
		return "", false
	}
	h := sha256.New()
	for _, f := range [][]byte{[]byte(labelsMagic), id, key[:]} {
		var n [8]byte
		binary.LittleEndian.PutUint64(n[:], uint64(len(f)))
		h.Write(n[:])
		h.Write(f)
	}
	return hex.EncodeToString(h.Sum(nil)) + labelsSuffix, true
}

// LabelAnswers returns the answers kept for the policy key; nil when there
// are none, or none that can be trusted.
func (c *Cache) LabelAnswers(key selinux.PolicyKey) *selinux.Answers {
	if c == nil {
		return nil
	}
	name, ok := labelsName(key)
	if !ok {
		return nil
	}
	dfd, ok := c.openDir(false)
	if !ok {
		return nil
	}
	defer unix.Close(dfd)
	f, st, ok := openTrusted(dfd, name, name)
	if !ok {
		return nil
	}
	defer f.Close()
	if st.Size <= 0 || st.Size != int64(int(st.Size)) {
		return nil
	}
	var data []byte
	var err error
	if c.Mode == ModeMap {
		// As an entry: mapped for a process that loads once and exits.
		if data, err = unix.Mmap(int(f.Fd()), 0, int(st.Size), unix.PROT_READ, unix.MAP_SHARED|unix.MAP_POPULATE); err != nil {
			return nil
		}
	} else {
		data = make([]byte, st.Size)
		if _, err := io.ReadFull(f, data); err != nil {
			return nil
		}
	}
	a, err := decodeLabels(data, key)
	if err != nil {
		if c.Log != nil {
			c.Log.Warn(fmt.Sprintf("ignoring the SELinux defaults kept in %s: %v; looking them up again", c.Dir, err))
		}
		return nil
	}
	unix.UtimesNanoAt(dfd, name, nil, unix.AT_SYMLINK_NOFOLLOW)
	return a
}

// KeepLabelAnswers keeps answers as the policy key's, replacing those kept,
// and trims the directory. Errors are ignored: the cache is a speed-up.
func (c *Cache) KeepLabelAnswers(key selinux.PolicyKey, answers []selinux.Answer) {
	if c == nil {
		return
	}
	name, ok := labelsName(key)
	if !ok {
		return
	}
	dfd, ok := c.openDir(true)
	if !ok {
		return
	}
	defer unix.Close(dfd)
	b := append([]byte(labelsMagic), key[:]...)
	b = append(b, selinux.EncodeAnswers(answers)...)
	b = binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
	err := fsx.WriteFile(fsx.Sys{}, dfd, fsx.File{Name: name, Pattern: tmpPrefix + "*", Mode: 0o600, How: fsx.Replace, NoSync: true},
		func(w io.Writer) error {
			_, err := w.Write(b)
			return err
		})
	if err == nil {
		c.trim(dfd, name)
	}
}

// decodeLabels reads a file of answers kept for key.
func decodeLabels(b []byte, key selinux.PolicyKey) (*selinux.Answers, error) {
	head := len(labelsMagic) + len(key)
	if len(b) < head+crcLen || !bytes.HasPrefix(b, []byte(labelsMagic)) || !bytes.Equal(b[len(labelsMagic):head], key[:]) {
		return nil, errCacheDamaged
	}
	body := b[:len(b)-crcLen]
	if err := checkCRC(b[len(body):], crc32.Checksum(body, castagnoli)); err != nil {
		return nil, err
	}
	return selinux.DecodeAnswers(body[head:])
}
