package conformance_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// realConfigs lists the real MachineConfigs kept in the repository (a
// verbatim copy of ../shared/real-configs; internal/desired's
// TestRealConfigs keeps the two equal).
func realConfigs(t *testing.T) []string {
	t.Helper()
	mod, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(mod, "internal/desired/testdata/real-configs")
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, e := range ents {
		if ext := filepath.Ext(e.Name()); ext == ".json" || ext == ".yaml" {
			files = append(files, filepath.Join(dir, e.Name()))
		}
	}
	if len(files) < 5 {
		t.Fatalf("%s holds %d configs, want the 5 of its SOURCES.md", dir, len(files))
	}
	return files
}

// TestRealMachineConfigs: every real config loads (check exits 0 or 1, never
// 2, which check asserts), and each MachineConfig checks clean on a root
// written from it: by the real Ignition where 2.14 can write its spec.config
// (3.2.0), then as the MCD leaves it (empty drop-ins deleted). A spec 2.x
// config, which no Ignition 2.x writes, is checked on an empty root: it must
// say what it does not check.
func TestRealMachineConfigs(t *testing.T) {
	requireTier(t)
	for _, f := range realConfigs(t) {
		t.Run(filepath.Base(f), func(t *testing.T) {
			raw, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if strings.HasSuffix(f, ".yaml") {
				if raw, err = yaml.YAMLToJSON(raw); err != nil {
					t.Fatal(err)
				}
			}
			var mc struct {
				Spec struct {
					Config json.RawMessage `json:"config"`
				} `json:"spec"`
			}
			if err := json.Unmarshal(raw, &mc); err != nil {
				t.Fatal(err)
			}
			var spec struct {
				Ignition struct{ Version string } `json:"ignition"`
				Systemd  struct {
					Units []mcUnit `json:"units"`
				} `json:"systemd"`
			}
			if err := json.Unmarshal(mc.Spec.Config, &spec); err != nil {
				t.Fatal(err)
			}
			var root string
			if strings.HasPrefix(spec.Ignition.Version, "2.") {
				root = t.TempDir()
			} else {
				root = applyOnImage(t, mc.Spec.Config, spec.Systemd.Units)
				deleted := 0
				for _, u := range spec.Systemd.Units {
					for _, d := range u.Dropins {
						if d.Contents != nil && *d.Contents == "" {
							remove(t, root, unitDir+"/"+u.Name+".d/"+d.Name)
							deleted++
						}
					}
				}
				t.Logf("spec %s written by Ignition; %d empty drop-ins deleted as the MCD does", spec.Ignition.Version, deleted)
			}
			exit, rep := check(t, root, f)
			wantClean(t, root, exit, rep)
			if strings.HasPrefix(spec.Ignition.Version, "2.") {
				var said bool
				for _, n := range rep.Notices {
					said = said || (n.Entry == "config" && strings.Contains(n.Message, "spec 2.2.0"))
				}
				if !said {
					t.Errorf("no notice says spec.config (2.x) is not checked: %v", keys(rep.Notices))
				}
			}
			t.Logf("checked %d entries, %d notices", rep.Checked, len(rep.Notices))
		})
	}
}

type mcUnit struct {
	Name     string  `json:"name"`
	Contents *string `json:"contents"`
	Dropins  []struct {
		Name     string  `json:"name"`
		Contents *string `json:"contents"`
	} `json:"dropins"`
}

// applyOnImage is applyIgnition on a root that ships, as an RHCOS image
// does, the units a rendered config enables without declaring their
// contents (openvswitch.service, ovsdb-server.service): Ignition writes only
// a preset line for them, and preset needs the unit file.
func applyOnImage(t *testing.T, cfgJSON []byte, units []mcUnit) string {
	t.Helper()
	root, log, err := runIgnition(t, cfgJSON)
	if err != nil {
		t.Fatalf("%v\nIgnition's log:\n%s", err, log)
	}
	for _, u := range units {
		if u.Contents != nil {
			continue
		}
		p := filepath.Join(root, "usr/lib/systemd/system", u.Name)
		mustMkdir(t, filepath.Dir(p), 0o755)
		mustWrite(t, p, "[Unit]\nDescription=shipped by the image\n\n[Service]\nExecStart=/bin/true\n\n[Install]\nWantedBy=multi-user.target\n", 0o644)
	}
	if names := presetUnits(t, cfgJSON); len(names) > 0 {
		systemctl(t, root, append([]string{"preset"}, names...)...)
	}
	return root
}
