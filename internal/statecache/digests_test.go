package statecache

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/drift-monitor/drift-monitor/internal/desired/statekey"
)

// The state cache is the memo of the configs' digests that desired asks.
var _ statekey.DigestMemo = (*Cache)(nil)

// TestDigestMemo: digests remembered by one Cache are found by another on
// the same directory, for exactly their stamps; a later digest of the same
// file replaces the earlier; only the newest maxDigests are kept; and a
// file of them that is damaged, written in another boot or by another way
// of hashing, or that another user could have written, is read as none.
func TestDigestMemo(t *testing.T) {
	if thisBoot() == nil {
		t.Fatal("/proc/sys/kernel/random/boot_id cannot be read: nothing is remembered")
	}
	dir := filepath.Join(t.TempDir(), "cache")
	a, b := &Cache{Dir: dir}, &Cache{Dir: dir}
	s := statekey.FileStamp{Dev: 1, Ino: 2, Mount: 3, Size: 4, Mtime: 5, Ctime: 6, Btime: 7, Mode: 0o100644}
	other := statekey.FileStamp{Dev: 1, Ino: 9, Mount: 3, Size: 4, Mtime: 5, Ctime: 6, Btime: 7, Mode: 0o100644}
	if got := b.Digests(); got != nil {
		t.Fatalf("digests in an empty directory: %v", got)
	}
	a.Remember(map[statekey.FileStamp]statekey.FileDigest{s: {7}, other: {8}})
	if got := b.Digests(); len(got) != 2 || got[s] != (statekey.FileDigest{7}) || got[other] != (statekey.FileDigest{8}) {
		t.Fatalf("remembered by another Cache: %v; want both", got)
	}
	changed := s
	changed.Ctime = 10
	a.Remember(map[statekey.FileStamp]statekey.FileDigest{changed: {9}})
	got := b.Digests()
	if _, ok := got[s]; ok || got[changed] != (statekey.FileDigest{9}) || got[other] != (statekey.FileDigest{8}) {
		t.Errorf("after a later stamp of the same file: %v; want it instead of the earlier, and the other file kept", got)
	}
	// Across another mount the same device and inode are another file.
	elsewhere := s
	elsewhere.Mount = 4
	a.Remember(map[statekey.FileStamp]statekey.FileDigest{elsewhere: {5}})
	if got := b.Digests(); got[changed] != (statekey.FileDigest{9}) {
		t.Errorf("a record of another mount replaced this one's: %v", got)
	}
	many := map[statekey.FileStamp]statekey.FileDigest{}
	for i := range maxDigests {
		many[statekey.FileStamp{Dev: 2, Ino: uint64(i)}] = statekey.FileDigest{byte(i)}
	}
	a.Remember(many)
	got = b.Digests()
	if _, ok := got[changed]; ok || len(got) != maxDigests {
		t.Errorf("after %d newer records: %d kept, the oldest kept %v; want %d, not the oldest", maxDigests, len(got), ok, maxDigests)
	}
	newest := statekey.FileStamp{Dev: 2, Ino: maxDigests - 1}
	p := filepath.Join(dir, digestsName)
	good, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	for name, damage := range map[string]func() error{
		"a flipped bit": func() error {
			d := bytes.Clone(good)
			d[len(digestsHead())+10] ^= 1
			return os.WriteFile(p, d, 0o600)
		},
		"cut short": func() error { return os.WriteFile(p, good[:len(good)-1], 0o600) },
		"another boot": func() error {
			return os.WriteFile(p, resealed(good, string(thisBoot()), strings.Repeat("0", len(thisBoot()))), 0o600)
		},
		"another scheme": func() error { return os.WriteFile(p, resealed(good, "scheme sha256", "scheme sha512"), 0o600) },
		"world-writable": func() error { return os.Chmod(p, 0o666) },
		"a link to a copy": func() error {
			c := p + ".copy"
			if err := os.WriteFile(c, good, 0o600); err != nil {
				return err
			}
			os.Remove(p)
			return os.Symlink(c, p)
		},
	} {
		if err := damage(); err != nil {
			t.Fatal(err)
		}
		if got := b.Digests(); got != nil {
			t.Errorf("%s: %d digests found; want none", name, len(got))
		}
		os.Remove(p)
		if err := os.WriteFile(p, good, 0o600); err != nil {
			t.Fatal(err)
		}
		if _, ok := b.Digests()[newest]; !ok {
			t.Fatalf("%s: the file put back is not read", name)
		}
	}
	if st, err := os.Stat(p); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("the digests' file: %v %v, want mode 0600", st.Mode(), err)
	}
}

// resealed is the digests' file b with the first old replaced by new, its
// checksum made right again: only what was replaced tells it apart.
func resealed(b []byte, old, new string) []byte {
	body := bytes.Replace(bytes.Clone(b[:len(b)-crcLen]), []byte(old), []byte(new), 1)
	return binary.LittleEndian.AppendUint32(body, crc32.Checksum(body, castagnoli))
}
