package repair

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// TestPasswordDriftOnePath: on a root without /etc/shadow, where the hash
// is passwd's own field, check's JSON and reconcile's name the same file
// for the drift, /etc/passwd, and reconcile puts the hash back there.
func TestPasswordDriftOnePath(t *testing.T) {
	requireTier(t)
	r := newRoot(t)
	if err := os.Remove(r.host("/etc/shadow")); err != nil {
		t.Fatal(err)
	}
	r.write("/etc/passwd", "root:x:0:0:root:/root:/bin/bash\ncore:$6$old$OldHash:1000:1000::/home/core:/bin/bash\n", 0o644)
	const hash = "$6$new$TheDeclaredHash"
	cfg := r.config("pw.ign", fmt.Sprintf(`{"ignition":{"version":"3.4.0"},"passwd":{"users":[{"name":"core","passwordHash":%q}]}}`, hash))
	res, rep := r.check(cfg)
	if res.exit != 1 || len(rep.Drift) != 1 || rep.Drift[0].Kind != "password-hash" || rep.Drift[0].Path != "/etc/passwd" {
		t.Errorf("check: want one password-hash drift at /etc/passwd, got %s", res)
	}
	res, dry := r.reconcile(cfg, "--dry-run")
	if len(dry.Repaired) != 1 || dry.Repaired[0].Path != "/etc/passwd" {
		t.Errorf("reconcile --dry-run: want the repair at /etc/passwd, got %s", res)
	}
	if res, _ := r.reconcile(cfg); res.exit != 0 {
		t.Errorf("reconcile: %s", res)
	}
	if !strings.Contains(r.read("/etc/passwd"), "\ncore:"+hash+":1000:") {
		t.Errorf("the hash is not in /etc/passwd:\n%s", r.read("/etc/passwd"))
	}
	r.wantClean(cfg)
}

// TestButaneSyntaxErrorLine: a Butane config with a YAML syntax error is a
// config error at file:line:column, the line the error is on (go-yaml
// names the line where the sequence around it starts).
func TestButaneSyntaxErrorLine(t *testing.T) {
	requireTier(t)
	r := newRoot(t)
	cfg := r.config("bad.bu", "variant: fcos\nversion: 1.5.0\nstorage:\n  files:\n    - path: /etc/a\n      mode: 420\n     - path: /etc/b\n")
	for _, cmd := range []string{"check", "reconcile"} {
		res := run(t, "", cmd, "--root", r.dir, "--config", cfg)
		if res.exit != 2 || !strings.Contains(res.stderr, cfg+":7:6: ") {
			t.Errorf("%s: want exit 2 and %s:7:6, got %s", cmd, cfg, res)
		}
	}
}
