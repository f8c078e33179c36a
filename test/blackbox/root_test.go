package blackbox

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/drift-monitor/drift-monitor/test/harness"
)

// TestCheckReadsInsideTheRoot: `check --root R`, where R's /etc, or its
// /etc/passwd and desired.d, are absolute symlinks, reads the configs and
// the accounts inside R, as the host in R sees them. Each link's target is
// an absolute path that exists both on this machine (with a config that
// declares /host-file and an account with another uid) and inside R (with
// R's): a lexical join of R and /etc/... would read this machine's files
// and report /host-file missing.
func TestCheckReadsInsideTheRoot(t *testing.T) {
	cfg := func(path string) string {
		return `{"ignition":{"version":"3.4.0"},"storage":{"files":[{"path":"` + path +
			`","user":{"name":"alice"},"contents":{"source":"data:,x"}}]}}`
	}
	rootPasswd := fmt.Sprintf("alice:x:%d:%d::/home/alice:/bin/sh\n", os.Getuid(), os.Getgid())
	const hostPasswd = "alice:x:9999:9999::/home/alice:/bin/sh\n"
	write := func(p, s string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	link := func(target, p string) {
		t.Helper()
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name  string
		build func(root, hostSide string)
	}{
		{"etc is an absolute link", func(root, hostSide string) {
			target := filepath.Join(hostSide, "etc")
			write(filepath.Join(target, "passwd"), hostPasswd)
			write(filepath.Join(target, "drift-monitor/desired.d/10.ign"), cfg("/host-file"))
			write(filepath.Join(root, target, "passwd"), rootPasswd)
			write(filepath.Join(root, target, "drift-monitor/desired.d/10.ign"), cfg("/root-file"))
			link(target, filepath.Join(root, "etc"))
		}},
		{"passwd and desired.d are absolute links", func(root, hostSide string) {
			passwd, dir := filepath.Join(hostSide, "passwd"), filepath.Join(hostSide, "desired.d")
			write(passwd, hostPasswd)
			write(filepath.Join(dir, "10.ign"), cfg("/host-file"))
			write(filepath.Join(root, passwd), rootPasswd)
			write(filepath.Join(root, dir, "10.ign"), cfg("/root-file"))
			link(passwd, filepath.Join(root, "etc/passwd"))
			link(dir, filepath.Join(root, "etc/drift-monitor/desired.d"))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root, hostSide := t.TempDir(), t.TempDir()
			tc.build(root, hostSide)
			write(filepath.Join(root, "root-file"), "x")
			// Without the state cache, and through it twice (stored, then
			// hit): the cache's key hashes the configs as it reads them.
			cacheDir := filepath.Join(t.TempDir(), "cache")
			cache := "CACHE_DIRECTORY=" + cacheDir
			for _, run := range []struct{ name, flag, env string }{
				{"no cache", "--no-cache", ""}, {"cache miss", "", cache}, {"cache hit", "", cache},
			} {
				args := []string{"check", "--root", root}
				if run.flag != "" {
					args = append(args, run.flag)
				}
				cmd := exec.Command(harness.Binary(t), args...)
				cmd.Env = append(os.Environ(), harness.NoBus)
				if run.env != "" {
					cmd.Env = append(cmd.Env, run.env)
				}
				var stdout, stderr bytes.Buffer
				cmd.Stdout, cmd.Stderr = &stdout, &stderr
				err := cmd.Run()
				if _, ok := err.(*exec.ExitError); err != nil && !ok {
					t.Fatal(err)
				}
				const want = "No drift: 1 entry matches 1 config file.\n"
				if code := cmd.ProcessState.ExitCode(); code != 0 || stdout.String() != want || stderr.Len() > 0 {
					t.Errorf("%s: check exited %d with\n%s%s\nwant 0 with %q", run.name, code, stdout.String(), stderr.String(), want)
				}
			}
			if entries, _ := filepath.Glob(filepath.Join(cacheDir, "*.state")); len(entries) != 1 {
				t.Errorf("cache entries %q, want the one state the cached runs stored", entries)
			}
		})
	}
}
