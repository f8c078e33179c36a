package repair

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/drift-monitor/drift-monitor/test/harness"
)

// TestImageAccountsAfterReconcile: on an image host (an ostree deployment:
// /run/ostree-booted, the image's account files in /usr/etc), a declared
// user that reconcile puts back with the real useradd changes passwd,
// shadow, group and gshadow (and its membership of wheel): those are the
// user entry's lines, not undeclared changes from the image, so `check
// --image=drift` is clean after the repair. A line no config declares,
// added the same way, is still undeclared.
func TestImageAccountsAfterReconcile(t *testing.T) {
	requireTier(t)
	r := newRoot(t)
	for _, p := range []string{"/etc/passwd", "/etc/shadow", "/etc/group", "/etc/gshadow", "/etc/login.defs"} {
		mode := os.FileMode(0o644)
		if strings.Contains(p, "shadow") {
			mode = 0o640
		}
		r.write("/usr"+p, r.read(p), mode)
	}
	r.write("/run/ostree-booted", "", 0o644)
	cfg := r.config("bob.ign", `{"ignition":{"version":"3.4.0"},"passwd":{"users":[{"name":"bob","groups":["wheel"]}]}}`)
	if res, rep := r.reconcile(cfg); res.exit != 0 || !rep.Clean {
		t.Fatalf("reconcile: want exit 0, clean, got %s", res)
	}
	if !strings.Contains(r.read("/etc/group"), "\nwheel:x:10:bob\n") {
		t.Fatalf("bob is not in wheel:\n%s", r.read("/etc/group"))
	}
	res := run(t, "", "check", "--root", r.dir, "--config", cfg, "--image=drift", "--format", "json")
	if res.exit != 0 {
		t.Errorf("check --image=drift after the repair: want exit 0 (the account files' changes are bob's), got %s", res)
	}

	// reconcile --image refuses to put the image's passwd back over bob.
	res = run(t, "", "reconcile", "--root", r.dir, "--config", cfg, "--image", "--format", "json", "/etc/passwd")
	if res.exit != 1 || !strings.Contains(res.stdout, "only the lines of declared accounts differ") {
		t.Errorf("reconcile --image /etc/passwd: want exit 1, refused for bob's line, got %s", res)
	}

	r.write("/etc/passwd", r.read("/etc/passwd")+"mallory:x:0:0::/root:/bin/bash\n", 0o644)
	res = run(t, "", "check", "--root", r.dir, "--config", cfg, "--image=drift", "--format", "json")
	var rep harness.Report
	if err := json.Unmarshal([]byte(res.stdout), &rep); err != nil || res.exit != 1 || len(rep.Drift) != 1 ||
		rep.Drift[0].Kind != "undeclared" || rep.Drift[0].Path != "/etc/passwd" {
		t.Errorf("check --image=drift with an undeclared account: want exit 1 and /etc/passwd undeclared, got %s", res)
	}
}
