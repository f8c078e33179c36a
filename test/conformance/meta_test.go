package conformance_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/drift-monitor/drift-monitor/test/harness"
	"golang.org/x/sys/unix"
)

// metaFixture declares what the metadata mutations act on: files with
// contents, a script, a directory, a file Ignition keeps (no contents), and
// a file and a directory Ignition creates under a directory that has a
// default ACL before Ignition runs (the image's).
var metaFixture = fixture{
	apply: config{
		Ignition: version{"3.3.0"},
		Storage: &storage{
			Files: []file{
				{Path: "/etc/app.conf", Mode: mode(0o644), Contents: percentURL("[app]\n")},
				{Path: "/usr/local/bin/tool", Mode: mode(0o755), Contents: percentURL(toolText)},
				{Path: "/etc/kept.conf", Mode: mode(0o644)},
				{Path: "/srv/acl/inherit.conf", Mode: mode(0o644), Contents: percentURL("inherits\n")},
			},
			Directories: []directory{
				{Path: "/srv/shared", Mode: mode(0o755)},
				{Path: "/srv/acl/sub", Mode: mode(0o755)},
			},
		},
	},
	prepare: prepare{selinux: true, before: func(t *testing.T, root string) {
		mustMkdir(t, at(root, "/srv/acl"), 0o755)
		run(t, "setfacl", "-d", "-m", "u:nobody:rwx,g:adm:r-x", at(root, "/srv/acl"))
		mustWrite(t, at(root, "/etc/kept.conf"), "the image's\n", 0o644)
	}},
}

// fileContexts is Debian's policy's, as prepare.selinux copies it.
const fileContexts = "/etc/selinux/default/contexts/files/file_contexts"

func run(t *testing.T, name string, args ...string) {
	t.Helper()
	if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
}

// TestMetadata: on ext4 and tmpfs, a root the real Ignition wrote checks
// clean, the ACL it inherited from the image's default ACL included; then
// each change of metadata Ignition never sets (setfacl, mode-neutral or
// not, a default ACL on a declared directory, setfattr, setcap, chattr +i
// and +a) is the one expected drift, and the tool's undo or `reconcile`
// resolves it. On the file Ignition keeps, it is a notice.
func TestMetadata(t *testing.T) {
	requireTier(t)
	harness.RequireTools(t, "setfacl", "setfattr", "setcap", "chattr", "chcon", "setfiles")
	for _, fstype := range []string{"ext4", "tmpfs"} {
		t.Run(fstype, func(t *testing.T) {
			scratch := harness.ScratchFS(t, fstype)
			if err := os.Chmod(scratch, 0o755); err != nil {
				t.Fatal(err)
			}
			t.Setenv("TMPDIR", scratch) // where runIgnition makes the root
			root, cfg := metaFixture.provision(t)
			// The kernel gave what Ignition created under /srv/acl the
			// image's default ACL: the clean check below accepts it.
			for _, x := range []struct{ p, name string }{{"/srv/acl/inherit.conf", "system.posix_acl_access"},
				{"/srv/acl/sub", "system.posix_acl_default"}} {
				if _, err := unix.Getxattr(at(root, x.p), x.name, nil); err != nil {
					t.Fatalf("%s has no %s after Ignition: %v", x.p, x.name, err)
				}
			}
			exit, rep := check(t, root, cfg)
			wantClean(t, root, exit, rep)
			if len(rep.Notices) != 0 {
				t.Errorf("notices on a fresh root: %+v", rep.Notices)
			}

			const (
				app  = "/etc/app.conf"
				tool = "/usr/local/bin/tool"
				dir  = "/srv/shared"
			)
			undoBy := func(name string, args ...string) func() {
				return func() { run(t, name, args...) }
			}
			reconcile := func() {
				if exit, rep := reconcileRoot(t, root, cfg); exit != 0 {
					t.Errorf("reconcile: exit %d: %+v", exit, rep)
				}
			}
			for _, c := range []struct {
				name   string
				mutate []string
				want   []key
				// in: a word the message must have.
				in   string
				undo func()
			}{
				{"mode-neutral setfacl", []string{"setfacl", "-m", "u:nobody:r", at(root, app)},
					[]key{{"acl", "file", app, "", "", ""}}, "user:nobody:r--", undoBy("setfacl", "-b", at(root, app))},
				{"setfacl widening the group bits", []string{"setfacl", "-m", "u:nobody:rw", at(root, app)},
					[]key{{"acl", "file", app, "", "", ""}, {"mode", "file", app, "", "", ""}}, "user:nobody:rw-", undoBy("setfacl", "-b", at(root, app))},
				{"default ACL on a declared directory", []string{"setfacl", "-d", "-m", "u:nobody:rwx", at(root, dir)},
					[]key{{"acl", "directory", dir, "", "", ""}}, "default:user:nobody:rwx", reconcile},
				{"setfattr", []string{"setfattr", "-n", "user.foo", "-v", "s3cr3t-xattr-value", at(root, app)},
					[]key{{"xattr", "file", app, "", "", ""}}, "user.foo", undoBy("setfattr", "-x", "user.foo", at(root, app))},
				{"setfattr, reconciled", []string{"setfattr", "-n", "user.foo", "-v", "bar", at(root, app)},
					[]key{{"xattr", "file", app, "", "", ""}}, "hmac-sha256:", reconcile},
				{"setcap", []string{"setcap", "cap_net_raw+ep", at(root, tool)},
					[]key{{"xattr", "file", tool, "", "", ""}}, "cap_net_raw=ep", reconcile},
				{"chcon", []string{"chcon", "-t", "bin_t", at(root, app)},
					[]key{{"label", "file", app, "", "", ""}}, "want system_u:object_r:etc_t:s0", undoBy("setfiles", "-F", "-r", root, at(root, fileContexts), at(root, app))},
				{"chcon on a directory, reconciled", []string{"chcon", "-t", "bin_t", at(root, dir)},
					[]key{{"label", "directory", dir, "", "", ""}}, "got system_u:object_r:bin_t:s0", reconcile},
				{"chcon of the user only", []string{"chcon", "-u", "unconfined_u", at(root, app)},
					nil, "", undoBy("setfiles", "-F", "-r", root, at(root, fileContexts), at(root, app))},
				{"removed, reconciled: labelled as Ignition labels", []string{"rm", at(root, app)},
					[]key{{"missing", "file", app, "", "", ""}}, "does not exist", reconcile},
				{"chattr +i", []string{"chattr", "+i", at(root, app)},
					[]key{{"fileattr", "file", app, "", "", ""}}, "immutable", undoBy("chattr", "-i", at(root, app))},
				{"chattr +a, reconciled", []string{"chattr", "+a", at(root, app)},
					[]key{{"fileattr", "file", app, "", "", ""}}, "append-only", reconcile},
				// -n: the mask stays what Ignition's chmod made it (else setfacl
				// widens it to the inherited rwx, a mode drift too).
				{"an ACL entry beyond the inherited ones", []string{"setfacl", "-n", "-m", "u:daemon:r", at(root, "/srv/acl/inherit.conf")},
					[]key{{"acl", "file", "/srv/acl/inherit.conf", "", "", ""}}, "user:daemon:r--", reconcile},
			} {
				t.Run(c.name, func(t *testing.T) {
					run(t, c.mutate[0], c.mutate[1:]...)
					exit, rep := check(t, root, cfg)
					if c.want == nil {
						wantClean(t, root, exit, rep)
						c.undo()
						return
					}
					wantDrift(t, root, exit, rep, c.want)
					found := false
					for _, it := range rep.Drift {
						found = found || strings.Contains(it.Message, c.in)
						if strings.Contains(it.Message+it.Got, "s3cr3t") {
							t.Errorf("an xattr value shows: %+v", it)
						}
					}
					if !found {
						t.Errorf("no message says %q: %+v", c.in, rep.Drift)
					}
					c.undo()
					exit, rep = check(t, root, cfg)
					wantClean(t, root, exit, rep)
				})
			}

			// Without a capability: reconcile says it cannot clear the
			// flag, and what to run; check says trusted.* is not checked.
			dropped := func(t *testing.T, cap string, args ...string) (string, int) {
				t.Helper()
				harness.RequireTools(t, "capsh")
				cmd := exec.Command("capsh", "--drop="+cap, "--", "-c", `exec "$0" "$@"`, harness.Binary(t))
				cmd.Args = append(cmd.Args, args...)
				out, err := cmd.Output()
				if _, ok := err.(*exec.ExitError); err != nil && !ok {
					t.Fatal(err)
				}
				return string(out), cmd.ProcessState.ExitCode()
			}
			t.Run("reconcile without CAP_LINUX_IMMUTABLE", func(t *testing.T) {
				run(t, "chattr", "+i", at(root, app))
				defer run(t, "chattr", "-i", at(root, app))
				out, exit := dropped(t, "cap_linux_immutable", "reconcile", "--root", root, "--config", cfg)
				if exit != 1 || !strings.Contains(out, "needs CAP_LINUX_IMMUTABLE") || !strings.Contains(out, "chattr -i -a "+app) {
					t.Errorf("exit %d, output:\n%s\nwant exit 1 naming the capability and the command", exit, out)
				}
			})
			t.Run("trusted.* without CAP_SYS_ADMIN", func(t *testing.T) {
				out, exit := dropped(t, "cap_sys_admin", "check", "--root", root, "--config", cfg)
				if exit != 0 || !strings.Contains(out, "trusted.* extended attributes are not checked") {
					t.Errorf("exit %d, output:\n%s\nwant exit 0 and a notice that trusted.* is not checked", exit, out)
				}
			})

			t.Run("kept node: a notice", func(t *testing.T) {
				run(t, "setfattr", "-n", "user.note", "-v", "1", at(root, "/etc/kept.conf"))
				exit, rep := check(t, root, cfg)
				wantClean(t, root, exit, rep)
				if len(rep.Notices) != 1 || rep.Notices[0].Kind != "kept-metadata" || rep.Notices[0].Path != "/etc/kept.conf" {
					t.Errorf("notices %+v, want one kept-metadata notice for /etc/kept.conf", rep.Notices)
				}
			})
		})
	}
}
