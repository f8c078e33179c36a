package ondisk

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// The user-space resolution (for kernels and seccomp filters without
// openat2) must land on the same directories as openat2(RESOLVE_IN_ROOT).
func TestResolveDirMatchesOpenat2(t *testing.T) {
	dir := t.TempDir()
	mk := func(p string) { os.MkdirAll(filepath.Join(dir, p), 0o755) }
	ln := func(target, p string) { os.Symlink(target, filepath.Join(dir, p)) }
	mk("var/home/core/.ssh")
	mk("etc/a/b")
	ln("/var/home", "home")             // absolute, as on Fedora CoreOS
	ln("../../..", "etc/a/b/up")        // climbs past the root: stays at it
	ln("/etc/a/b/up/etc", "etc/abs-up") // absolute then ..
	ln("loop2", "etc/loop1")
	ln("loop1", "etc/loop2")
	os.WriteFile(filepath.Join(dir, "etc/file"), nil, 0o644)

	r, err := OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for _, p := range []string{"/", "/home/core/.ssh", "/etc/a/b/up/etc", "/etc/a/b/up/../var", "/etc/abs-up/a", "/etc/loop1", "/etc/file", "/missing/x", "/etc/a/../a/b"} {
		t.Run(p, func(t *testing.T) {
			want, werr := r.openDir(p)
			got, gerr := r.resolveDir(p[1:])
			if !errors.Is(gerr, werr) && !(werr != nil && gerr != nil) {
				t.Fatalf("openat2 error %v, user space error %v", werr, gerr)
			}
			if werr != nil {
				if !errors.Is(gerr, werr) {
					t.Logf("errors differ in kind: openat2 %v, user space %v", werr, gerr)
				}
				return
			}
			defer unix.Close(want)
			defer unix.Close(got)
			var a, b unix.Stat_t
			unix.Fstat(want, &a)
			unix.Fstat(got, &b)
			if a.Ino != b.Ino || a.Dev != b.Dev {
				t.Errorf("user space resolved %s to another directory than openat2", p)
			}
		})
	}
}
