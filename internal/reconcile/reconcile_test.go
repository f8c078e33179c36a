package reconcile

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/drift-monitor/drift-monitor/internal/check"
	"github.com/drift-monitor/drift-monitor/internal/model"
	"github.com/drift-monitor/drift-monitor/internal/ondisk"
	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"
)

func TestKernelArgCommand(t *testing.T) {
	tests := []struct {
		name    string
		arg     string
		present bool
		want    string
	}{
		{"missing", "mitigations=off", true, "rpm-ostree kargs --append=mitigations=off"},
		{"to delete", "quiet", false, "rpm-ostree kargs --delete=quiet"},
		{"quoted", `a b'c`, true, `rpm-ostree kargs --append='a b'\''c'`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := &model.Entry{Kind: model.KindKernelArg, Arg: tt.arg, ArgPresent: tt.present}
			err := notRepaired(e, e.Kind.Means())
			p, ok := err.(*problem)
			if !ok {
				t.Fatalf("notRepaired = %v, want a problem", err)
			}
			if diff := cmp.Diff(tt.want, p.command); diff != "" {
				t.Errorf("command (-want +got):\n%s", diff)
			}
		})
	}
}

// TestNothingWrittenThroughLinks: a declared directory that became a
// symbolic link is made a directory again before what it holds is written,
// and a link among the parents made by another user is refused; nothing is
// ever written where either link leads.
func TestNothingWrittenThroughLinks(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{"etc", "elsewhere"} {
		if err := os.Mkdir(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("../elsewhere", filepath.Join(root, "etc/d")); err != nil {
		t.Fatal(err)
	}
	mode, dirMode := uint32(0o644), uint32(0o755)
	uid, gid := os.Getuid(), os.Getgid()
	entries := []model.Entry{
		{Kind: model.KindDirectory, Path: "/etc/d", Type: model.TypeDirectory, Mode: &dirMode, UID: &uid, GID: &gid},
		{Kind: model.KindFile, Path: "/etc/d/f", Type: model.TypeRegular, Mode: &mode, UID: &uid, GID: &gid,
			Content: &model.Content{Exact: []byte("f\n")}},
	}
	asRoot := os.Geteuid() == 0
	if asRoot {
		// A link another user made, where no directory is declared.
		if err := os.Symlink("../elsewhere", filepath.Join(root, "etc/other")); err != nil {
			t.Fatal(err)
		}
		if err := os.Lchown(filepath.Join(root, "etc/other"), 1234, 1234); err != nil {
			t.Fatal(err)
		}
		entries = append(entries, model.Entry{Kind: model.KindFile, Path: "/etc/other/g", Type: model.TypeRegular,
			Mode: &mode, Content: &model.Content{Exact: []byte("g\n")}})
	}
	res := repairWith(t, root, entries, SysFS{})
	if fi, err := os.Lstat(filepath.Join(root, "etc/d")); err != nil || !fi.IsDir() {
		t.Errorf("/etc/d: %v, %v; want a directory", fi, err)
	}
	if b, err := os.ReadFile(filepath.Join(root, "etc/d/f")); err != nil || string(b) != "f\n" {
		t.Errorf("/etc/d/f: %q, %v", b, err)
	}
	if ents, _ := os.ReadDir(filepath.Join(root, "elsewhere")); len(ents) > 0 {
		t.Errorf("written where a link led: %v", ents)
	}
	if asRoot {
		if len(res.Refused) != 1 || res.Refused[0].Path != "/etc/other/g" || !strings.Contains(res.Refused[0].Problem, "symbolic link") {
			t.Errorf("refused %+v, want /etc/other/g refused for the link on its way", res.Refused)
		}
	} else if len(res.Refused) != 0 {
		t.Errorf("refused %+v", res.Refused)
	}
}

// TestLeaveKeepsHardLinks: a file whose content drifted is rewritten (a
// new inode), which breaks its declared hard link; the link is linked
// again, unless it is among the paths left alone (--exclude).
func TestLeaveKeepsHardLinks(t *testing.T) {
	for _, leave := range []bool{false, true} {
		t.Run(map[bool]string{false: "relinked", true: "left alone"}[leave], func(t *testing.T) {
			root := t.TempDir()
			if err := os.Mkdir(filepath.Join(root, "etc"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(root, "etc/a.conf"), []byte("drifted\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Link(filepath.Join(root, "etc/a.conf"), filepath.Join(root, "etc/h")); err != nil {
				t.Fatal(err)
			}
			mode := uint32(0o644)
			uid, gid := os.Getuid(), os.Getgid()
			entries := []model.Entry{
				{Kind: model.KindFile, Path: "/etc/a.conf", Type: model.TypeRegular, Mode: &mode, UID: &uid, GID: &gid,
					Content: &model.Content{Exact: []byte("declared\n")}},
				{Kind: model.KindHardLink, Path: "/etc/h", Type: model.TypeHardLink, Target: "/etc/a.conf", UID: &uid, GID: &gid},
			}
			r, err := ondisk.OpenRoot(root)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			res := (&check.Checker{Root: r}).All(context.Background(), entries)
			drifted, kinds := Group(entries, res.Drift)
			rec := &Reconciler{Root: r, Declared: ondisk.Declare(entries), Entries: entries}
			if leave {
				rec.Leave = func(p string) bool { return p == "/etc/h" }
			}
			rec.Repair(context.Background(), drifted, kinds)
			a, errA := os.Stat(filepath.Join(root, "etc/a.conf"))
			h, errH := os.Stat(filepath.Join(root, "etc/h"))
			if errA != nil || errH != nil {
				t.Fatal(errA, errH)
			}
			if same := os.SameFile(a, h); same == leave {
				t.Errorf("/etc/h the same file as /etc/a.conf: %v, want %v", same, !leave)
			}
			if b, _ := os.ReadFile(filepath.Join(root, "etc/h")); leave && string(b) != "drifted\n" {
				t.Errorf("/etc/h left alone holds %q, want the old content", b)
			}
		})
	}
}

// removeFails is SysFS whose first Remove after an Exchange fails, and
// which records every Remove.
type removeFails struct {
	SysFS
	exchanged, failed bool
	removes           []string
}

func (f *removeFails) Exchange(dir int, a, b string) error {
	f.exchanged = true
	return f.SysFS.Exchange(dir, a, b)
}

func (f *removeFails) Remove(dir int, name string, isDir bool) error {
	f.removes = append(f.removes, fmt.Sprintf("%s dir=%v", name, isDir))
	if f.exchanged && !f.failed {
		f.failed = true
		return unix.EIO
	}
	return f.SysFS.Remove(dir, name, isDir)
}

// TestExchangedButOldNotRemoved: a file replaces the empty directory that
// stood at its path, and removing the old directory (now under the
// temporary name) fails. The file is in place, the error says so, and the
// temporary name is not removed again as if it still held the new file.
func TestExchangedButOldNotRemoved(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "etc/a.conf"), 0o755); err != nil {
		t.Fatal(err)
	}
	mode := uint32(0o644)
	uid, gid := os.Getuid(), os.Getgid()
	entries := []model.Entry{{Kind: model.KindFile, Path: "/etc/a.conf", Type: model.TypeRegular, Mode: &mode, UID: &uid, GID: &gid,
		Content: &model.Content{Exact: []byte("declared\n")}}}
	fs := &removeFails{}
	res := repairWith(t, root, entries, fs)
	if b, err := os.ReadFile(filepath.Join(root, "etc/a.conf")); err != nil || string(b) != "declared\n" {
		t.Errorf("/etc/a.conf: %q, %v; want the declared file in place", b, err)
	}
	if len(res.Refused) != 1 || !strings.Contains(res.Refused[0].Problem, "in place, but removing what stood there") {
		t.Errorf("refused %+v; want the failed removal, saying the file is in place", res.Refused)
	}
	if len(fs.removes) != 1 || !strings.HasSuffix(fs.removes[0], "dir=true") {
		t.Errorf("removes %q; want only the old directory's, once", fs.removes)
	}
}
