package ondisk_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/drift-monitor/drift-monitor/internal/desired"
	"github.com/drift-monitor/drift-monitor/internal/ondisk"
	"github.com/drift-monitor/drift-monitor/test/harness"
	"golang.org/x/sys/unix"
)

// TestXattrCache: on ext4 and tmpfs, a node whose inode and times are
// unchanged gets the xattrs remembered from the last observer; setting,
// changing or removing one (which changes ctime) is read afresh, and so
// is a node changed within the racy window, every time.
func TestXattrCache(t *testing.T) {
	harness.RequireRoot(t, "mounting a scratch ext4 and tmpfs")
	for _, fstype := range []string{"ext4", "tmpfs"} {
		t.Run(fstype, func(t *testing.T) {
			dir := harness.ScratchFS(t, fstype)
			f := filepath.Join(dir, "etc/f")
			if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(f, []byte("x"), 0o644); err != nil {
				t.Fatal(err)
			}
			r, err := ondisk.OpenRoot(dir)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			e := &desired.Entry{Path: "/etc/f", Type: desired.TypeRegular}
			c := ondisk.NewXattrCache()
			observe := func() []ondisk.Xattr {
				t.Helper()
				o := ondisk.NewObserver(r)
				defer o.Close()
				o.XattrCache = c
				ob := o.Observe(e)
				if ob.Err != nil || ob.Meta.Err != nil {
					t.Fatalf("observing: %v, %v", ob.Err, ob.Meta.Err)
				}
				return ob.Meta.Xattrs
			}
			// set changes an xattr and waits until ctime shows it (a change
			// in the tick of the last statx might not: that is the racy
			// case the window covers, and the clock below skips it).
			ctime := func() unix.Timespec {
				var st unix.Stat_t
				if err := unix.Lstat(f, &st); err != nil {
					t.Fatal(err)
				}
				return st.Ctim
			}
			set := func(change func() error) {
				t.Helper()
				before := ctime()
				if err := change(); err != nil {
					t.Fatal(err)
				}
				harness.Poll(t, harness.Waiting{Timeout: 5 * time.Second}, "ctime to change", func() (bool, string) {
					if ctime() != before {
						return true, ""
					}
					if err := change(); err != nil {
						t.Fatal(err)
					}
					return false, "ctime unchanged; the xattr changed again"
				})
			}
			want := func(step string, got []ondisk.Xattr, value string, hits, misses int) {
				t.Helper()
				var v string
				for _, x := range got {
					if x.Name == "user.a" {
						v = string(x.Value)
					}
				}
				if v != value {
					t.Errorf("%s: user.a = %q, want %q", step, v, value)
				}
				if c.Hits() != int64(hits) || c.Misses() != int64(misses) {
					t.Errorf("%s: %d hits, %d misses; want %d, %d", step, c.Hits(), c.Misses(), hits, misses)
				}
			}

			// Just written: racily clean, never remembered.
			set(func() error { return unix.Setxattr(f, "user.a", []byte("1"), 0) })
			want("racy, first", observe(), "1", 0, 1)
			want("racy, again", observe(), "1", 0, 2)

			// An hour on, the ctime is old enough.
			ondisk.SetXattrCacheClock(c, func() time.Time { return time.Now().Add(time.Hour) })
			want("first", observe(), "1", 0, 3)
			want("unchanged", observe(), "1", 1, 3)
			set(func() error { return unix.Setxattr(f, "user.a", []byte("2"), 0) })
			want("changed", observe(), "2", 1, 4)
			want("changed, unchanged since", observe(), "2", 2, 4)
			set(func() error { return ignoreNoData(unix.Removexattr(f, "user.a")) })
			want("removed", observe(), "", 2, 5)
			want("removed, unchanged since", observe(), "", 3, 5)
		})
	}
}

// ignoreNoData: removing an xattr a second time (set's retry) finds none.
func ignoreNoData(err error) error {
	if err == unix.ENODATA {
		return nil
	}
	return err
}
