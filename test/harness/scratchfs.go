package harness

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// Filesystem magic numbers (statfs f_type, include/uapi/linux/magic.h).
const (
	ext4Magic  = 0xEF53
	tmpfsMagic = 0x01021994
)

// ScratchFS returns an empty directory on a filesystem of type fstype
// ("ext4" or "tmpfs"), removed (and unmounted) when the test ends: the
// test's temporary directory when it is on one already, else a tmpfs mount
// or a loop-mounted ext4 image made in it. Mounting needs root: without it
// the test is Unavailable (skipped, or failed when CI=true).
func ScratchFS(t testing.TB, fstype string) string {
	t.Helper()
	dir := t.TempDir()
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	want := map[string]int64{"ext4": ext4Magic, "tmpfs": tmpfsMagic}[fstype]
	if want == 0 {
		t.Fatalf("ScratchFS: unsupported filesystem %q", fstype)
	}
	if int64(st.Type) == want {
		return dir
	}
	RequireRoot(t, "mounting a scratch "+fstype)
	mnt := filepath.Join(dir, "mnt")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	switch fstype {
	case "tmpfs":
		if err := unix.Mount("tmpfs", mnt, "tmpfs", 0, "size=64m,mode=0755"); err != nil {
			Unavailable(t, "mounting a tmpfs at %s: %v", mnt, err)
		}
	case "ext4":
		RequireTools(t, "mkfs.ext4", "mount")
		img := filepath.Join(dir, "ext4.img")
		if out, err := exec.Command("mkfs.ext4", "-q", "-F", img, "64M").CombinedOutput(); err != nil {
			t.Fatalf("mkfs.ext4: %v\n%s", err, out)
		}
		if out, err := exec.Command("mount", "-o", "loop", img, mnt).CombinedOutput(); err != nil {
			Unavailable(t, "loop-mounting an ext4 image: %v\n%s", err, out)
		}
	}
	t.Cleanup(func() {
		if err := unix.Unmount(mnt, unix.MNT_DETACH); err != nil {
			t.Errorf("unmounting %s: %v", mnt, err)
		}
	})
	return mnt
}

// Inode flags chattr sets (FS_IOC_SETFLAGS), for SetInodeFlags.
const (
	FlagImmutable = 0x10 // FS_IMMUTABLE_FL, chattr +i
	FlagAppend    = 0x20 // FS_APPEND_FL, chattr +a
)

// SetInodeFlags makes a file's immutable and append-only flags exactly
// flags (FlagImmutable, FlagAppend, or 0 to clear both) as chattr does:
// FS_IOC_GETFLAGS, then FS_IOC_SETFLAGS with the other flags kept (ext4
// refuses some requests that would drop its EXTENTS flag). It needs
// CAP_LINUX_IMMUTABLE.
func SetInodeFlags(t testing.TB, path string, flags int) {
	t.Helper()
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	old, err := unix.IoctlGetUint32(fd, unix.FS_IOC_GETFLAGS)
	if err != nil {
		t.Fatalf("FS_IOC_GETFLAGS on %s: %v", path, err)
	}
	if err := unix.IoctlSetPointerInt(fd, unix.FS_IOC_SETFLAGS, int(old)&^(FlagImmutable|FlagAppend)|flags); err != nil {
		t.Fatalf("FS_IOC_SETFLAGS %#x on %s: %v", flags, path, err)
	}
}
