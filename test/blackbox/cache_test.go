package blackbox

import (
	"bytes"
	"crypto/sha256"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/drift-monitor/drift-monitor/test/harness"
)

// damageCacheEntry flips one bit of what the only entry of the cache
// directory dir stores as stored (a content's bytes, or its digest), and
// returns the entry's path.
func damageCacheEntry(t *testing.T, dir string, stored []byte) string {
	t.Helper()
	entries, err := filepath.Glob(filepath.Join(dir, "*.state"))
	if err != nil || len(entries) != 1 {
		t.Fatalf("cache entries in %s: %q, %v; want one", dir, entries, err)
	}
	b, err := os.ReadFile(entries[0])
	if err != nil {
		t.Fatal(err)
	}
	at := bytes.Index(b, stored)
	if at < 0 {
		t.Fatalf("%q is not in %s", stored, entries[0])
	}
	b[at+len(stored)/2] ^= 0x04
	if err := os.WriteFile(entries[0], b, 0o600); err != nil {
		t.Fatal(err)
	}
	return entries[0]
}

// TestDamagedCacheEntryIsNotDrift: one flipped bit in the state cache is
// noticed by `check` and by the daemon, which warn, parse the config again
// and find the clean tree clean. `check` compares files with the stored
// bytes, the daemon with the stored digest (issue 10: one flipped bit in it
// made the file drifted until the cache was deleted): each has the bit
// flipped where it would have misled it.
func TestDamagedCacheEntryIsNotDrift(t *testing.T) {
	f := cleanTwoFiles(t)
	cache := filepath.Join(t.TempDir(), "cache")
	env := append(os.Environ(), "CACHE_DIRECTORY="+cache, harness.NoBus)
	check := func() (int, string, string) {
		t.Helper()
		cmd := exec.Command(harness.Binary(t), "check", "--root", f.root)
		cmd.Env = env
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		if _, ok := err.(*exec.ExitError); err != nil && !ok {
			t.Fatal(err)
		}
		return cmd.ProcessState.ExitCode(), stdout.String(), stderr.String()
	}
	const clean = "No drift: 3 entries match 1 config file.\n"
	if code, out, errs := check(); code != 0 || out != clean || errs != "" {
		t.Fatalf("first check: exit %d, %q, %q; want 0 and %q", code, out, errs, clean)
	}

	entry := damageCacheEntry(t, cache, []byte("hello world\n"))
	code, out, errs := check()
	if code != 0 || out != clean {
		t.Errorf("check with a damaged entry: exit %d, %q; want 0 and %q", code, out, clean)
	}
	// The directory, never the entry's name: a digest of the configs.
	warning := "drift-monitor check: warning: ignoring a state cache entry in " + cache + ": damaged: checksum mismatch; parsing the config again\n"
	if errs != warning || strings.Contains(errs, filepath.Base(entry)) {
		t.Errorf("check with a damaged entry: stderr %q, want %q", errs, warning)
	}
	if code, out, errs := check(); code != 0 || out != clean || errs != "" {
		t.Errorf("check after the entry was rewritten: exit %d, %q, %q; want 0, %q and nothing on stderr", code, out, errs, clean)
	}

	sum := sha256.Sum256([]byte("hello world\n"))
	damageCacheEntry(t, cache, sum[:])
	d := startDaemonWith(t, f.root, daemonOpts{env: []string{"CACHE_DIRECTORY=" + cache}})
	d.waitStatus("No drift: watching 3 paths, 0 units")
	warned := false
	for _, r := range d.records(0, d.mark(), "", nil) { // records without a MESSAGE_ID
		warned = warned || r[harness.PlainLevel] == "WARN" && strings.HasPrefix(r["MESSAGE"], "ignoring a state cache entry in "+cache+": damaged: checksum mismatch")
	}
	if !warned {
		t.Errorf("the daemon did not warn of the damaged entry:\n%s", d.log())
	}
	noDriftBefore(t, d, f, 0, "/etc/etc-file")
}
