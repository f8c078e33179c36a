package writers

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/drift-monitor/drift-monitor/internal/ondisk"
)

// TestCheck: a file is refused when a user other than a trusted one could
// have written it or any node its path passes through — its directory,
// a directory above it up to the root (the root included), a link on the
// way and the directories of its target, a link of another user's — naming
// that node, its mode and its owner; a sticky directory is allowed on the
// way (its names are the owners'), not as the directory a file is listed
// from.
func TestCheck(t *testing.T) {
	const file = "/etc/drift-monitor/desired.d/a.ign"
	type change struct {
		p        string // inside the root; "" the root itself
		mode     os.FileMode
		uid, gid int // -1: as made
	}
	tests := []struct {
		name     string
		changes  []change
		link     bool // /etc/drift-monitor is a link to /var/lib/dm
		listed   bool
		want     string // "" accepted; else what the error says
		rootOnly bool
	}{
		{name: "all 0755, the file 0600"},
		{name: "the file world-writable", changes: []change{{file, 0o666, -1, -1}}, want: "mode 0666, owned by uid"},
		{name: "its directory world-writable", changes: []change{{"/etc/drift-monitor/desired.d", 0o777, -1, -1}},
			want: "through directory ROOT/etc/drift-monitor/desired.d: mode 0777"},
		{name: "a directory above it world-writable", changes: []change{{"/etc", 0o777, -1, -1}},
			want: "through directory ROOT/etc: mode 0777"},
		{name: "the root world-writable", changes: []change{{"", 0o777, -1, -1}}, want: "through directory ROOT: mode 0777"},
		{name: "a sticky directory on the way", changes: []change{{"/etc", 0o777 | os.ModeSticky, -1, -1}}},
		{name: "a sticky directory of a file listed", listed: true, changes: []change{{"/etc/drift-monitor/desired.d", 0o777 | os.ModeSticky, -1, -1}},
			want: "through directory ROOT/etc/drift-monitor/desired.d: mode 1777"},
		{name: "a sticky directory of a file named", changes: []change{{"/etc/drift-monitor/desired.d", 0o777 | os.ModeSticky, -1, -1}}},
		{name: "the directory holding a link on the way", link: true, changes: []change{{"/etc", 0o777, -1, -1}},
			want: "through directory ROOT/etc: mode 0777"},
		{name: "a directory of a link's target", link: true, changes: []change{{"/var/lib", 0o777, -1, -1}},
			want: "through directory ROOT/var/lib: mode 0777"},
		{name: "a link on the way, its target root's", link: true},
		{name: "a link of another user's", link: true, rootOnly: true, changes: []change{{"/etc/drift-monitor", 0, 1000, 1000}},
			want: "through link ROOT/etc/drift-monitor: owned by uid 1000"},
		{name: "a file of another user's", rootOnly: true, changes: []change{{file, 0o600, 1000, 1000}}, want: "owned by uid 1000 (mode 0600)"},
		{name: "a directory of another user's", rootOnly: true, changes: []change{{"/etc/drift-monitor", 0o755, 1000, 1000}},
			want: "through directory ROOT/etc/drift-monitor: owned by uid 1000 (mode 0755)"},
		{name: "group-writable, root's group", rootOnly: true, changes: []change{{"/etc/drift-monitor", 0o775, 0, 0}, {file, 0o660, 0, 0}}},
		{name: "group-writable, another group", rootOnly: true, changes: []change{{"/etc/drift-monitor", 0o775, 0, 1000}},
			want: "through directory ROOT/etc/drift-monitor: mode 0775, owned by uid 0 and group 1000: writable by that group"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.rootOnly && os.Geteuid() != 0 {
				t.Skip("chown needs root")
			}
			root := t.TempDir()
			mustMkdir(t, filepath.Join(root, "etc"))
			dm := filepath.Join(root, "etc/drift-monitor")
			if tt.link {
				mustMkdir(t, filepath.Join(root, "var/lib/dm/desired.d"))
				if err := os.Symlink("../var/lib/dm", dm); err != nil {
					t.Fatal(err)
				}
			} else {
				mustMkdir(t, filepath.Join(dm, "desired.d"))
			}
			if err := os.WriteFile(filepath.Join(root, file), []byte("{}"), 0o600); err != nil {
				t.Fatal(err)
			}
			for _, c := range append([]change{{"", 0o755, -1, -1}}, tt.changes...) {
				p := filepath.Join(root, c.p)
				if fi, err := os.Lstat(p); err == nil && fi.Mode()&os.ModeSymlink == 0 {
					if err := os.Chmod(p, c.mode); err != nil {
						t.Fatal(err)
					}
				}
				if c.uid >= 0 {
					if err := os.Lchown(p, c.uid, c.gid); err != nil {
						t.Fatal(err)
					}
				}
			}
			r, err := ondisk.OpenRoot(root)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			for _, opened := range []bool{true, false} {
				var f *os.File
				if opened {
					if f, err = r.Open(file); err != nil {
						t.Fatal(err)
					}
				}
				err = Check(r, file, f, Options{Listed: tt.listed})
				if f != nil {
					f.Close()
				}
				want := strings.ReplaceAll(tt.want, "ROOT", root)
				switch {
				case want == "" && err != nil:
					t.Errorf("opened %v: refused: %v", opened, err)
				case want != "" && (!errors.Is(err, ErrOthersMayWrite) || !strings.Contains(err.Error(), want)):
					t.Errorf("opened %v: %v; want it refused, saying %q", opened, err, want)
				}
			}
		})
	}
}

// TestCheckHost: a file named on the command line (relative to the working
// directory) is walked from this machine's "/": its directory and every
// one above it are judged.
func TestCheckHost(t *testing.T) {
	dir := t.TempDir()
	sub := filepath.Join(dir, "sub")
	mustMkdir(t, sub)
	name := filepath.Join(sub, "a.ign")
	if err := os.WriteFile(name, []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	if err := CheckHost("sub/a.ign", nil, 0, Options{}); err != nil {
		t.Fatalf("refused: %v", err)
	}
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	err := CheckHost("sub/a.ign", nil, 0, Options{})
	if want := "through directory " + dir + ": mode 0777"; !errors.Is(err, ErrOthersMayWrite) || !strings.Contains(err.Error(), want) {
		t.Errorf("%v; want it refused, saying %q", err, want)
	}
}

func mustMkdir(t *testing.T, p string) {
	t.Helper()
	if err := os.MkdirAll(p, 0o755); err != nil {
		t.Fatal(err)
	}
}
