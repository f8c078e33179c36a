package conformance_test

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/drift-monitor/drift-monitor/test/harness"
)

// peerSuites holds other projects' test cases as data (its README says
// what each file is): DRIFT_MONITOR_PEER_SUITES, or the project's shared
// directory on its development machines.
func peerSuites() string {
	if d := os.Getenv("DRIFT_MONITOR_PEER_SUITES"); d != "" {
		return d
	}
	return "/work/shared/peer-suites"
}

// blackboxCase is what TestIgnitionPasswdCases reads of a case of
// Ignition's blackbox suite.
type blackboxCase struct {
	Name   string   `json:"name"`
	Kind   string   `json:"kind"`
	Status string   `json:"status"`
	Config string   `json:"config"`
	Env    []string `json:"env"`
	In     []struct {
		Path     string `json:"path"`
		Type     string `json:"type"`
		Contents string `json:"contents"`
		Mode     int    `json:"mode"`
	} `json:"in"`
}

// ignitionFails lists the cases the real Ignition fails on this machine's
// shadow-utils (Debian 12's 4.13), with what its log says: there is no
// root of theirs to check.
var ignitionFails = map[string]string{
	// 2.14's EnsureGroup only ever runs groupadd (2.27 groupmods an
	// existing group): the case that fixed it.
	"ignition-blackbox.json groups.ensure.idempotent": "groupadd: group 'existinggroup' already exists",
	// The case's jenkins has home "/" and no mail spool: userdel --remove
	// exits 12 here.
	"ignition-blackbox.json users.delete":      "userdel: / not owned by jenkins, not removing",
	"ignition-blackbox-2.27.json users.delete": "userdel: / not owned by jenkins, not removing",
	// The case's passwd keeps jenkins, whose primary group jenkins is.
	"ignition-blackbox.json groups.delete":      "groupdel: cannot remove the primary group of user 'jenkins'",
	"ignition-blackbox-2.27.json groups.delete": "groupdel: cannot remove the primary group of user 'jenkins'",
}

// TestIgnitionPasswdCases: the user and group cases of Ignition's own
// blackbox suite (tests/positive/passwd/users.go), run by the Ignition
// each suite file is for (2.14 for the suite at spec 3.3.0, the pinned
// 2.27 for the one at 3.6.0) on a root holding the case's account files,
// read as clean: an account entry that reports what Ignition wrote is a
// false drift of ours, never the case's.
func TestIgnitionPasswdCases(t *testing.T) {
	requireTier(t)
	for _, suite := range []struct {
		file    string
		pinned  bool
		minimum int
	}{{"ignition-blackbox.json", false, 5}, {"ignition-blackbox-2.27.json", true, 5}} {
		t.Run(suite.file, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join(peerSuites(), suite.file))
			if errors.Is(err, fs.ErrNotExist) {
				// Data, not a tool the tier needs: a machine without it
				// runs the rest of the tier.
				t.Skipf("the peer suites are not on this machine (set DRIFT_MONITOR_PEER_SUITES): %v", err)
			}
			if err != nil {
				t.Fatal(err)
			}
			var doc struct {
				Scenarios []blackboxCase `json:"scenarios"`
			}
			if err := json.Unmarshal(data, &doc); err != nil {
				t.Fatalf("%s: %v", suite.file, err)
			}
			prep := prepare{}
			if suite.pinned {
				prep.ignition = harness.IgnitionBinary(t, harness.PinnedIgnition(t))
			}
			ran := 0
			for _, c := range doc.Scenarios {
				if c.Kind != "positive" || c.Status != "selected" || !strings.HasPrefix(c.Name, "users.") && !strings.HasPrefix(c.Name, "groups.") {
					continue
				}
				ran++
				t.Run(c.Name, func(t *testing.T) {
					p := prep
					p.env = c.Env
					p.before = func(t *testing.T, root string) {
						for _, n := range c.In {
							if n.Type != "file" {
								t.Fatalf("in-node %s of type %q: teach the runner", n.Path, n.Type)
							}
							mode := os.FileMode(n.Mode)
							if mode == 0 {
								mode = 0o644 // the suite's default for a file it writes
							}
							mustMkdir(t, filepath.Dir(at(root, n.Path)), 0o755)
							mustWrite(t, at(root, n.Path), n.Contents, mode)
						}
						for _, e := range c.Env {
							if e == "IGNITION_WRITE_AUTHORIZED_KEYS_FRAGMENT=false" {
								// The layout drift-monitor reads off the host (see rhel8Keys).
								mustMkdir(t, at(root, "/usr/lib"), 0o755)
								mustWrite(t, at(root, "/usr/lib/os-release"), "ID=rhel\nVERSION_ID=8.6\n", 0o644)
							}
						}
					}
					root, log, err := runIgnition(t, []byte(c.Config), p)
					why, known := ignitionFails[suite.file+" "+c.Name]
					switch {
					case known && err == nil:
						t.Fatalf("Ignition now applies %s here: take it off ignitionFails and check it", c.Name)
					case known && !strings.Contains(log, why):
						t.Fatalf("Ignition failed otherwise than known (%q):\n%s", why, log)
					case known:
						t.Logf("Ignition fails this case here, as known: %s", why)
						return
					case err != nil:
						t.Fatalf("%v\nIgnition's log:\n%s", err, log)
					}
					cfg := filepath.Join(t.TempDir(), "case.ign")
					mustWrite(t, cfg, c.Config, 0o600)
					exit, rep := check(t, root, cfg)
					wantClean(t, root, exit, rep)
					kinds := map[string]int{}
					for _, n := range rep.Notices {
						kinds[n.Kind]++
					}
					t.Logf("checked %d entries; notices %v", rep.Checked, kinds)
				})
			}
			if ran < suite.minimum {
				t.Errorf("%s: ran %d user and group cases, want at least %d (has the suite changed shape?)", suite.file, ran, suite.minimum)
			}
		})
	}
}
