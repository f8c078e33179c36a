package repair

import (
	"os"
	"strings"
	"testing"
)

// cacheJSON is shaped as Ignition 2.14 writes its config cache.
const cacheJSON = `{"ignition":{"config":{"replace":{"verification":{}}},"proxy":{},"security":{"tls":{}},"timeouts":{},"version":"3.4.0-experimental"},` +
	`"passwd":{},"storage":{"files":[{"group":{},"path":"/etc/adopted.conf","user":{},"contents":{"source":"data:,adopted%0A","verification":{}}}]},"systemd":{}}`

// TestAdoptInsideRoot: with the root's desired.d an absolute symbolic link
// (to a directory inside the root that the running host does not have),
// adopt writes the fragment and the first-boot record there, inside the
// root, and reads the fragment back from there to make the record. Before,
// the record's load followed the link on the running host and failed with
// ENOENT on every run.
func TestAdoptInsideRoot(t *testing.T) {
	requireTier(t)
	r := newRoot(t)
	const target = "/var/lib/drift-monitor-repair-tier-desired"
	if _, err := os.Lstat(target); err == nil {
		t.Fatalf("%s exists on this host: the test needs a path only the root has", target)
	}
	r.mkdir(target, 0o700, 0, 0)
	r.mkdir("/etc/drift-monitor", 0o755, 0, 0)
	if err := os.Symlink(target, r.host("/etc/drift-monitor/desired.d")); err != nil {
		t.Fatal(err)
	}
	r.write("/run/ignition.json", cacheJSON, 0o640)
	r.write("/etc/adopted.conf", "adopted\n", 0o644)
	res := run(t, "", "adopt", "--root", r.dir)
	if res.exit != 0 {
		t.Fatalf("adopt: want exit 0, got %s", res)
	}
	for _, f := range []string{"10-firstboot.ignition-cache.json", "10-firstboot.record"} {
		if _, err := os.Stat(r.host(target + "/" + f)); err != nil {
			t.Errorf("%s is not in the root's %s: %v\n%s", f, target, err, res)
		}
	}
	if _, err := os.Lstat(target); err == nil {
		t.Errorf("adopt made %s on the running host", target)
	}
	if res := run(t, "", "check", "--root", r.dir); res.exit != 0 {
		t.Errorf("check of the adopted root: %s", res)
	}
}

// TestAdoptValidatesFirst: a record path adopt refuses (a config's name)
// is refused before the fragment is written: nothing is adopted without
// its record.
func TestAdoptValidatesFirst(t *testing.T) {
	requireTier(t)
	r := newRoot(t)
	r.write("/run/ignition.json", cacheJSON, 0o640)
	res := run(t, "", "adopt", "--root", r.dir, "--record", "/etc/drift-monitor/desired.d/x.json")
	if res.exit != 2 || !strings.Contains(res.stderr, "x.json") {
		t.Errorf("adopt: want exit 2 naming x.json, got %s", res)
	}
	if ents, err := os.ReadDir(r.host("/etc/drift-monitor/desired.d")); err == nil && len(ents) > 0 {
		t.Errorf("adopt wrote %s before refusing the record", ents[0].Name())
	}
}
