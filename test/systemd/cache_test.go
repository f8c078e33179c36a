package systemd_test

import (
	"bytes"
	"crypto/sha256"
	"path"
	"strings"
	"testing"
)

// TestDamagedCacheEntryUnderSystemd: the service's state cache
// (CacheDirectory=) with one bit of a stored digest flipped between two
// runs (the file it describes would be drifted until the cache was
// deleted) gives a run that warns in the journal, parses the config again
// and finds the clean tree clean.
func TestDamagedCacheEntryUnderSystemd(t *testing.T) {
	t.Parallel()
	h := bootDaemon(t, setup{config: etcFileAndSentinel, files: []file{etcFileOK, sentinelFile}})
	const clean = "No drift: watching 2 paths, 0 units"
	h.waitStatus(clean)
	h.MustRun(t, "systemctl", "stop", service)

	// The entry of this config is the one that holds the digest of
	// /etc/etc-file's content (an earlier run, on a bare /etc at first
	// boot, may have stored another).
	sum := sha256.Sum256([]byte(etcFileOK.content))
	var entry string
	for _, name := range strings.Fields(h.MustRun(t, "sh", "-c", "cd /var/cache/drift-monitor && ls -- *.state")) {
		p := "/var/cache/drift-monitor/" + name
		b := []byte(h.MustRun(t, "cat", p))
		at := bytes.Index(b, sum[:])
		if at < 0 {
			continue
		}
		b[at+9] ^= 0x20
		h.WriteFile(t, p, b, 0o600)
		entry = p
	}
	if entry == "" {
		t.Fatalf("no entry in /var/cache/drift-monitor holds the digest of %s", etcFile)
	}

	h.MustRun(t, "systemctl", "start", service)
	h.inv = h.prop("InvocationID")
	h.waitStatus(clean)
	rs, err := h.Records()
	if err != nil {
		t.Fatal(err)
	}
	warned := false
	for _, r := range rs {
		// The directory, never the entry's name: a digest of the configs.
		warned = warned || r["PRIORITY"] == "4" &&
			strings.HasPrefix(r["MESSAGE"], "ignoring a state cache entry in /var/cache/drift-monitor: damaged: checksum mismatch")
		if strings.Contains(r["MESSAGE"], path.Base(entry)) {
			t.Errorf("the journal names the cache entry: %q", r["MESSAGE"])
		}
	}
	if !warned {
		t.Errorf("no warning of the damaged entry %s in the run's journal", entry)
	}
	h.noDriftSince(0, etcFile)
}
