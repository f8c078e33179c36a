package conformance_test

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// Mutations of a provisioned root. Every path is a host path, joined to the
// root here and nowhere else.

func at(root, p string) string { return filepath.Join(root, p) }

// chmod sets raw permission bits (os.Chmod would need fs.ModeSetuid and friends).
func chmod(t *testing.T, root, p string, bits uint32) {
	t.Helper()
	if err := syscall.Chmod(at(root, p), bits); err != nil {
		t.Fatalf("chmod %o %s: %v", bits, p, err)
	}
}

// chown changes the owner or group of p itself (not a symlink's target); -1 keeps one.
func chown(t *testing.T, root, p string, uid, gid int) {
	t.Helper()
	if err := os.Lchown(at(root, p), uid, gid); err != nil {
		t.Fatalf("chown %s: %v", p, err)
	}
}

// rewrite replaces p's content in place: same inode, mode and owner.
func rewrite(t *testing.T, root, p, content string) {
	t.Helper()
	f, err := os.OpenFile(at(root, p), os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(content); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func appendTo(t *testing.T, root, p, content string) {
	t.Helper()
	f, err := os.OpenFile(at(root, p), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(content); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func remove(t *testing.T, root, p string) {
	t.Helper()
	if err := os.Remove(at(root, p)); err != nil {
		t.Fatal(err)
	}
}

func mkdir(t *testing.T, root, p string) {
	t.Helper()
	if err := os.Mkdir(at(root, p), 0o755); err != nil {
		t.Fatal(err)
	}
}

func create(t *testing.T, root, p, content string) {
	t.Helper()
	if err := os.WriteFile(at(root, p), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func symlink(t *testing.T, root, target, p string) {
	t.Helper()
	if err := os.Symlink(target, at(root, p)); err != nil {
		t.Fatal(err)
	}
}

// retarget points the symlink p at target.
func retarget(t *testing.T, root, p, target string) {
	t.Helper()
	remove(t, root, p)
	symlink(t, root, target, p)
}

func rename(t *testing.T, root, from, to string) {
	t.Helper()
	if err := os.Rename(at(root, from), at(root, to)); err != nil {
		t.Fatal(err)
	}
}

// writeLike writes content to a new file dst with src's mode and owner:
// chown first, then chmod, so setuid and setgid survive.
func writeLike(t *testing.T, root, src, dst, content string) {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Stat(at(root, src), &st); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(at(root, dst), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.WriteString(content)
	if err == nil {
		err = f.Chown(int(st.Uid), int(st.Gid))
	}
	if err == nil {
		err = syscall.Fchmod(int(f.Fd()), st.Mode&0o7777)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatalf("writing %s: %v", dst, err)
	}
}

func read(t *testing.T, root, p string) string {
	t.Helper()
	b, err := os.ReadFile(at(root, p))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// copyFile makes dst a copy of src with a new inode: same content, mode and owner.
func copyFile(t *testing.T, root, src, dst string) {
	t.Helper()
	writeLike(t, root, src, dst, read(t, root, src))
}

// atomicRewrite rewrites p with its own content the way editors and config
// agents do: a temporary file in the same directory, same mode and owner,
// renamed over p.
func atomicRewrite(t *testing.T, root, p string) {
	t.Helper()
	tmp := p + ".tmp-rewrite"
	copyFile(t, root, p, tmp)
	rename(t, root, tmp, p)
}

// touch moves mtime and atime an hour ahead.
func touch(t *testing.T, root, p string) {
	t.Helper()
	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(at(root, p), later, later); err != nil {
		t.Fatal(err)
	}
}

// lstatMode returns p's permission bits including setuid, setgid and sticky.
func lstatMode(t *testing.T, root, p string) uint32 {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Lstat(at(root, p), &st); err != nil {
		t.Fatal(err)
	}
	return st.Mode & 0o7777
}
