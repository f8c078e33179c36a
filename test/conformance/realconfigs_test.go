package conformance_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/drift-monitor/drift-monitor/test/harness"
	"sigs.k8s.io/yaml"
)

// realConfigs lists the real MachineConfigs kept in the repository (a
// verbatim copy of ../shared/real-configs; internal/desired's
// TestRealConfigs keeps the two equal).
func realConfigs(t *testing.T) []string {
	t.Helper()
	dir := harness.Repo(t, "internal/desired/testdata/real-configs")
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
	root, log, err := runIgnition(t, cfgJSON, prepare{})
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
	if names := presetUnits(t, root, cfgJSON); len(names) > 0 {
		systemctl(t, root, append([]string{"preset"}, names...)...)
	}
	return root
}

// mcdConfig is a MachineConfig with what the MCD writes and Ignition's
// shouldExist cannot say: repeated kernel arguments, an empty drop-in, and
// ids of -1.
const mcdSpecConfig = `{"ignition":{"version":"3.2.0"},
 "storage":{"files":[{"path":"/etc/mcd/unowned.conf","mode":420,"user":{"id":-1},"group":{"id":-1},
   "contents":{"source":"data:,as%20created%0A"}}]},
 "systemd":{"units":[{"name":"crio.service","dropins":[{"name":"10-mco-default-madv.conf","contents":""},
   {"name":"20-nice.conf","contents":"[Service]\nNice=5\n"}]}]}}`

const mcdKargs = `["hugepagesz=1G hugepages=4 hugepagesz=2M hugepages=4","y=0","z=4","y=1","z=4"]`

// TestMachineConfigAsTheMCDWrites: the MCD's rules hold on a root Ignition
// wrote from a MachineConfig, for its YAML-less JSON form and for the
// currentconfig the MCD keeps (no kind, no apiVersion).
func TestMachineConfigAsTheMCDWrites(t *testing.T) {
	requireTier(t)
	forms := map[string]string{
		"MachineConfig": `{"apiVersion":"machineconfiguration.openshift.io/v1","kind":"MachineConfig","metadata":{"name":"99-mcd"},` +
			`"spec":{"config":` + mcdSpecConfig + `,"kernelArguments":` + mcdKargs + `}}`,
		"currentconfig": `{"metadata":{"name":"rendered-worker-0"},"spec":{"config":` + mcdSpecConfig +
			`,"kernelArguments":` + mcdKargs + `,"osImageURL":""},"status":{}}`,
	}
	tests := []struct {
		name   string
		mutate func(t *testing.T, root string)
		want   []key
	}{
		{name: "empty drop-in deleted, as the MCD does",
			mutate: func(t *testing.T, r string) { remove(t, r, unitDir+"/crio.service.d/10-mco-default-madv.conf") }},
		{name: "empty drop-in left empty, as Ignition writes it"},
		{name: "the -1 file's owner changed: none is desired",
			mutate: func(t *testing.T, r string) { chown(t, r, "/etc/mcd/unowned.conf", 1000, 1000) }},
		{name: "the empty drop-in gained content",
			mutate: func(t *testing.T, r string) {
				rewrite(t, r, unitDir+"/crio.service.d/10-mco-default-madv.conf", "[Service]\nNice=-5\n")
			},
			want: []key{unitDrift("content", "dropin", "crio.service", unitDir+"/crio.service.d/10-mco-default-madv.conf")}},
	}
	for form, doc := range forms {
		for _, tt := range tests {
			t.Run(form+"/"+tt.name, func(t *testing.T) {
				root := applyIgnition(t, []byte(mcdSpecConfig), prepare{})
				if tt.mutate != nil {
					tt.mutate(t, root)
				}
				name := "99-mcd.json"
				if form == "currentconfig" {
					name = "currentconfig"
				}
				cfg := filepath.Join(filepath.Dir(root), name)
				mustWrite(t, cfg, doc, 0o600)
				exit, rep := check(t, root, cfg)
				if len(tt.want) == 0 {
					wantClean(t, root, exit, rep)
				} else {
					wantDrift(t, root, exit, rep, tt.want)
				}
				var args []string
				for _, n := range rep.Notices {
					if n.Entry == "kernel-argument" {
						args = append(args, n.Message)
					}
				}
				if len(args) != 6 {
					t.Errorf("%d kernel-argument notices, want one per distinct argument (6): %v", len(args), args)
				}
			})
		}
	}
}

// TestNegativeIDInIgnitionConfig: outside a MachineConfig a negative id is
// a mistake, refused with exit 2 and the file named.
func TestNegativeIDInIgnitionConfig(t *testing.T) {
	requireTier(t)
	cfg := filepath.Join(t.TempDir(), "10-negative.ign")
	mustWrite(t, cfg, `{"ignition":{"version":"3.3.0"},"storage":{"files":[{"path":"/etc/x","user":{"id":-1}}]}}`, 0o600)
	r := runBinary(t, "check", "--root", t.TempDir(), "--config", cfg)
	if r.exit != 2 || !strings.Contains(r.stderr, cfg) || !strings.Contains(r.stderr, "user id -1 is negative") {
		t.Errorf("exit %d, stderr %q: want exit 2 naming %s and the negative id", r.exit, r.stderr, cfg)
	}
}
