package ondisk_test

import (
	"testing"

	"github.com/drift-monitor/drift-monitor/internal/accountdb"
	"github.com/drift-monitor/drift-monitor/internal/model"
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
		ob := o.Observe(&model.Entry{Kind: model.KindFile, Path: tt.path, Type: model.TypeRegular})
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

// TestLabelPath: a node is labelled at its joined path; SSH keys at the
// home as passwd names it (where it points when the home itself is a
// link, as /root -> var/roothome); a node under the home of a declared
// user is also labelled as part of it.
func TestLabelPath(t *testing.T) {
	f := newFixture(t)
	f.mkdir("/var/home/core/.config", 0o755)
	f.mkdir("/var/home/core/.ssh/authorized_keys.d", 0o755)
	f.symlink("/home", "var/home")
	f.mkdir("/var/roothome/.ssh/authorized_keys.d", 0o755)
	f.symlink("/root", "var/roothome")
	f.mkdir("/etc", 0o755)
	f.file("/etc/passwd", "root:x:0:0::/root:/bin/sh\ncore:x:1000:1000::/home/core:/bin/sh\n", 0o644)
	r, err := ondisk.OpenRoot(f.root)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	o := ondisk.NewObserver(r)
	defer o.Close()
	entries := []model.Entry{
		{Kind: model.KindUser, Path: accountdb.PasswdFile, Account: &model.Account{Name: "core"}},
		{Kind: model.KindUser, Path: accountdb.PasswdFile, Account: &model.Account{Name: "root"}},
		{Kind: model.KindUser, Path: accountdb.PasswdFile, Account: &model.Account{Name: "nohome", Creation: model.Creation{NoCreateHome: true}}},
	}
	homes := r.RelabelledHomes(entries)
	for _, tt := range []struct {
		e          model.Entry
		at, partOf string
	}{
		{model.Entry{Kind: model.KindFile, Path: "/home/core/.config/x", Type: model.TypeRegular}, "/var/home/core/.config/x", "/home/core/.config/x"},
		{model.Entry{Kind: model.KindSSHKeys, Path: "/home/core/.ssh/authorized_keys.d/ignition", Type: model.TypeRegular},
			"/home/core/.ssh/authorized_keys.d/ignition", "/home/core/.ssh/authorized_keys.d/ignition"},
		{model.Entry{Kind: model.KindSSHKeys, Path: "/root/.ssh/authorized_keys.d/ignition", Type: model.TypeRegular},
			"/var/roothome/.ssh/authorized_keys.d/ignition", "/var/roothome/.ssh/authorized_keys.d/ignition"},
		{model.Entry{Kind: model.KindFile, Path: "/etc/motd", Type: model.TypeRegular}, "/etc/motd", ""},
	} {
		ob := o.Observe(&tt.e)
		if got := r.LabelPath(&tt.e, &ob); got != tt.at {
			t.Errorf("LabelPath(%s) = %q, want %q", tt.e.Path, got, tt.at)
		}
		if got, _ := ondisk.AsPartOfHome(ob.Resolved, homes); got != tt.partOf {
			t.Errorf("AsPartOfHome(%s) = %q, want %q (homes %+v)", ob.Resolved, got, tt.partOf, homes)
		}
	}
}
