package repair

import (
	"bufio"
	"context"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/drift-monitor/drift-monitor/test/harness"
)

// TestConfigsNobodyElseMayWrite: a config that a user other than root
// could have written (0666 and uid 1000, in a 0777 desired.d), or a root
// config in a directory any user may write to, is refused by check,
// reconcile and the daemon, naming the file, its mode and its owner: what
// reconcile would otherwise apply as root. adopt refuses to copy a
// user-owned or world-writable Ignition cache.
func TestConfigsNobodyElseMayWrite(t *testing.T) {
	requireTier(t)
	const cfg = `{"ignition":{"version":"3.4.0"},"passwd":{"users":[{"name":"core","passwordHash":"$6$attacker$Chosen"}]}}`
	for _, tt := range []struct {
		name, want string
		file, dir  os.FileMode
		uid        int
	}{
		{"a user's world-writable config", "10-evil.ign: owned by uid 1000 (mode 0666)", 0o666, 0o755, 1000},
		{"root's config in a world-writable directory", "desired.d: mode 0777, owned by uid 0", 0o600, 0o777, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := newRoot(t)
			r.mkdir("/etc/drift-monitor/desired.d", tt.dir, 0, 0)
			p := "/etc/drift-monitor/desired.d/10-evil.ign"
			r.write(p, cfg, tt.file)
			if err := os.Chown(r.host(p), tt.uid, tt.uid); err != nil {
				t.Fatal(err)
			}
			before := r.read("/etc/shadow")
			for _, args := range [][]string{
				{"check", "--root", r.dir},
				{"reconcile", "--root", r.dir},
				{"reconcile", "--root", r.dir, "--dry-run"},
			} {
				res := run(t, "", args...)
				if res.exit != 2 || !strings.Contains(res.stderr, tt.want) || !strings.Contains(res.stderr, "a user other than root could have written it") {
					t.Errorf("%s: want exit 2 saying %q, got %s", strings.Join(args[:1], " "), tt.want, res)
				}
			}
			if r.read("/etc/shadow") != before {
				t.Errorf("/etc/shadow changed")
			}
			daemonRefuses(t, r, tt.want)
		})
	}
	t.Run("adopt", func(t *testing.T) {
		for _, tt := range []struct {
			mode os.FileMode
			uid  int
			want string
		}{{0o666, 0, "mode 0666"}, {0o640, 1000, "owned by uid 1000"}} {
			r := newRoot(t)
			r.write("/run/ignition.json", cacheJSON, tt.mode)
			if err := os.Chown(r.host("/run/ignition.json"), tt.uid, 0); err != nil {
				t.Fatal(err)
			}
			res := run(t, "", "adopt", "--root", r.dir)
			if res.exit != 2 || !strings.Contains(res.stderr, "ignition.json: "+tt.want) {
				t.Errorf("adopt of a cache %s: want exit 2 saying so, got %s", tt.want, res)
			}
			if _, err := os.Stat(r.host("/etc/drift-monitor/desired.d/10-firstboot.ignition-cache.json")); err == nil {
				t.Errorf("adopt wrote the fragment")
			}
		}
	})
}

// daemonRefuses starts the daemon on the root and waits, with a bound,
// for its record that the config is refused, naming what want says.
func daemonRefuses(t *testing.T, r *root, want string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), runTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, harness.Binary(t), "daemon", "--root", r.dir)
	cmd.Env = append(os.Environ(), "DBUS_SYSTEM_BUS_ADDRESS=unix:path=/nonexistent/drift-monitor-repair-tier")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cmd.Process.Kill()
		cmd.Wait()
	}()
	found := make(chan string, 1)
	go func() {
		s := bufio.NewScanner(stderr)
		var seen strings.Builder
		for s.Scan() {
			seen.WriteString(s.Text() + "\n")
			if strings.Contains(s.Text(), harness.MsgLoadFailed) && strings.Contains(s.Text(), want) {
				found <- ""
				io.Copy(io.Discard, stderr)
				return
			}
		}
		found <- seen.String()
	}()
	select {
	case out := <-found:
		if out != "" {
			t.Errorf("the daemon ended without refusing the config (%s):\n%s", want, out)
		}
	case <-time.After(runTimeout):
		t.Errorf("the daemon did not refuse the config (%s) within %v", want, runTimeout)
	}
}
