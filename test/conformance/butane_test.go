package conformance_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/drift-monitor/drift-monitor/test/harness"
)

// Butane's documented examples (butane/docs/examples.md of the Ignition
// module go.mod pins), as a new user would run them: each applied by the
// real Ignition of that version — which takes Butane YAML itself (v2.27.0
// config/config.go, Parse) — into a fresh root, then checked with the same
// file as the desired state, a fragment like any other. It must check
// clean; every answer other than that is listed, with why, in
// testdata/butane-examples.json.
//
// An example that embeds local files (local:, trees, *_local) cannot be
// translated without a files directory, neither by Ignition at boot nor by
// drift-monitor, which refuses it; it is translated instead as its text
// says, with `butane --files-dir` (placeholder files of the names it
// gives), and the .ign is what Ignition applies and check reads.

// butaneExample is one ```yaml block of examples.md, after a
// `<!-- butane-config -->` marker.
type butaneExample struct {
	index   int
	section string
	yaml    string
}

func butaneExamples(t *testing.T, source string) []butaneExample {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(source, "butane/docs/examples.md"))
	if err != nil {
		t.Fatal(err)
	}
	var out []butaneExample
	section := ""
	lines := strings.Split(string(b), "\n")
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if strings.HasPrefix(l, "#") {
			section = strings.TrimSpace(strings.TrimLeft(l, "#"))
		}
		if l != "```yaml" || i == 0 || !slices.Contains([]string{"<!-- butane-config -->"}, strings.TrimSpace(lines[i-1])) {
			continue
		}
		var body strings.Builder
		for i++; i < len(lines) && lines[i] != "```"; i++ {
			body.WriteString(lines[i] + "\n")
		}
		out = append(out, butaneExample{index: len(out), section: section, yaml: body.String()})
	}
	return out
}

type butaneExpectation struct {
	Index   int    `json:"index"`
	Section string `json:"section"`
	// Want is "ignition fails" (Ignition does not apply it here), "needs
	// the network", or "refused" or "drift" (check's answer otherwise than
	// clean).
	Want string `json:"want"`
	Why  string `json:"why"`
}

// localRefs finds what an example reads from the files directory.
var localRefs = regexp.MustCompile(`(?m)(?:^\s*-?\s*(?:[a-z_]+_)?local:[ \t]*(\S+))|(?:_local:[ \t]*\n((?:\s+-\s*\S+\n)+))`)

// filesDir writes placeholders for the local files an example names: a
// valid config for *.ign, a key for *.pub, the tree examples.md describes
// for a tree, a line of text otherwise.
func filesDir(t *testing.T, example string) string {
	t.Helper()
	dir := t.TempDir()
	var names []string
	for _, m := range localRefs.FindAllStringSubmatch(example, -1) {
		if m[1] != "" {
			names = append(names, m[1])
		}
		for _, l := range strings.Split(m[2], "\n") {
			if n := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(l), "-")); n != "" {
				names = append(names, n)
			}
		}
	}
	for _, n := range names {
		p := filepath.Join(dir, n)
		mustMkdir(t, filepath.Dir(p), 0o755)
		switch {
		case strings.Contains(example, "trees:") && strings.Contains(example, "local: "+n):
			// examples.md's own description of the tree.
			mustMkdir(t, filepath.Join(p, "directory"), 0o755)
			mustWrite(t, filepath.Join(p, "file"), "file\n", 0o644)
			mustWrite(t, filepath.Join(p, "overridden-file"), "overridden\n", 0o644)
			mustWrite(t, filepath.Join(p, "directory/file"), "directory/file\n", 0o644)
			if err := os.Symlink("../file", filepath.Join(p, "directory/symlink")); err != nil {
				t.Fatal(err)
			}
		case strings.HasSuffix(n, ".ign"):
			mustWrite(t, p, `{"ignition":{"version":"3.5.0"},"storage":{"files":[{"path":"/etc/merged-from-local","contents":{"source":"data:,merged"}}]}}`, 0o644)
		case strings.HasSuffix(n, ".pub"):
			mustWrite(t, p, "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIButaneExample"+strings.TrimSuffix(filepath.Base(n), ".pub")+" example@butane\n", 0o644)
		default:
			mustWrite(t, p, "placeholder for "+n+"\n", 0o644)
		}
	}
	return dir
}

// TestButaneExamples: see above.
func TestButaneExamples(t *testing.T) {
	requireTier(t)
	version := harness.PinnedIgnition(t)
	examples := butaneExamples(t, harness.IgnitionSource(t, version))
	if len(examples) < 20 {
		t.Fatalf("examples.md of %s yields %d Butane examples; the extraction is broken", version, len(examples))
	}
	b, err := os.ReadFile("testdata/butane-examples.json")
	if err != nil {
		t.Fatal(err)
	}
	var expect []butaneExpectation
	if err := json.Unmarshal(b, &expect); err != nil {
		t.Fatal(err)
	}
	butane := harness.ButaneBinary(t, version)
	var mu sync.Mutex
	clean, listed := 0, 0
	t.Cleanup(func() {
		t.Logf("Butane's examples (%s): %d of %d applied by Ignition %s and checked clean; %d answer as butane-examples.json says",
			version, clean, len(examples), version, listed)
	})
	for _, ex := range examples {
		t.Run(strings.ReplaceAll(ex.section, " ", "_")+"#"+itoa(ex.index), func(t *testing.T) {
			t.Parallel()
			var x *butaneExpectation
			for i := range expect {
				if expect[i].Index == ex.index {
					x = &expect[i]
					if x.Section != ex.section {
						t.Fatalf("butane-examples.json: example %d is now %q, not %q: update it", ex.index, ex.section, x.Section)
					}
				}
			}
			got, detail := runButaneExample(t, butane, ex)
			want := "clean"
			if x != nil {
				want = x.Want
			}
			if got != want {
				why := ""
				if x != nil {
					why = "\nbutane-examples.json: " + x.Why
				}
				t.Errorf("example %d (%s): %s, want %s%s\n%s\nexample:\n%s", ex.index, ex.section, got, want, why, detail, ex.yaml)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			if x == nil {
				clean++
			} else {
				listed++
			}
		})
	}
}

// imageGroups adds to the root the groups a Fedora CoreOS image has that
// the examples name (wheel, plugdev) and the host's group file may lack.
func imageGroups(t *testing.T, root string) {
	t.Helper()
	p := filepath.Join(root, "etc/group")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	add := ""
	for i, g := range []string{"wheel", "plugdev"} {
		if !regexp.MustCompile(`(?m)^` + g + `:`).Match(b) {
			add += fmt.Sprintf("%s:x:%d:\n", g, 1900+i)
		}
	}
	mustWrite(t, p, string(b)+add, 0o644)
}

// runButaneExample applies ex with the pinned Ignition and checks the root
// against it; it answers "clean", "drift", "refused" or "ignition fails".
func runButaneExample(t *testing.T, butane string, ex butaneExample) (string, string) {
	t.Helper()
	desired := filepath.Join(t.TempDir(), "example.bu")
	mustWrite(t, desired, ex.yaml, 0o600)
	cfg := []byte(ex.yaml)
	if localRefs.MatchString(ex.yaml) {
		ctx, cancel := context.WithTimeout(t.Context(), checkTimeout)
		defer cancel()
		cmd := exec.CommandContext(ctx, butane, "--strict", "--files-dir", filesDir(t, ex.yaml), desired)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Run(); err != nil {
			t.Fatalf("butane --files-dir: %v\n%s", err, errb.String())
		}
		cfg = out.Bytes()
		desired = filepath.Join(filepath.Dir(desired), "example.ign")
		mustWrite(t, desired, string(cfg), 0o600)
	}
	root, log, err := runIgnition(t, cfg, prepare{offline: true, before: imageGroups})
	if errors.Is(err, errNeedsNetwork) {
		return "needs the network", log
	}
	if err != nil {
		return "ignition fails", log
	}
	cache, err := os.ReadFile(filepath.Join(filepath.Dir(root), "run", "cache.json"))
	if err != nil {
		t.Fatal(err)
	}
	if units := presetUnits(t, root, cache); len(units) > 0 {
		systemctl(t, root, append([]string{"preset"}, units...)...)
	}
	got, detail := peerCheck(t, root, desired)
	if got == "clean" {
		mutateDeclaredFiles(t, root, desired, cache)
	}
	return got, detail + "\nIgnition's log:\n" + log
}

// mutateDeclaredFiles removes every file Ignition wrote for the config
// (its cache's storage.files, and the files of its units with contents)
// and asserts that check, against desired,
// reports each one missing.
func mutateDeclaredFiles(t *testing.T, root, desired string, cache []byte) {
	t.Helper()
	var c struct {
		Storage struct {
			Files []struct{ Path string } `json:"files"`
		} `json:"storage"`
		Systemd struct {
			Units []struct {
				Name     string  `json:"name"`
				Contents *string `json:"contents"`
			} `json:"units"`
		} `json:"systemd"`
	}
	if err := json.Unmarshal(cache, &c); err != nil {
		t.Fatal(err)
	}
	paths := []string{}
	for _, f := range c.Storage.Files {
		paths = append(paths, f.Path)
	}
	for _, u := range c.Systemd.Units {
		if u.Contents != nil {
			paths = append(paths, unitDir+"/"+u.Name)
		}
	}
	var removed []string
	for _, p := range paths {
		if _, err := os.Lstat(filepath.Join(root, p)); err == nil {
			remove(t, root, p)
			removed = append(removed, p)
		}
	}
	if len(removed) == 0 {
		return
	}
	r := runBinary(t, "check", "--root", root, "--config", desired, "--format", "json", "--no-cache")
	var rep harness.Report
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || r.exit != 1 {
		t.Fatalf("removed %v: exit %d, want 1 with a report\n%s%s", removed, r.exit, r.stdout, r.stderr)
	}
	for _, p := range removed {
		if !slices.ContainsFunc(rep.Drift, func(it harness.Item) bool { return it.Path == p && it.Kind == "missing" }) {
			t.Errorf("removed %s, not reported missing:\n%s", p, pretty(rep))
		}
	}
	t.Logf("removed %d declared files: each reported missing", len(removed))
}

func itoa(i int) string { return fmt.Sprintf("%02d", i) }
