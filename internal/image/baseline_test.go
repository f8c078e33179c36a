package image

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/drift-monitor/drift-monitor/internal/ondisk"
)

func findAt(t *testing.T, root string) *Baseline {
	t.Helper()
	r, err := ondisk.OpenRoot(root)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	b, err := Find(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	return b
}

func TestFindOstree(t *testing.T) {
	root := baseTree(t)
	write(t, root+"/run/ostree-booted", "")
	b := findAt(t, root)
	if b.Kind != KindOstree || b.Tree == nil || b.Tree.Base != UsrEtcDir || b.Stamp == "" {
		t.Fatalf("baseline %+v", b)
	}
	// Without /usr/etc: an ostree host, and no baseline, said so.
	must(t, os.RemoveAll(root+"/usr/etc"))
	if b := findAt(t, root); b.Available() || !strings.Contains(b.Unavailable, "/usr/etc") {
		t.Errorf("without /usr/etc: %+v", b)
	}
}

func TestFindNone(t *testing.T) {
	root := t.TempDir()
	write(t, root+"/etc/motd", "x")
	if b := findAt(t, root); b.Kind != KindNone || b.Available() || b.Unavailable == "" {
		t.Errorf("plain root: %+v", b)
	}
}

// TestFindComposefs: bootc's composefs-native backend (a composefs=
// argument, no /usr/etc): the image's /etc is the one under the mount of
// the deployment's own /etc. As root, a copy of the root mount without
// its submounts shows it; without the privilege, the baseline is
// unavailable and says why.
func TestFindComposefs(t *testing.T) {
	root := t.TempDir()
	write(t, root+"/proc/cmdline", "root=UUID=x rw composefs=0123456789abcdef0123456789abcdef\n")
	write(t, root+"/etc/motd", "image default\n")
	write(t, root+"/etc/issue", "image\n")
	state := t.TempDir()
	write(t, state+"/motd", "edited\n")
	write(t, state+"/issue", "image\n")
	write(t, state+"/added", "x")
	if os.Geteuid() != 0 {
		b := findAt(t, root)
		if b.Kind != KindComposefs || b.Available() || !strings.Contains(b.Unavailable, "baseline unavailable") {
			t.Fatalf("unprivileged: %+v", b)
		}
		return
	}
	if err := unix.Mount(state, root+"/etc", "", unix.MS_BIND, ""); err != nil {
		t.Skipf("bind mount: %v", err)
	}
	t.Cleanup(func() { unix.Unmount(root+"/etc", unix.MNT_DETACH) })
	b := findAt(t, root)
	if b.Kind != KindComposefs || !b.Available() {
		t.Fatalf("as root: %+v", b)
	}
	r, _ := ondisk.OpenRoot(root)
	defer r.Close()
	cs, err := b.Diff(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(short(cs), "; ")
	if want := "A /etc/added; M /etc/motd content"; got != want {
		t.Errorf("changes %q, want %q", got, want)
	}
}

// TestExtensions: a file a merged confext provides, as it provides it, is
// the extension's; one changed over it is not; a .systemd-confext whose
// device is not /etc's is a copy, not a merge.
func TestExtensions(t *testing.T) {
	root := baseTree(t)
	write(t, root+"/run/ostree-booted", "")
	etc := filepath.Join(root, "etc")
	write(t, root+"/var/lib/confexts/corp/etc/corp.conf", "from the extension\n")
	write(t, root+"/var/lib/confexts/corp/etc/extension-release.d/extension-release.corp", "ID=_any\n")
	write(t, etc+"/corp.conf", "from the extension\n")
	write(t, etc+"/corp-other.conf", "local\n")
	var st unix.Stat_t
	must(t, unix.Stat(etc, &st))
	write(t, etc+"/.systemd-confext/confexts", "corp\nsealed\n")
	write(t, root+"/var/lib/confexts/sealed.raw", "a disk image")
	write(t, etc+"/.systemd-confext/dev", fmt.Sprintf("%d:%d\n", unix.Major(st.Dev), unix.Minor(st.Dev)))
	b := findAt(t, root)
	if len(b.Extensions.Names) != 2 || b.Extensions.Dirs["corp"] == "" || !strings.Contains(b.Extensions.Unknown(), "sealed") {
		t.Fatalf("extensions %+v (%q)", b.Extensions, b.Extensions.Unknown())
	}
	ctx := context.Background()
	if n := b.Extensions.Provides(ctx, "/etc/corp.conf"); n != "corp" {
		t.Errorf("Provides(corp.conf) = %q", n)
	}
	if n := b.Extensions.Provides(ctx, "/etc/corp-other.conf"); n != "" {
		t.Errorf("Provides(corp-other.conf) = %q", n)
	}
	write(t, etc+"/corp.conf", "changed over the extension\n")
	if n := b.Extensions.Provides(ctx, "/etc/corp.conf"); n != "" {
		t.Errorf("a changed file is still the extension's")
	}
	write(t, etc+"/.systemd-confext/dev", "0:0\n")
	if b := findAt(t, root); len(b.Extensions.Names) != 0 {
		t.Errorf("a copy counted as a merge: %+v", b.Extensions)
	}
}
