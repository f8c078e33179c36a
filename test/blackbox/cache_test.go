package blackbox

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/drift-monitor/drift-monitor/test/harness"
	"golang.org/x/sys/unix"
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
// bytes, the daemon with the stored digest (one flipped bit in it would
// make the file drifted until the cache was deleted): each has the bit
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

// settled waits until the change time of path is older than the two
// seconds after which `check` names a config by its stamp.
func settled(t *testing.T, path string) {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	changed := time.Unix(st.Ctim.Unix())
	harness.Poll(t, harness.Waiting{Timeout: 10 * time.Second}, path+" changed over 2 s ago", func() (bool, string) {
		age := time.Since(changed)
		return age > 2*time.Second+100*time.Millisecond, fmt.Sprintf("changed %v ago", age)
	})
}

// TestConfigEditedInPlaceIsSeen: once `check` names an unchanged config by
// its stamp (config-digests beside the state cache's entries), a config
// rewritten in place, same inode and same size, is read again at once: the
// next check finds the drift it now declares, and not the old state.
func TestConfigEditedInPlaceIsSeen(t *testing.T) {
	f := cleanTwoFiles(t)
	cache := filepath.Join(t.TempDir(), "cache")
	check := func() (int, string) {
		t.Helper()
		cmd := exec.Command(harness.Binary(t), "check", "--root", f.root)
		cmd.Env = append(os.Environ(), "CACHE_DIRECTORY="+cache, harness.NoBus)
		out, err := cmd.Output()
		if _, ok := err.(*exec.ExitError); err != nil && !ok {
			t.Fatal(err)
		}
		return cmd.ProcessState.ExitCode(), string(out)
	}
	const clean = "No drift: 3 entries match 1 config file.\n"
	settled(t, f.cfg)
	for i := range 2 {
		if code, out := check(); code != 0 || out != clean {
			t.Fatalf("check %d: exit %d, %q; want 0 and %q", i, code, out, clean)
		}
	}
	digests, err := os.ReadFile(filepath.Join(cache, "config-digests"))
	if err != nil || len(digests) < 100 {
		t.Fatalf("config-digests after checks of a settled config: %d bytes, %v; want a record", len(digests), err)
	}
	cfg, err := os.OpenFile(f.cfg, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	old, err := os.ReadFile(f.cfg)
	if err != nil {
		t.Fatal(err)
	}
	at := bytes.Index(old, []byte("hello%20world"))
	if _, err := cfg.WriteAt([]byte("HELLO"), int64(at)); err != nil {
		t.Fatal(err)
	}
	cfg.Close()
	for _, when := range []string{"just after the edit", "once the edit settled"} {
		if when != "just after the edit" {
			settled(t, f.cfg)
		}
		code, out := check()
		if code != 1 || !strings.Contains(out, `content mismatch for file "/etc/etc-file"`) || !strings.Contains(out, "-HELLO world") {
			t.Errorf("check %s: exit %d, %q; want 1 and the content drift the edited config declares", when, code, out)
		}
	}
}

// TestCachedCheckCollectsNothing: a `check` served from the state cache
// makes no garbage collection (memlimit.OneShot): what it allocates is its
// state, live until it exits, which a collection would only mark, on a
// core the check's reads want. At the runtime's default settings a check
// of this many files collected while it decoded the state. The runtime's
// own trace (GODEBUG=gctrace=1) tells of every collection on stderr.
func TestCachedCheckCollectsNothing(t *testing.T) {
	const n = 5000
	var cfg strings.Builder
	cfg.WriteString(`{"ignition":{"version":"3.4.0"},"storage":{"files":[`)
	path := func(i int) string { return fmt.Sprintf("/etc/many/d%02d/f%04d.conf", i/100, i) }
	for i := range n {
		if i > 0 {
			cfg.WriteByte(',')
		}
		fmt.Fprintf(&cfg, `{"path":%q,"mode":420,"contents":{"source":"data:,file%%20%d"}}`, path(i), i)
	}
	cfg.WriteString("]}}")
	f := newFixture(t, cfg.String())
	for i := range n {
		f.write(path(i), fmt.Sprintf("file %d", i), 0o644)
	}
	var env []string
	for _, kv := range os.Environ() {
		// The administrator's settings would be the runtime's (memlimit).
		if !strings.HasPrefix(kv, "GOGC=") && !strings.HasPrefix(kv, "GOMEMLIMIT=") && !strings.HasPrefix(kv, "GODEBUG=") {
			env = append(env, kv)
		}
	}
	env = append(env, "CACHE_DIRECTORY="+filepath.Join(t.TempDir(), "cache"), harness.NoBus, "GODEBUG=gctrace=1")
	clean := fmt.Sprintf("No drift: %d entries match 1 config file.\n", n)
	for _, run := range []string{"the first check (which fills the cache)", "the cached check"} {
		cmd := exec.Command(harness.Binary(t), "check", "--root", f.root)
		cmd.Env = env
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil || stdout.String() != clean {
			t.Fatalf("%s: %v, %q, stderr %q; want %q", run, err, stdout.String(), stderr.String(), clean)
		}
		if run == "the cached check" && stderr.Len() != 0 {
			t.Errorf("%s collected garbage (or said something): %s", run, stderr.String())
		}
	}
}
