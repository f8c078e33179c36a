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
	entries, err := filepath.Glob(filepath.Join(cache, "*.state"))
	if err != nil || len(entries) != 1 {
		t.Fatalf("cache entries %q, %v; want one", entries, err)
	}
	b, err := os.ReadFile(entries[0])
	if err != nil {
		t.Fatal(err)
	}
	// /etc/etc-file's declared content, which differs from the file's.
	at := bytes.Index(b, []byte("hello\nthere\n"))
	if at < 0 {
		t.Fatal("/etc/etc-file's declared content is not in the entry")
	}
	b[at+7] ^= 0x01
	if err := os.WriteFile(entries[0], b, 0o600); err != nil {
		t.Fatal(err)
	}
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
