package image

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/drift-monitor/drift-monitor/internal/ondisk"
)

// baseTree writes the pristine /etc of the tree tests under root/usr/etc
// and copies it to root/etc, as ostree's deploy does.
func baseTree(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	for _, dir := range []string{"usr/etc", "etc"} {
		d := filepath.Join(root, dir)
		mk := func(p string, mode os.FileMode) {
			if err := os.MkdirAll(filepath.Join(d, p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(filepath.Join(d, p), mode); err != nil {
				t.Fatal(err)
			}
		}
		wr := func(p, content string, mode os.FileMode) {
			if err := os.WriteFile(filepath.Join(d, p), []byte(content), mode); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(filepath.Join(d, p), mode); err != nil {
				t.Fatal(err)
			}
		}
		mk(".", 0o755)
		mk("ssh", 0o755)
		mk("ssh/sshd_config.d", 0o700)
		mk("empty", 0o755)
		mk("deep/er/est", 0o755)
		wr("ssh/sshd_config", "PermitRootLogin no\n", 0o600)
		wr("ssh/sshd_config.d/50-x.conf", "X yes\n", 0o600)
		wr("motd", "hello\n", 0o644)
		wr("same-size", "aaaa\n", 0o644)
		wr("deep/er/est/f", "f\n", 0o644)
		if err := os.Symlink("../usr/lib/os-release", filepath.Join(d, "os-release")); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func diffTree(t *testing.T, root string) []Change {
	t.Helper()
	r, err := ondisk.OpenRoot(root)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	tr := &Tree{Root: r, Base: UsrEtcDir, Live: EtcDir}
	cs, err := tr.Diff(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// short is a change as config-diff prints it, with what differs.
func short(cs []Change) []string {
	var out []string
	for _, c := range cs {
		s := string(c.Op) + " " + c.Path
		if c.What != 0 {
			s += " " + c.What.String()
		}
		if c.Err != "" {
			s += " error"
		}
		out = append(out, s)
	}
	return out
}

func TestTreeMutations(t *testing.T) {
	root := os.Geteuid() == 0
	cases := []struct {
		name   string
		root   bool // needs root (chown)
		mutate func(t *testing.T, etc string)
		want   []string
	}{
		{name: "none", mutate: func(*testing.T, string) {}},
		{name: "content", mutate: func(t *testing.T, etc string) { write(t, etc+"/motd", "bye\n") },
			want: []string{"M /etc/motd content"}},
		{name: "content of the same size", mutate: func(t *testing.T, etc string) { write(t, etc+"/same-size", "aaab\n") },
			want: []string{"M /etc/same-size content"}},
		{name: "identical rewrite through a new inode", mutate: func(t *testing.T, etc string) {
			must(t, os.Remove(etc+"/motd"))
			write(t, etc+"/motd", "hello\n")
		}},
		{name: "touch", mutate: func(t *testing.T, etc string) {
			must(t, os.Chtimes(etc+"/motd", timeAgo(), timeAgo()))
		}},
		{name: "xattr only", mutate: func(t *testing.T, etc string) {
			if err := syscall.Setxattr(etc+"/motd", "user.test", []byte("v"), 0); err != nil {
				t.Skipf("user xattrs: %v", err)
			}
		}},
		{name: "mode", mutate: func(t *testing.T, etc string) { must(t, os.Chmod(etc+"/motd", 0o600)) },
			want: []string{"M /etc/motd mode"}},
		{name: "setuid", mutate: func(t *testing.T, etc string) { must(t, os.Chmod(etc+"/motd", 0o644|os.ModeSetuid)) },
			want: []string{"M /etc/motd mode"}},
		{name: "owner", root: true, mutate: func(t *testing.T, etc string) { must(t, os.Lchown(etc+"/motd", 1000, -1)) },
			want: []string{"M /etc/motd owner"}},
		{name: "group", root: true, mutate: func(t *testing.T, etc string) { must(t, os.Lchown(etc+"/motd", -1, 1000)) },
			want: []string{"M /etc/motd group"}},
		{name: "link owner", root: true, mutate: func(t *testing.T, etc string) { must(t, os.Lchown(etc+"/os-release", 1000, 1000)) },
			want: []string{"M /etc/os-release owner,group"}},
		{name: "symlink retarget", mutate: func(t *testing.T, etc string) {
			must(t, os.Remove(etc+"/os-release"))
			must(t, os.Symlink("/usr/lib/os-release", etc+"/os-release"))
		}, want: []string{"M /etc/os-release target"}},
		{name: "file to symlink", mutate: func(t *testing.T, etc string) {
			must(t, os.Remove(etc+"/motd"))
			must(t, os.Symlink("motd.d", etc+"/motd"))
		}, want: []string{"M /etc/motd type"}},
		{name: "directory to file: nothing under it listed", mutate: func(t *testing.T, etc string) {
			must(t, os.RemoveAll(etc+"/ssh"))
			write(t, etc+"/ssh", "x")
		}, want: []string{"M /etc/ssh type"}},
		{name: "added file", mutate: func(t *testing.T, etc string) { write(t, etc+"/sudoers.d/admin", "x\n") },
			want: []string{"A /etc/sudoers.d", "A /etc/sudoers.d/admin"}},
		{name: "added nested directories", mutate: func(t *testing.T, etc string) {
			must(t, os.MkdirAll(etc+"/a/b/c", 0o755))
		}, want: []string{"A /etc/a", "A /etc/a/b", "A /etc/a/b/c"}},
		{name: "deleted file", mutate: func(t *testing.T, etc string) { must(t, os.Remove(etc+"/motd")) },
			want: []string{"D /etc/motd"}},
		{name: "deleted directory once", mutate: func(t *testing.T, etc string) { must(t, os.RemoveAll(etc+"/deep")) },
			want: []string{"D /etc/deep"}},
		{name: "directory mode", mutate: func(t *testing.T, etc string) { must(t, os.Chmod(etc+"/ssh/sshd_config.d", 0o755)) },
			want: []string{"M /etc/ssh/sshd_config.d mode"}},
		{name: "fifo added", mutate: func(t *testing.T, etc string) { must(t, syscall.Mkfifo(etc+"/fifo", 0o644)) },
			want: []string{"A /etc/fifo"}},
		{name: "fifo in place of a file", mutate: func(t *testing.T, etc string) {
			must(t, os.Remove(etc+"/motd"))
			must(t, syscall.Mkfifo(etc+"/motd", 0o644))
		}, want: []string{"M /etc/motd type"}},
		{name: "several", mutate: func(t *testing.T, etc string) {
			must(t, os.Chmod(etc+"/ssh/sshd_config", 0o644))
			write(t, etc+"/ssh/sshd_config", "PermitRootLogin yes\n")
			must(t, os.Remove(etc+"/ssh/sshd_config.d/50-x.conf"))
			write(t, etc+"/zz", "")
		}, want: []string{"M /etc/ssh/sshd_config mode,content", "D /etc/ssh/sshd_config.d/50-x.conf", "A /etc/zz"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.root && !root {
				t.Skip("needs root to chown")
			}
			r := baseTree(t)
			tc.mutate(t, filepath.Join(r, "etc"))
			got := short(diffTree(t, r))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("changes (-want +got):\n%s", diff)
			}
		})
	}
}

// TestDiffAtScopes: DiffAt's changes at and under its scope are exactly
// the full Diff's there, wherever the path is (a removed ancestor, an
// added one, a type change above it, an ordinary file).
func TestDiffAtScopes(t *testing.T) {
	root := baseTree(t)
	etc := filepath.Join(root, "etc")
	must(t, os.RemoveAll(etc+"/deep"))
	must(t, os.MkdirAll(etc+"/new/sub", 0o755))
	write(t, etc+"/new/sub/f", "x")
	must(t, os.Remove(etc+"/motd"))
	must(t, os.Mkdir(etc+"/motd", 0o755))
	write(t, etc+"/ssh/sshd_config", "changed\n")
	r, err := ondisk.OpenRoot(root)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	tr := &Tree{Root: r, Base: UsrEtcDir, Live: EtcDir}
	full, err := tr.Diff(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ path, scope string }{
		{"/etc/deep/er/est/f", "/etc/deep"},
		{"/etc/new/sub/f", "/etc/new"},
		{"/etc/motd/x", "/etc/motd"},
		{"/etc/ssh/sshd_config", "/etc/ssh/sshd_config"},
		{"/etc/ssh", "/etc/ssh"},
		{"/etc/nothing/there", "/etc/nothing"},
		{"/etc", "/etc"},
	} {
		scope, cs, err := tr.DiffAt(context.Background(), tc.path)
		if err != nil {
			t.Fatal(err)
		}
		if scope != tc.scope {
			t.Errorf("DiffAt(%s): scope %s, want %s", tc.path, scope, tc.scope)
		}
		var want []Change
		for _, c := range full {
			if c.Path == scope || strings.HasPrefix(c.Path, scope+"/") || scope == "/etc" {
				want = append(want, c)
			}
		}
		if diff := cmp.Diff(short(want), short(cs)); diff != "" {
			t.Errorf("DiffAt(%s) (-full diff's +DiffAt's):\n%s", tc.path, diff)
		}
	}
}

// TestTreeStaysInRoot: a link in the live /etc is compared as a link,
// never followed, even to a directory; and an /etc that is itself a link
// resolves inside the root.
func TestTreeStaysInRoot(t *testing.T) {
	root := baseTree(t)
	etc := filepath.Join(root, "etc")
	outside := t.TempDir()
	write(t, outside+"/secret", "s")
	must(t, os.Symlink(outside, etc+"/escape"))
	got := short(diffTree(t, root))
	if diff := cmp.Diff([]string{"A /etc/escape"}, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func write(t *testing.T, p, s string) {
	t.Helper()
	must(t, os.MkdirAll(filepath.Dir(p), 0o755))
	must(t, os.WriteFile(p, []byte(s), 0o644))
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func timeAgo() time.Time { return time.Now().Add(-48 * time.Hour) }
