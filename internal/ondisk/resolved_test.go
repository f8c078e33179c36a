package ondisk_test

import (
	"testing"

	"github.com/drift-monitor/drift-monitor/internal/desired"
	"github.com/drift-monitor/drift-monitor/internal/ondisk"
)

// TestResolved: an observation says where it found the node, the links
// among its parents followed as Ignition's JoinPath follows them (an
// image's /home -> var/home, /usr/local -> ../var/usrlocal); ResolvePath
// says where a node whose parents are missing lands once they are made;
// neither goes through a link the observer does not follow.
func TestResolved(t *testing.T) {
	f := newFixture(t)
	f.mkdir("/var/home/core", 0o755)
	f.file("/var/home/core/.bashrc", "x\n", 0o644)
	f.symlink("/home", "var/home")
	f.mkdir("/var/usrlocal", 0o755)
	f.mkdir("/usr", 0o755)
	f.symlink("/usr/local", "../var/usrlocal")
	f.file("/etc/motd", "m\n", 0o644)
	f.mkdir("/root/private", 0o700)
	f.symlink("/srv", "/root/private")
	r, err := ondisk.OpenRoot(f.root)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	o := ondisk.NewObserver(r)
	defer o.Close()
	for _, tt := range []struct{ path, resolved string }{
		{"/home/core/.bashrc", "/var/home/core/.bashrc"},
		{"/home/core/absent", "/var/home/core/absent"},
		{"/etc/motd", "/etc/motd"},
		{"/usr/local/bin/tool", ""}, // its parent is missing
		{"/srv/x", ""},              // a link into a directory not everyone may enter
	} {
		ob := o.Observe(&desired.Entry{Kind: desired.KindFile, Path: tt.path, Type: desired.TypeRegular})
		if ob.Resolved != tt.resolved {
			t.Errorf("%s: Resolved %q, want %q", tt.path, ob.Resolved, tt.resolved)
		}
	}
	for _, tt := range []struct{ path, want string }{
		{"/usr/local/bin/tool", "/var/usrlocal/bin/tool"},
		{"/usr/local/a/b/c", "/var/usrlocal/a/b/c"},
		{"/home/core/.config/x", "/var/home/core/.config/x"},
		{"/new/dir/file", "/new/dir/file"},
		{"/srv/x/y", ""},
		{"/etc/motd/x", ""}, // a file where a directory belongs
	} {
		if got := r.ResolvePath(tt.path, nil); got != tt.want {
			t.Errorf("ResolvePath(%s) = %q, want %q", tt.path, got, tt.want)
		}
	}
}
