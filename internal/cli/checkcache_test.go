package cli_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/drift-monitor/drift-monitor/internal/cli"
	"github.com/drift-monitor/drift-monitor/test/harness"
)

// TestCheckDamagedMappedContent: a check maps its cache entry and checks
// the contents' checksum only once a content differs from its file; with a
// bit of that content flipped in the entry, the check reports the drift
// against the declared content, not the damaged bytes, warns that the entry
// is ignored, and the entry is written anew.
func TestCheckDamagedMappedContent(t *testing.T) {
	harness.RequireRoot(t, "the fixture, which chowns a file,")
	cache := filepath.Join(t.TempDir(), "cache")
	t.Setenv("CACHE_DIRECTORY", cache)
	root, config := machine(t)
	check := func() (int, string, string) {
		return run(t, context.Background(), "check", "--root", root, "--config", config)
	}
	code, want, errs := check()
	if code != cli.ExitDrift || errs != "" {
		t.Fatalf("first check: exit %d, stderr %q", code, errs)
	}
	damageEntry(t, cache, "hello\nthere\n")
	code, got, errs := check()
	if code != cli.ExitDrift || got != want {
		t.Errorf("check with a damaged content: exit %d, report (-want +got):\n-%s\n+%s", code, want, got)
	}
	if !strings.Contains(errs, "ignoring a state cache entry in "+cache+": damaged: checksum mismatch; parsing the config again") {
		t.Errorf("check with a damaged content: stderr %q, want the warning", errs)
	}
	if code, got, errs := check(); code != cli.ExitDrift || got != want || errs != "" {
		t.Errorf("check after the entry was written anew: exit %d, stderr %q, report (-want +got):\n-%s\n+%s", code, errs, want, got)
	}
}

// damageEntry flips a bit of content, which the one entry of the cache
// directory holds, in that entry.
func damageEntry(t *testing.T, cache, content string) {
	t.Helper()
	entries, err := filepath.Glob(filepath.Join(cache, "*.state"))
	if err != nil || len(entries) != 1 {
		t.Fatalf("cache entries %q, %v; want one", entries, err)
	}
	b, err := os.ReadFile(entries[0])
	if err != nil {
		t.Fatal(err)
	}
	at := bytes.Index(b, []byte(content))
	if at < 0 {
		t.Fatalf("%q is not in the entry", content)
	}
	b[at+len(content)/2] ^= 0x01
	if err := os.WriteFile(entries[0], b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestCheckDamagedEntryWarnsOnce: a config's own warnings are printed once
// by a check that found its cache entry damaged and parsed the config
// again, not once for the damaged entry and again for the parse.
func TestCheckDamagedEntryWarnsOnce(t *testing.T) {
	harness.RequireRoot(t, "the fixture, which chowns a file,")
	cache := filepath.Join(t.TempDir(), "cache")
	t.Setenv("CACHE_DIRECTORY", cache)
	root, config := machine(t)
	b, err := os.ReadFile(config)
	if err != nil {
		t.Fatal(err)
	}
	// A key Ignition does not know: a warning, not a refusal.
	b = bytes.Replace(b, []byte("{"), []byte(`{"unknownKey":1,`), 1)
	config = filepath.Join(t.TempDir(), "config.ign")
	if err := os.WriteFile(config, b, 0o644); err != nil {
		t.Fatal(err)
	}
	check := func() (int, string) {
		code, _, errs := run(t, context.Background(), "check", "--root", root, "--config", config)
		return code, errs
	}
	code, errs := check()
	warning := "unused key unknownKey"
	if code != cli.ExitDrift || strings.Count(errs, warning) != 1 {
		t.Fatalf("first check: exit %d, stderr %q; want the config's warning once", code, errs)
	}
	if code, errs := check(); code != cli.ExitDrift || strings.Count(errs, warning) != 1 {
		t.Fatalf("cached check: exit %d, stderr %q; want the config's warning once", code, errs)
	}
	damageEntry(t, cache, "hello\nthere\n")
	code, errs = check()
	if code != cli.ExitDrift || strings.Count(errs, warning) != 1 || !strings.Contains(errs, "damaged: checksum mismatch") {
		t.Errorf("check with a damaged content: exit %d, stderr %q; want the config's warning once and the entry's", code, errs)
	}
}
