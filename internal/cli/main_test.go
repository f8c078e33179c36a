package cli_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// testKey is the host's digest key in these tests, in hex as the key file
// holds it: fixed, so that the golden files' keyed digests are stable.
const testKey = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"

// TestMain gives the commands a state directory of their own, holding
// testKey: a test run by root must not make (or use) the host's key in
// /var/lib/drift-monitor.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "dm-cli-state-")
	if err == nil {
		err = os.WriteFile(filepath.Join(dir, "digest.key"), []byte(testKey+"\n"), 0o600)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	os.Setenv("STATE_DIRECTORY", dir)
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}
