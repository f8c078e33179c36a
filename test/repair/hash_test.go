package repair

import (
	"bytes"
	"compress/gzip"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"os"
	"strings"
	"testing"
)

// TestDataURLHash: a gzip data URL whose verification.hash is not its
// contents' makes the real Ignition fail ("hash verification failed") and
// write nothing; check refuses the config (exit 2, naming the file and the
// entry) and reconcile writes nothing. With the right hash, Ignition writes
// the file and the root checks clean. Before, check called the root clean
// and reconcile wrote the contents.
func TestDataURLHash(t *testing.T) {
	requireTier(t)
	const text = "contents Ignition never wrote\n"
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write([]byte(text))
	zw.Close()
	sum := sha512.Sum512([]byte(text))
	config := func(hash string) string {
		return fmt.Sprintf(`{"ignition":{"version":"3.4.0"},"storage":{"files":[{"path":"/etc/verified.conf","mode":420,
 "contents":{"source":"data:;base64,%s","compression":"gzip","verification":{"hash":%q}}}]}}`,
			base64.StdEncoding.EncodeToString(gz.Bytes()), hash)
	}
	t.Run("a wrong hash", func(t *testing.T) {
		r := newRoot(t)
		cfg := config("sha512-" + strings.Repeat("ab", 64))
		log, err := r.ignite([]byte(cfg), false)
		if err == nil || !strings.Contains(log, "hash verification failed") {
			t.Fatalf("Ignition: %v; want it to fail with \"hash verification failed\":\n%s", err, log)
		}
		p := r.config("wrong.ign", cfg)
		res, _ := r.check(p)
		if res.exit != 2 || !strings.Contains(res.stderr, p+": $.storage.files.0: ") || !strings.Contains(res.stderr, "verification.hash does not match") {
			t.Errorf("check: want exit 2 naming the file and the entry, got %s", res)
		}
		for _, args := range [][]string{{"--dry-run"}, {}} {
			if res, _ := r.reconcile(p, args...); res.exit != 2 {
				t.Errorf("reconcile %v: want exit 2, got %s", args, res)
			}
		}
		if _, err := os.Stat(r.host("/etc/verified.conf")); err == nil {
			t.Errorf("/etc/verified.conf was written")
		}
	})
	t.Run("the right hash", func(t *testing.T) {
		r := newRoot(t)
		cfg := config("sha512-" + hex.EncodeToString(sum[:]))
		if log, err := r.ignite([]byte(cfg), false); err != nil {
			t.Fatalf("%v\n%s", err, log)
		}
		r.wantClean(r.config("right.ign", cfg))
	})
}
