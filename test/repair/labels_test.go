package repair

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/drift-monitor/drift-monitor/test/harness"
	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"
)

// labels lists the SELinux label of every node under the root, by host
// path ("" for none).
func (r *root) labels() map[string]string {
	r.t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(r.dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		buf := make([]byte, 256)
		n, err := unix.Lgetxattr(p, "security.selinux", buf)
		label := ""
		if err == nil {
			label = strings.TrimRight(string(buf[:n]), "\x00")
		}
		out["/"+strings.TrimPrefix(strings.TrimPrefix(p, r.dir), "/")] = label
		return nil
	})
	if err != nil {
		r.t.Fatal(err)
	}
	return out
}

// imageLinks gives the root the links of a Fedora CoreOS image: /home ->
// var/home, /usr/local -> ../var/usrlocal.
func (r *root) imageLinks() {
	r.t.Helper()
	r.mkdir("/var/home", 0o755, 0, 0)
	if err := os.Rename(r.host("/home/core"), r.host("/var/home/core")); err != nil {
		r.t.Fatal(err)
	}
	r.mkdir("/var/usrlocal", 0o755, 0, 0)
	r.mkdir("/usr", 0o755, 0, 0)
	for link, target := range map[string]string{"/home": "var/home", "/usr/local": "../var/usrlocal"} {
		if err := os.Remove(r.host(link)); err != nil && !os.IsNotExist(err) {
			r.t.Fatal(err)
		}
		if err := os.Symlink(target, r.host(link)); err != nil {
			r.t.Fatal(err)
		}
	}
}

// TestLabelsWhereIgnitionPutsThem: on a root with the image's links, the
// real Ignition 2.27 writes through them and setfiles labels the paths as
// they resolve (Debian's policy: var_t under /var/home and /var/usrlocal,
// where the declared paths would be xdg_config_t and bin_t): check is
// clean on what Ignition wrote; after the nodes are removed or relabelled,
// one reconcile gives every node Ignition's label again — the directories
// it creates on the way included (Ignition relabels from the first missing
// component) — and the enablement link it writes and its .wants directory
// get the policy's. Before, check wanted the labels of the declared paths.
//
// With a policy whose file_contexts.subs makes /var/home an alias of /home
// (as Fedora's does), setfiles labels /var/home/alice/.config/app.conf as
// /home/alice/.config/app.conf, and so must drift-monitor.
func TestLabelsWhereIgnitionPutsThem(t *testing.T) {
	requireTier(t)
	harness.RequireTools(t, "setfiles", "matchpathcon", "chcon")
	t.Run("Debian's policy", func(t *testing.T) { labelsWhereIgnitionPutsThem(t, "") })
	t.Run("an alias of /home in file_contexts.subs", func(t *testing.T) { labelsWhereIgnitionPutsThem(t, "/var/home /home\n") })
}

func labelsWhereIgnitionPutsThem(t *testing.T, subs string) {
	r := newRoot(t)
	r.subs = subs
	r.imageLinks()
	r.mkdir("/var/home/alice", 0o700, 1001, 1001) // a user the config does not declare
	r.mkdir("/etc/systemd/system", 0o755, 0, 0)
	r.mkdir("/usr/lib/systemd/system", 0o755, 0, 0)
	cfg := []byte(`{"ignition":{"version":"3.4.0"},
 "passwd":{"users":[{"name":"core","sshAuthorizedKeys":["ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAILabels core@example"]}]},
 "storage":{
  "files":[
   {"path":"/home/alice/.config/app.conf","mode":420,"contents":{"source":"data:,app%0A"}},
   {"path":"/home/core/.config/both.conf","mode":420,"contents":{"source":"data:,both%0A"}},
   {"path":"/usr/local/bin/tool","mode":493,"contents":{"source":"data:,%23!%2Fbin%2Fsh%0A"}},
   {"path":"/var/lib/labelled/deep/file","mode":420,"contents":{"source":"data:,deep%0A"}}],
  "directories":[{"path":"/usr/local/share/made","mode":493}]},
 "systemd":{"units":[{"name":"labelled.service","enabled":true,"contents":"[Service]\nExecStart=/bin/true\n[Install]\nWantedBy=multi-user.target\n"}]}}`)
	if log, err := r.ignite(cfg, true); err != nil {
		t.Fatalf("%v\n%s", err, log)
	}
	p := r.config("labels.ign", string(cfg))
	want := r.labels()
	app := "var_t"
	if subs != "" {
		app = "xdg_config_t"
	}
	for f, l := range map[string]string{"/var/home/alice/.config/app.conf": app, "/var/usrlocal/bin/tool": "var_t", "/var/lib/labelled": "var_lib_t"} {
		if !strings.Contains(want[f], ":"+l+":") {
			t.Fatalf("Ignition labelled %s %q, want %s: the policy is not what this test knows", f, want[f], l)
		}
	}
	// A file under the home of a user the config declares is labelled
	// twice, at its joined path and as part of the home, in no set order:
	// either label is Ignition's.
	const both = "/var/home/core/.config/both.conf"
	alternatives := []string{"system_u:object_r:var_t:s0", "unconfined_u:object_r:xdg_config_t:s0"}
	if subs != "" {
		alternatives = alternatives[1:] // both paths are one
	}
	if !slices.Contains(alternatives, want[both]) {
		t.Fatalf("Ignition labelled %s %q, want one of %q", both, want[both], alternatives)
	}
	for _, l := range alternatives {
		if err := unix.Lsetxattr(r.host(both), "security.selinux", []byte(l), 0); err != nil {
			t.Fatal(err)
		}
		// Ignition leaves the enablement to the first boot's preset; the
		// link is reconcile's to make here.
		if res, rep := r.check(p); res.exit != 1 || len(rep.Drift) != 1 || rep.Drift[0].Kind != "enablement" {
			t.Fatalf("check of Ignition's root, %s labelled %s: want the one enablement drift, got %s", both, l, res)
		}
	}
	delete(want, both)

	for _, f := range []string{"/home/alice/.config/app.conf", "/home/core/.ssh/authorized_keys.d/ignition"} {
		if err := os.Remove(r.host(f)); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range []string{"/var/lib/labelled", "/usr/local/share/made"} {
		if err := os.RemoveAll(r.host(d)); err != nil {
			t.Fatal(err)
		}
	}
	// The label of the path as declared, which reconcile "repaired" to.
	if out, err := exec.Command("chcon", "-h", "-t", "bin_t", r.host("/usr/local/bin/tool")).CombinedOutput(); err != nil {
		t.Fatalf("chcon: %v\n%s", err, out)
	}
	_, dry := r.reconcile(p, "--dry-run")
	res, done := r.reconcile(p)
	if res.exit != 0 || !done.Clean {
		t.Fatalf("reconcile: want exit 0, clean, got %s", res)
	}
	if diff := cmp.Diff(steps(dry), steps(done)); diff != "" {
		t.Errorf("the dry run planned other steps than the run took (-dry +run):\n%s", diff)
	}
	got := r.labels()
	delete(got, both)
	const wants = "/etc/systemd/system/multi-user.target.wants"
	for _, l := range []struct{ path, typ string }{{wants, "dir"}, {wants + "/labelled.service", "lnk_file"}} {
		out, err := exec.Command("matchpathcon", "-n", "-m", l.typ, l.path).CombinedOutput()
		if err != nil {
			t.Fatalf("matchpathcon %s: %v\n%s", l.path, err, out)
		}
		if g := got[l.path]; g != strings.TrimSpace(string(out)) {
			t.Errorf("%s is labelled %q, want the policy's %q", l.path, g, strings.TrimSpace(string(out)))
		}
		delete(got, l.path)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("labels after reconcile differ from Ignition's (-Ignition +reconcile):\n%s", diff)
	}
	r.wantClean(p)
}
