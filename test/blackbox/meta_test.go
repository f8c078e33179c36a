package blackbox

import (
	"os"
	"testing"
	"time"

	"github.com/drift-monitor/drift-monitor/test/harness"
)

// TestMetadataLatency: the daemon sees each metadata change as it happens
// (setxattr, an ACL and a label raise IN_ATTRIB in the watched directory),
// with its own field naming what, and sees it resolved. chattr raises no
// inotify event at all (neither in the directory nor on the file: see
// internal/daemon/flagsweep.go), so an immutable flag is found by the flag
// sweep (--fileattr-interval), long before the next full check.
func TestMetadataLatency(t *testing.T) {
	harness.RequireRoot(t, "setting security.selinux without SELinux and chattr +i")
	harness.RequireTools(t, "setfattr", "setfacl", "chcon", "setfiles", "chattr")
	const fc = "/etc/selinux/default/contexts/files/file_contexts"
	if _, err := os.Stat(fc); err != nil {
		harness.Unavailable(t, "%s: %v (apt-get install selinux-policy-default)", fc, err)
	}
	f := cleanTwoFiles(t)
	f.write("/etc/selinux/config", "SELINUX=permissive\nSELINUXTYPE=default\n", 0o644)
	f.run("mkdir", "-p", f.host("/etc/selinux/default"))
	f.run("cp", "-a", "/etc/selinux/default/contexts", f.host("/etc/selinux/default/"))
	// As Ignition's setfiles labels what it writes.
	f.run("setfiles", "-F", "-r", f.root, f.host(fc), f.host("/etc/etc-file"), f.host("/etc/sentinel"), f.host("/etc/secret"))
	d := startDaemon(t, f.root, "--interval", "1h", "--fileattr-interval", "200ms")
	d.waitStatus("No drift: watching 3 paths, 0 units")

	p := f.host("/etc/etc-file")
	for _, c := range []struct {
		kind, field, value string
		do, undo           []string
	}{
		{"xattr", "DRIFT_XATTR", "user.note", []string{"setfattr", "-n", "user.note", "-v", "1", p}, []string{"setfattr", "-x", "user.note", p}},
		{"acl", "DRIFT_ACL", "system.posix_acl_access", []string{"setfacl", "-m", "u:nobody:r", p}, []string{"setfacl", "-b", p}},
		{"label", "DRIFT_LABEL", "security.selinux", []string{"chcon", "-t", "bin_t", p}, []string{"setfiles", "-F", "-r", f.root, f.host(fc), p}},
		{"fileattr", "DRIFT_FILEATTR", "immutable", []string{"chattr", "+i", p}, []string{"chattr", "-i", p}},
	} {
		m := d.mark()
		start := time.Now()
		f.run(c.do[0], c.do[1:]...)
		d.waitRecord(m, harness.DriftDetected, map[string]string{"DRIFT_PATH": "/etc/etc-file", "DRIFT_KIND": c.kind, c.field: c.value})
		t.Logf("%s seen after %v", c.kind, time.Since(start).Round(time.Millisecond))
		m = d.mark()
		f.run(c.undo[0], c.undo[1:]...)
		d.waitRecord(m, harness.MsgDriftResolved, map[string]string{"DRIFT_PATH": "/etc/etc-file", "DRIFT_KIND": c.kind})
	}
}
