package statecache

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/drift-monitor/drift-monitor/internal/desired"
)

// TestDigestMemo: a digest remembered by one Cache is found by another on
// the same directory, for exactly its stamp; a second digest of the same
// inode replaces the first; only the newest maxDigests are kept; and a file
// of them that is damaged, or that another user could have written, is
// read as none.
func TestDigestMemo(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cache")
	a, b := &Cache{Dir: dir}, &Cache{Dir: dir}
	s := desired.FileStamp{Dev: 1, Ino: 2, Size: 3, Mtime: 4, Ctime: 5, Btime: 6, Mode: 0o100644}
	if _, ok := b.Digest(s); ok {
		t.Fatal("a digest found in an empty directory")
	}
	a.Remember(s, desired.FileDigest{7})
	if d, ok := b.Digest(s); !ok || d != (desired.FileDigest{7}) {
		t.Fatalf("remembered by another Cache: %x %v; want found", d, ok)
	}
	for name, other := range map[string]desired.FileStamp{
		"another change time": {Dev: 1, Ino: 2, Size: 3, Mtime: 4, Ctime: 9, Btime: 6, Mode: 0o100644},
		"another size":        {Dev: 1, Ino: 2, Size: 9, Mtime: 4, Ctime: 5, Btime: 6, Mode: 0o100644},
		"another birth":       {Dev: 1, Ino: 2, Size: 3, Mtime: 4, Ctime: 5, Btime: 9, Mode: 0o100644},
		"another inode":       {Dev: 1, Ino: 9, Size: 3, Mtime: 4, Ctime: 5, Btime: 6, Mode: 0o100644},
	} {
		if _, ok := b.Digest(other); ok {
			t.Errorf("%s: found the digest of another stamp", name)
		}
	}
	changed := s
	changed.Ctime = 10
	a.Remember(changed, desired.FileDigest{8})
	if _, ok := b.Digest(s); ok {
		t.Error("the inode's earlier stamp is still found after a later one was remembered")
	}
	if d, _ := b.Digest(changed); d != (desired.FileDigest{8}) {
		t.Errorf("the inode's later stamp: %x, want its digest", d)
	}
	for i := range maxDigests {
		a.Remember(desired.FileStamp{Dev: 2, Ino: uint64(i)}, desired.FileDigest{byte(i)})
	}
	if _, ok := b.Digest(changed); ok {
		t.Errorf("after %d newer records the oldest is still kept", maxDigests)
	}
	if d, ok := b.Digest(desired.FileStamp{Dev: 2, Ino: maxDigests - 1}); !ok || d != (desired.FileDigest{byte(maxDigests - 1)}) {
		t.Errorf("the newest record: %x %v, want found", d, ok)
	}
	p := filepath.Join(dir, digestsName)
	good, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	newest := desired.FileStamp{Dev: 2, Ino: maxDigests - 1}
	for name, damage := range map[string]func() error{
		"a flipped bit": func() error {
			d := append([]byte(nil), good...)
			d[len(digestsMagic)+10] ^= 1
			return os.WriteFile(p, d, 0o600)
		},
		"cut short":        func() error { return os.WriteFile(p, good[:len(good)-1], 0o600) },
		"world-writable":   func() error { return os.Chmod(p, 0o666) },
		"a link to a copy": func() error { return linkToCopy(p, good) },
	} {
		if err := damage(); err != nil {
			t.Fatal(err)
		}
		if _, ok := b.Digest(newest); ok {
			t.Errorf("%s: a digest found; want none", name)
		}
		os.Remove(p)
		if err := os.WriteFile(p, good, 0o600); err != nil {
			t.Fatal(err)
		}
		if _, ok := b.Digest(newest); !ok {
			t.Fatalf("%s: the file put back is not read", name)
		}
	}
	if st, err := os.Stat(p); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("the digests' file: %v %v, want mode 0600", st.Mode(), err)
	}
}

// linkToCopy replaces p with a symbolic link to a copy of good.
func linkToCopy(p string, good []byte) error {
	c := p + ".copy"
	if err := os.WriteFile(c, good, 0o600); err != nil {
		return err
	}
	os.Remove(p)
	return os.Symlink(c, p)
}

// The state cache is the memo of the configs' digests that desired asks.
var _ desired.DigestMemo = (*Cache)(nil)

// TestDigestMemoNotRacy: through the state cache as a check uses it, a
// config written just now is hashed at every load and never remembered:
// a change within its change time's granule would keep its stamp.
func TestDigestMemoNotRacy(t *testing.T) {
	root, cfg := cacheRoot(t)
	c := &Cache{Dir: filepath.Join(t.TempDir(), "cache")}
	for range 2 {
		if _, err := load(c, root); err != nil {
			t.Fatal(err)
		}
	}
	if b, err := os.ReadFile(filepath.Join(c.Dir, digestsName)); err == nil && len(decodeDigests(b)) > 0 {
		t.Errorf("%s, written just now, was remembered by its stamp", cfg)
	}
}
