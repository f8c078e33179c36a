package ondisk_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/drift-monitor/drift-monitor/internal/model"
	"github.com/drift-monitor/drift-monitor/internal/ondisk"
	"github.com/drift-monitor/drift-monitor/test/harness"
	"github.com/google/go-cmp/cmp"
)

// TestLocate: a symlink among a declared path's parents is followed only as
// Ignition followed it when it wrote the path (a declared link with its
// declared target; the image's own links: root's, into directories anyone
// may enter); any other is reported as a Detour, and nothing behind it is
// examined.
func TestLocate(t *testing.T) {
	type located struct {
		Detour  *ondisk.Detour
		Type    ondisk.FileType
		Content ondisk.ContentState
		Public  bool
	}
	const (
		want = "public\n"
		got  = "MARKER-BEHIND-THE-LINK\n"
	)
	file := regular("/etc/bar/sub/file", want)
	declLink := func(p, target string) model.Entry {
		return model.Entry{Kind: model.KindLink, Path: p, Type: model.TypeSymlink, Target: target}
	}
	tests := []struct {
		name     string
		setup    func(f *fixture)
		declared []model.Entry
		entry    model.Entry
		want     located
	}{
		{
			name:  "no link on the way",
			setup: func(f *fixture) { f.file(file.Path, got, 0o644) },
			entry: file,
			want:  located{Type: ondisk.Regular, Content: ondisk.Differs, Public: true},
		},
		{
			name: "a directory swapped for a link into one only root may enter",
			setup: func(f *fixture) {
				f.file("/root/private/file", got, 0o644)
				f.mkdir("/root/private", 0o700)
				f.mkdir("/etc/bar", 0o755)
				f.symlink("/etc/bar/sub", "/root/private")
			},
			entry: file,
			want:  located{Detour: &ondisk.Detour{Path: "/etc/bar/sub", Target: "/root/private"}},
		},
		{
			name: "a link into an open directory below a closed one",
			setup: func(f *fixture) {
				f.file("/closed/open/file", got, 0o644)
				f.mkdir("/closed", 0o700)
				f.mkdir("/etc/bar", 0o755)
				f.symlink("/etc/bar/sub", "../../closed/open")
			},
			entry: file,
			want:  located{Detour: &ondisk.Detour{Path: "/etc/bar/sub", Target: "../../closed/open"}},
		},
		{
			name: "the image's absolute link into an open directory (/home -> /var/home)",
			setup: func(f *fixture) {
				f.file("/var/home/core/.bashrc", got, 0o644)
				f.symlink("/home", "/var/home")
			},
			entry: regular("/home/core/.bashrc", want),
			want:  located{Type: ondisk.Regular, Content: ondisk.Differs, Public: true},
		},
		{
			name: "the image's relative link into an open directory (/usr/local -> ../var/usrlocal)",
			setup: func(f *fixture) {
				f.file("/var/usrlocal/bin/tool", want, 0o755)
				f.mkdir("/usr", 0o755)
				f.symlink("/usr/local", "../var/usrlocal")
			},
			entry: regular("/usr/local/bin/tool", want),
			want:  located{Type: ondisk.Regular, Content: ondisk.Equal},
		},
		{
			name: "followed into an open directory, the file in a closed one below it",
			setup: func(f *fixture) {
				f.file("/var/home/core/private/file", got, 0o644)
				f.mkdir("/var/home/core/private", 0o700)
				f.symlink("/home", "/var/home")
			},
			entry: regular("/home/core/private/file", want),
			want:  located{Type: ondisk.Regular, Content: ondisk.Differs, Public: false},
		},
		{
			name: "a declared directory that is a link now, even into an open directory",
			setup: func(f *fixture) {
				f.file("/var/elsewhere/file", want, 0o644)
				f.mkdir("/etc/bar", 0o755)
				f.symlink("/etc/bar/sub", "/var/elsewhere")
			},
			declared: []model.Entry{{Kind: model.KindDirectory, Path: "/etc/bar/sub", Type: model.TypeDirectory}},
			entry:    file,
			want:     located{Detour: &ondisk.Detour{Path: "/etc/bar/sub", Target: "/var/elsewhere"}},
		},
		{
			name: "a declared link with its target, wherever it leads",
			setup: func(f *fixture) {
				f.file("/root/private/file", got, 0o644)
				f.mkdir("/root/private", 0o700)
				f.mkdir("/etc/bar", 0o755)
				f.symlink("/etc/bar/sub", "/root/private")
			},
			declared: []model.Entry{declLink("/etc/bar/sub", "/root/private")},
			entry:    file,
			want:     located{Type: ondisk.Regular, Content: ondisk.Differs, Public: false},
		},
		{
			name: "a declared link with another target",
			setup: func(f *fixture) {
				f.file("/var/other/file", want, 0o644)
				f.mkdir("/etc/bar", 0o755)
				f.symlink("/etc/bar/sub", "/var/other")
			},
			declared: []model.Entry{declLink("/etc/bar/sub", "/var/declared")},
			entry:    file,
			want:     located{Detour: &ondisk.Detour{Path: "/etc/bar/sub", Target: "/var/other", Want: "/var/declared"}},
		},
		{
			name: "a link behind a followed link is judged where it stands",
			setup: func(f *fixture) {
				f.file("/root/private/file", got, 0o644)
				f.mkdir("/root/private", 0o700)
				f.mkdir("/var/a", 0o755)
				f.symlink("/var/a/sub", "/root/private")
				f.symlink("/etc/bar", "../var/a")
			},
			entry: file,
			want:  located{Detour: &ondisk.Detour{Path: "/var/a/sub", Target: "/root/private"}},
		},
		{
			name: "a declared link's target has an undeclared link into a closed directory",
			setup: func(f *fixture) {
				f.file("/root/private/file", got, 0o644)
				f.mkdir("/root/private", 0o700)
				f.symlink("/var/priv", "/root/private")
				f.mkdir("/etc/bar", 0o755)
				f.symlink("/etc/bar/sub", "/var/priv")
			},
			declared: []model.Entry{declLink("/etc/bar/sub", "/var/priv")},
			entry:    file,
			want:     located{Detour: &ondisk.Detour{Path: "/var/priv", Target: "/root/private"}},
		},
		{
			name: "a link another user made, into an open directory",
			setup: func(f *fixture) {
				f.file("/var/elsewhere/file", want, 0o644)
				f.mkdir("/etc/bar", 0o755)
				f.symlink("/etc/bar/sub", "/var/elsewhere")
				f.lchown("/etc/bar/sub", 65534, 65534)
			},
			entry: file,
			want:  located{Detour: &ondisk.Detour{Path: "/etc/bar/sub", Target: "/var/elsewhere"}},
		},
		{
			name:  "a file only its owner may read is not public",
			setup: func(f *fixture) { f.file(file.Path, got, 0o640) },
			entry: file,
			want:  located{Type: ondisk.Regular, Content: ondisk.Differs, Public: false},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			tt.setup(f)
			decl := ondisk.Declare(append(tt.declared, tt.entry))
			ob := observeDeclared(t, f.root, decl, tt.entry)
			if ob.Err != nil {
				t.Fatalf("Observe(%s): %v", tt.entry.Path, ob.Err)
			}
			got := located{Detour: ob.Detour, Type: ob.Type, Content: ob.Content.State, Public: ob.Public}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Observe(%s) (-want +got):\n%s", tt.entry.Path, diff)
			}
			if ob.Detour != nil && (ob.Content.Got != nil || ob.Size != 0) {
				t.Errorf("Observe(%s) looked behind the link: %+v", tt.entry.Path, ob)
			}
			// The observer's other view of the path agrees: nothing there.
			if ob.Detour != nil {
				if typ := openObserver(t, f.root, decl).TypeOf(tt.entry.Path); typ != ondisk.Absent {
					t.Errorf("TypeOf(%s) = %s behind the link, want nothing", tt.entry.Path, typ)
				}
			}
		})
	}
}

func (f *fixture) lchown(p string, uid, gid int) {
	f.t.Helper()
	harness.RequireRoot(f.t, "changing owners")
	if err := os.Lchown(f.path(p), uid, gid); err != nil {
		f.t.Fatal(err)
	}
}

// BenchmarkObserveFreshThroughLink is BenchmarkObserveFresh for a path
// behind one of the image's links (/home -> /var/home): the resolution is
// walked in user space and the link judged (where it leads is climbed to
// the root) every time.
func BenchmarkObserveFreshThroughLink(b *testing.B) {
	root := b.TempDir()
	data := []byte("in root\n")
	if err := os.MkdirAll(filepath.Join(root, "var/home/core"), 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "var/home/core/.bashrc"), data, 0o644); err != nil {
		b.Fatal(err)
	}
	if err := os.Symlink("/var/home", filepath.Join(root, "home")); err != nil {
		b.Fatal(err)
	}
	r, err := ondisk.OpenRoot(root)
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	o := ondisk.NewObserver(r)
	defer o.Close()
	e := &model.Entry{Kind: model.KindFile, Path: "/home/core/.bashrc", Type: model.TypeRegular,
		Content: &model.Content{Exact: data}}
	b.ReportAllocs()
	for b.Loop() {
		o.Forget()
		if ob := o.Observe(e); ob.Content.State != ondisk.Equal {
			b.Fatalf("content %v, want equal", ob.Content.State)
		}
	}
}
