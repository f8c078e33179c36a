package systemd_test

import (
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"strings"
	"testing"

	"github.com/drift-monitor/drift-monitor/test/harness"
)

// What TestDisclosure declares and provisions.
const (
	// swapped is a declared file (0644) whose implied parent directory the
	// test replaces with a symlink into a directory only root may enter.
	swapped    = "/etc/bar/sub/file"
	swappedDir = "/etc/bar/sub"
	// private is that root-only directory; its file holds privateMarker
	// (mode 0644: only the directory keeps others out).
	private       = "/var/lib/dm-private"
	privateMarker = "dm-private-MARKER-51c0e2"
	// layoutConf lies under /etc/layout, a symlink of root's to a directory
	// anyone may enter, as /home -> var/home is on Fedora CoreOS: Ignition
	// writes through it, and so does the monitor look.
	layoutConf = "/etc/layout/app.conf"
	// secretToken (0600) declares "hunter2"; remoteToken (0600) declares a
	// remote content by its sha512 verification hash, the digest of the
	// same "hunter2".
	secretToken = "/etc/secret.token"
	remoteToken = "/etc/remote.token"
	hunter2     = "hunter2"
)

// TestDisclosure proves that nothing the monitor reports discloses what the
// person who changed a file could not read, nor what its declared mode keeps
// secret: not in any field of any journal record (of the whole journal, not
// just the unit's), nor in `drift-monitor check` (text and JSON), nor in the
// bus properties or the status line.
//
//   - A declared file's parent directory swapped for a symlink to a
//     directory only root may enter is a type drift of that directory, and
//     the file there is never read (the daemon has CAP_DAC_READ_SEARCH).
//   - A directory only root may enter bind-mounted over a declared one
//     leaves the file where it was declared, but nobody else may read it
//     there: a content drift with a keyed digest, no diff.
//   - A symlink of root's to a directory anyone may enter is followed, as
//     Ignition's JoinPath follows it: no false drift, and diffs as usual.
//   - A secret's tampered content leaves neither its bytes nor a plain
//     SHA-256 or SHA-512 of the declared or the found content: digests are
//     keyed with the host's key, and `check` run by root prints the daemon's.
func TestDisclosure(t *testing.T) {
	t.Parallel()
	sha512Hex := sha512.Sum512([]byte(hunter2))
	h := bootDaemon(t, setup{
		config: `{"ignition":{"version":"3.4.0"},"storage":{"files":[
 {"path":"` + swapped + `","mode":420,"contents":{"source":"data:,public%0A"}},
 {"path":"` + layoutConf + `","mode":420,"contents":{"source":"data:,layout%0A"}},
 {"path":"` + secretToken + `","mode":384,"contents":{"source":"data:,` + hunter2 + `"}},
 {"path":"` + remoteToken + `","mode":384,"contents":{"source":"https://example.invalid/remote.token",
  "verification":{"hash":"sha512-` + hex.EncodeToString(sha512Hex[:]) + `"}}},
 {"path":"/etc/sentinel","mode":420,"contents":{"source":"data:,s%0A"}}]}}`,
		files: []file{
			{swapped, "public\n", 0o644},
			{"/var/lib/dm-layout/app.conf", "layout\n", 0o644},
			{secretToken, hunter2, 0o600},
			{remoteToken, hunter2, 0o600},
			{private + "/file", privateMarker + "\n", 0o644},
			sentinelFile,
		},
		commands: []string{
			"chmod 0700 " + private,
			"ln -s /var/lib/dm-layout /etc/layout",
		},
		busPolicy: true,
	})
	const clean = "No drift: watching 5 paths, 0 units"
	h.waitStatus(clean)
	if out, errOut, _ := h.run("stat", "-c", "%a %U", "/var/lib/drift-monitor", "/var/lib/drift-monitor/digest.key"); strings.TrimSpace(out) != "700 root\n600 root" {
		t.Errorf("the digest key: stat says %q (%s), want its directory 0700 and itself 0600, root's", out, strings.TrimSpace(errOut))
	}

	t.Run("a parent directory swapped for a symlink into root's directory", func(t *testing.T) {
		h := h.in(t)
		m := h.mark()
		h.sh(`mv "$1" "$1.orig" && ln -s "$2" "$1"`, swappedDir, private)
		defer func() {
			m := h.mark()
			h.sh(`rm "$1" && mv "$1.orig" "$1"`, swappedDir)
			h.MustRun(t, "systemctl", "reload", service)
			h.waitRecord(m, harness.MsgDriftResolved, map[string]string{"DRIFT_PATH": swapped})
			h.waitStatus(clean)
		}()
		// The swap is a full check away at most (moving a watched
		// directory's ancestor is another item's business).
		h.MustRun(t, "systemctl", "reload", service)
		// Whatever the daemon makes of it, once it has looked through the
		// link (a short "missing" may come first, between mv and ln)...
		h.WaitFor(t, recordTimeout, "the daemon to report "+swapped+" through the link", func() (bool, string) {
			st, err := h.status()
			return err == nil && strings.HasPrefix(st, "Drift: 1 path differs ("+swapped+": ") && !strings.Contains(st, "missing"), st
		})
		// ...nothing shows the file it found there,
		forbid := secrets(privateMarker + "\n")
		forbid[privateMarker] = "the marker behind the link"
		h.noneAnywhere(forbid)
		// and it is a type drift of the directory that is a link now.
		r, _ := h.waitRecord(m, harness.DriftDetected, map[string]string{"DRIFT_PATH": swapped, "DRIFT_KIND": "type"})
		if msg := r["MESSAGE"]; !strings.Contains(msg, `"`+swappedDir+`": want directory, got symbolic link`) {
			t.Errorf("type drift record MESSAGE = %q, want it to say %s: want directory, got symbolic link", msg, swappedDir)
		}
		h.waitStatus("Drift: 1 path differs (" + swapped + ": type)")
		out, _, code := h.run("drift-monitor", "check")
		if code != 1 || !strings.Contains(out, `type mismatch for file "`+swapped+`": "`+swappedDir+`": want directory, got symbolic link`) {
			t.Errorf("drift-monitor check: exit %d, want 1 and the type drift of %s:\n%s", code, swappedDir, out)
		}
	})

	t.Run("a directory only root may enter bind-mounted over a declared one", func(t *testing.T) {
		h := h.in(t)
		m := h.mark()
		h.sh(`mount --bind "$1" "$2"`, private, swappedDir)
		defer func() {
			m := h.mark()
			h.sh(`umount "$1"`, swappedDir)
			h.MustRun(t, "systemctl", "reload", service)
			h.waitRecord(m, harness.MsgDriftResolved, map[string]string{"DRIFT_PATH": swapped})
			h.waitStatus(clean)
		}()
		// No symlink, no inotify event: the path is where it was declared,
		// but what is there now only root may reach.
		h.MustRun(t, "systemctl", "reload", service)
		r, _ := h.waitRecord(m, harness.DriftDetected, map[string]string{"DRIFT_PATH": swapped, "DRIFT_KIND": "content"})
		if got := r["DRIFT_GOT"]; !strings.HasPrefix(got, fmt.Sprintf("%d bytes, hmac-sha256:", len(privateMarker)+1)) {
			t.Errorf("drift record DRIFT_GOT=%q, want the size and a keyed digest only", got)
		}
		forbid := secrets(privateMarker + "\n")
		forbid[privateMarker] = "the marker in the mounted directory"
		h.noneAnywhere(forbid)
	})

	t.Run("a symlink of root's into a directory anyone may enter is followed", func(t *testing.T) {
		h := h.in(t)
		m := h.mark()
		h.replace(layoutConf, "tampered\n", 0o644)
		r, _ := h.waitRecord(m, harness.DriftDetected, map[string]string{"DRIFT_PATH": layoutConf, "DRIFT_KIND": "content"})
		if msg := r["MESSAGE"]; !strings.Contains(msg, "\n-layout\n") || !strings.Contains(msg, "\n+tampered\n") {
			t.Errorf("drift record MESSAGE = %q, want a -want +got diff", msg)
		}
		m = h.mark()
		h.replace(layoutConf, "layout\n", 0o644)
		h.waitRecord(m, harness.MsgDriftResolved, map[string]string{"DRIFT_PATH": layoutConf, "DRIFT_KIND": "content"})
		h.waitStatus(clean)
	})

	t.Run("a tampered secret leaves no plain digest", func(t *testing.T) {
		h := h.in(t)
		keyed := regexp.MustCompile(`^7 bytes, hmac-sha256:[0-9a-f]{64}$`)
		for _, tampered := range []string{"hunter3", "correct horse battery staple"} {
			m := h.mark()
			h.replace(secretToken, tampered, 0o600)
			h.replace(remoteToken, tampered, 0o600)
			r, _ := h.waitRecord(m, harness.DriftDetected, map[string]string{"DRIFT_PATH": secretToken, "DRIFT_KIND": "content"})
			h.waitRecord(m, harness.DriftDetected, map[string]string{"DRIFT_PATH": remoteToken, "DRIFT_KIND": "content"})
			if got := r["DRIFT_WANT"]; !keyed.MatchString(got) {
				t.Errorf("secret drift record: DRIFT_WANT=%q, want the size and a keyed digest", got)
			}
			if got := r["DRIFT_GOT"]; !strings.Contains(got, "hmac-sha256:") {
				t.Errorf("secret drift record: DRIFT_GOT=%q, want the size and a keyed digest", got)
			}
			h.waitStatus("Drift: 2 paths differ (" + remoteToken + ": content; " + secretToken + ": content)")

			// check, run by root, keys with the daemon's key: the same digests.
			out, _, code := h.run("drift-monitor", "check")
			if code != 1 || !strings.Contains(out, "want: "+r["DRIFT_WANT"]) || !strings.Contains(out, "got:  "+r["DRIFT_GOT"]) {
				t.Errorf("drift-monitor check: exit %d, want 1 and the daemon's digests %q, %q:\n%s", code, r["DRIFT_WANT"], r["DRIFT_GOT"], out)
			}
			// nobody has no key (and cannot read the config or the file).
			out, errOut, _ := h.run(append(append([]string{}, nobody...), "drift-monitor", "check", "--format", "json")...)
			if strings.Contains(out+errOut, "hmac-sha256:") {
				t.Errorf("drift-monitor check as nobody prints a keyed digest:\n%s%s", out, errOut)
			}
			h.noneAnywhere(secrets(hunter2, tampered))

			m = h.mark()
			h.replace(secretToken, hunter2, 0o600)
			h.replace(remoteToken, hunter2, 0o600)
			h.waitRecord(m, harness.MsgDriftResolved, map[string]string{"DRIFT_PATH": secretToken, "DRIFT_KIND": "content"})
			h.waitRecord(m, harness.MsgDriftResolved, map[string]string{"DRIFT_PATH": remoteToken, "DRIFT_KIND": "content"})
			h.waitStatus(clean)
		}
		h.noneAnywhere(secrets(hunter2))
	})
}

// replace gives a file new content in one step, as an editor's save does:
// written beside it (from standard input, so that no command line in the
// journal holds the content) and renamed over it. A write in place would
// first show the daemon an empty file.
func (h *host) replace(p, content string, mode fs.FileMode) {
	h.t.Helper()
	tmp := path.Join(path.Dir(p), ".dm-replace.tmp")
	h.WriteFile(h.t, tmp, []byte(content), mode)
	h.sh(`mv -f "$1" "$2"`, tmp, p)
}

// secrets are what must show nowhere about each content: the content
// itself and the unkeyed digests anyone could compute and compare (SHA-256
// and SHA-512, in hex), each with what it is.
func secrets(contents ...string) map[string]string {
	m := map[string]string{}
	for _, c := range contents {
		a, b := sha256.Sum256([]byte(c)), sha512.Sum512([]byte(c))
		m[c] = fmt.Sprintf("the content %q", c)
		m[hex.EncodeToString(a[:])] = fmt.Sprintf("the SHA-256 of %q", c)
		m[hex.EncodeToString(b[:])] = fmt.Sprintf("the SHA-512 of %q", c)
	}
	return m
}

// noneAnywhere asserts that none of the forbidden strings (see secrets) is
// in any field of any record of the whole journal, in `drift-monitor check`
// (text and JSON), in the bus properties of the daemon or in its status
// line (as systemd has it).
func (h *host) noneAnywhere(forbidden map[string]string) {
	h.t.Helper()
	h.MustRun(h.t, "journalctl", "--sync")
	outputs := map[string]string{
		"journalctl -o json": h.MustRun(h.t, "journalctl", "-o", "json", "--all", "--no-pager", "-q"),
	}
	for _, format := range []string{"text", "json"} {
		out, errOut, _ := h.run("drift-monitor", "check", "--format", format)
		outputs["drift-monitor check --format "+format] = out + errOut
	}
	if out := outputs["drift-monitor check --format json"]; !json.Valid([]byte(out)) {
		h.t.Errorf("drift-monitor check --format json is not JSON:\n%s", out)
	}
	props := []string{"State", "StatusText", "Drift", "Inhibitors", "LastCheck", "WatchedPaths", "Units", "Version"}
	outputs["busctl get-property"] = h.MustRun(h.t, append([]string{"busctl", "get-property", busName, string(busPath), busIface}, props...)...)
	outputs["StatusText"] = h.prop("StatusText")
	outputs["systemctl status"] = h.MustRun(h.t, "systemctl", "status", "--no-pager", "--full", "--lines=0", service)
	for name, out := range outputs {
		// Hex digests in either case.
		lower := strings.ToLower(out)
		for f, what := range forbidden {
			if strings.Contains(out, f) || strings.Contains(lower, strings.ToLower(f)) {
				h.t.Errorf("%s holds %s (%s)", name, what, f)
			}
		}
	}
}
