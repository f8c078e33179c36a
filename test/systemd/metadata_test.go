package systemd_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/drift-monitor/drift-monitor/test/harness"
	"github.com/drift-monitor/drift-monitor/test/nspawn"
)

// TestMetadataSeenUnderSystemd: the daemon under the shipped unit (its
// capabilities, sandbox and seccomp filter; --interval at its default of an
// hour) sees each metadata change Ignition never makes, on the container's
// tmpfs and on an ext4 bound into it, and each one's undoing: chcon (with
// Debian's policy, the files labelled as Ignition's setfiles labels them),
// setfattr, setfacl and setcap through their IN_ATTRIB at once, chattr +i and +a
// (which raise no inotify event at all) through the flag sweep, within
// --fileattr-interval and a sweep.
func TestMetadataSeenUnderSystemd(t *testing.T) {
	t.Parallel()
	harness.RequireTools(t, "chattr", "setfacl", "setfattr", "setcap", "chcon", "setfiles", "stat", "cp")
	const policy = "/etc/selinux/default"
	const fc = policy + "/contexts/files/file_contexts"
	if _, err := os.Stat(fc); err != nil {
		harness.Unavailable(t, "%s: %v (apt-get install selinux-policy-default)", fc, err)
	}
	// The container's /etc starts empty: a copy of the host's policy, so
	// that nothing the container does reaches the host's.
	policyCopy := t.TempDir()
	if out, err := exec.Command("cp", "-a", policy+"/contexts", policyCopy+"/").CombinedOutput(); err != nil {
		t.Fatalf("copying %s: %v\n%s", policy, err, out)
	}
	ext4 := harness.ScratchFS(t, "ext4")
	// An immutable file left behind would keep the scratch directory from
	// being removed; this runs before that, after the container is gone.
	t.Cleanup(func() { exec.Command("chattr", "-i", "-a", filepath.Join(ext4, "meta-file")).Run() })
	const ext4File = "/srv/ext4/meta-file"
	h := bootDaemon(t, setup{
		config: `{"ignition":{"version":"3.4.0"},"storage":{"files":[
 {"path":"/etc/etc-file","mode":420,"contents":{"source":"data:,hello%20world%0A"}},
 {"path":"` + ext4File + `","mode":420,"contents":{"source":"data:,x%0A"}}]}}`,
		files: []file{etcFileOK, {ext4File, "x\n", 0o644},
			{"/etc/selinux/config", "SELINUX=permissive\nSELINUXTYPE=default\n", 0o644}},
		// As Ignition's files stage labels what it wrote.
		commands: []string{"setfiles -F " + fc + " " + etcFile + " " + ext4File},
		bind:     []nspawn.Mount{{Src: ext4, Dst: "/srv/ext4"}, {Src: policyCopy, Dst: policy}},
	})
	h.waitStatus("No drift: watching 2 paths, 0 units")
	for _, fs := range []struct{ name, path, statType string }{
		{"tmpfs", etcFile, "tmpfs"},
		{"ext4", ext4File, "ext2/ext3"}, // stat -f's name for the ext4 magic
	} {
		t.Run(fs.name, func(t *testing.T) {
			h := h.in(t)
			if got := strings.TrimSpace(h.MustRun(t, "stat", "-f", "-c", "%T", fs.path)); got != fs.statType {
				t.Fatalf("%s is on %q, want %s", fs.path, got, fs.statType)
			}
			for _, c := range []struct {
				name, kind, field, value string
				do, undo                 []string
			}{
				{"chcon", "label", "DRIFT_LABEL", "security.selinux", []string{"chcon", "-t", "bin_t"}, []string{"setfiles", "-F", fc}},
				{"setfattr", "xattr", "DRIFT_XATTR", "user.note", []string{"setfattr", "-n", "user.note", "-v", "1"}, []string{"setfattr", "-x", "user.note"}},
				{"setfacl", "acl", "DRIFT_ACL", "system.posix_acl_access", []string{"setfacl", "-m", "u:nobody:r"}, []string{"setfacl", "-b"}},
				{"setcap", "xattr", "", "", []string{"setcap", "cap_net_raw+ep"}, []string{"setcap", "-r"}},
				{"chattr +i", "fileattr", "DRIFT_FILEATTR", "immutable", []string{"chattr", "+i"}, []string{"chattr", "-i"}},
				{"chattr +a", "fileattr", "DRIFT_FILEATTR", "append-only", []string{"chattr", "+a"}, []string{"chattr", "-a"}},
			} {
				want := map[string]string{"DRIFT_PATH": fs.path, "DRIFT_KIND": c.kind}
				if c.field != "" {
					want[c.field] = c.value
				}
				m := h.mark()
				start := time.Now()
				h.MustRun(t, append(c.do, fs.path)...)
				h.waitRecord(m, harness.DriftDetected, want)
				seen := time.Since(start)
				m = h.mark()
				start = time.Now()
				h.MustRun(t, append(c.undo, fs.path)...)
				h.waitRecord(m, harness.MsgDriftResolved, map[string]string{"DRIFT_PATH": fs.path, "DRIFT_KIND": c.kind})
				t.Logf("%s: seen within %v, its undoing within %v (each including journalctl's polls)",
					c.name, seen.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
			}
			h.waitStatus("No drift: watching 2 paths, 0 units")
		})
	}
}
