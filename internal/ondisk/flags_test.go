package ondisk_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/drift-monitor/drift-monitor/internal/ondisk"
	"github.com/drift-monitor/drift-monitor/test/harness"
)

// TestFlags: on ext4 and tmpfs, Flags reads immutable and append-only with
// one statx, never through a symlink at the path nor out of the root, and
// says when nothing can be examined.
func TestFlags(t *testing.T) {
	harness.RequireRoot(t, "setting the immutable and append-only flags")
	for _, fstype := range []string{"ext4", "tmpfs"} {
		t.Run(fstype, func(t *testing.T) {
			dir := harness.ScratchFS(t, fstype)
			at := func(p string) string { return filepath.Join(dir, p) }
			for _, p := range []string{"etc/i", "etc/a", "etc/plain", "etc/target"} {
				if err := os.MkdirAll(filepath.Dir(at(p)), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(at(p), []byte("x"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.Symlink("target", at("etc/link")); err != nil {
				t.Fatal(err)
			}
			harness.SetInodeFlags(t, at("etc/i"), harness.FlagImmutable)
			defer harness.SetInodeFlags(t, at("etc/i"), 0)
			harness.SetInodeFlags(t, at("etc/a"), harness.FlagAppend)
			defer harness.SetInodeFlags(t, at("etc/a"), 0)
			harness.SetInodeFlags(t, at("etc/target"), harness.FlagImmutable)
			defer harness.SetInodeFlags(t, at("etc/target"), 0)

			o := observerIn(t, dir)
			for _, c := range []struct {
				path string
				want ondisk.Flags
				ok   bool
			}{
				{"/etc/i", ondisk.FlagImmutable, true},
				{"/etc/a", ondisk.FlagAppend, true},
				{"/etc/plain", 0, true},
				{"/etc/link", 0, true}, // the link itself, not its immutable target
				{"/etc/missing", 0, false},
				{"/missing/dir/f", 0, false},
			} {
				if f, ok := o.Flags(c.path); f != c.want || ok != c.ok {
					t.Errorf("Flags(%s) = %v, %v; want %v, %v", c.path, f, ok, c.want, c.ok)
				}
			}
		})
	}
}

// BenchmarkFlags: one sweep of the flags of n declared files, 100 to a
// directory, in path order as the daemon's index holds them.
func BenchmarkFlags(b *testing.B) {
	for _, n := range []int{10000, 100000} {
		b.Run(fmt.Sprintf("entries=%d", n), func(b *testing.B) {
			root := b.TempDir()
			var paths []string
			for i := range n {
				p := fmt.Sprintf("/etc/d%04d/f%03d", i/100, i%100)
				if i%100 == 0 {
					if err := os.MkdirAll(filepath.Join(root, filepath.Dir(p)), 0o755); err != nil {
						b.Fatal(err)
					}
				}
				if err := os.WriteFile(filepath.Join(root, p), nil, 0o644); err != nil {
					b.Fatal(err)
				}
				paths = append(paths, p)
			}
			o := observerIn(b, root)
			b.ReportAllocs()
			for b.Loop() {
				o.Forget() // a sweep starts with no directory open, as after the loop's other work
				for _, p := range paths {
					if _, ok := o.Flags(p); !ok {
						b.Fatalf("%s: not examined", p)
					}
				}
			}
		})
	}
}

// observerIn is an observer of the root at dir, closed with its root when
// the test ends.
func observerIn(tb testing.TB, dir string) *ondisk.Observer {
	tb.Helper()
	r, err := ondisk.OpenRoot(dir)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { r.Close() })
	o := ondisk.NewObserver(r)
	tb.Cleanup(o.Close)
	return o
}
