package desired

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/drift-monitor/drift-monitor/test/harness"
	"sigs.k8s.io/yaml"

	"github.com/drift-monitor/drift-monitor/internal/desired/derive"
	"github.com/drift-monitor/drift-monitor/internal/desired/merge"
	"github.com/drift-monitor/drift-monitor/internal/desired/parsed"
	"github.com/drift-monitor/drift-monitor/internal/model"
)

// largestRealMachineConfig is the largest YAML MachineConfig of the real
// configs (testdata/real-configs, see its SOURCES.md), decoded.
func largestRealMachineConfig(t testing.TB) map[string]any {
	t.Helper()
	ents, err := os.ReadDir(realConfigsCopy)
	if err != nil {
		t.Fatal(err)
	}
	var largest string
	var size int64
	for _, e := range ents {
		if ext := filepath.Ext(e.Name()); ext != ".yaml" && ext != ".yml" {
			continue
		}
		if info, err := e.Info(); err == nil && info.Size() > size {
			largest, size = filepath.Join(realConfigsCopy, e.Name()), info.Size()
		}
	}
	raw, err := os.ReadFile(largest)
	if err != nil {
		t.Fatal(err)
	}
	var mc map[string]any
	if err := yaml.Unmarshal(raw, &mc); err != nil {
		t.Fatal(err)
	}
	return mc
}

// timesOver returns the Ignition config cfg (decoded JSON) with its files
// and units k times over, the copies under other names: an input k times
// the size of cfg, of the same shape.
func timesOver(t testing.TB, cfg map[string]any, k int) map[string]any {
	t.Helper()
	var out map[string]any
	deepCopy(t, cfg, &out)
	storage, _ := out["storage"].(map[string]any)
	systemd, _ := out["systemd"].(map[string]any)
	if storage == nil || systemd == nil {
		t.Fatal("a config without storage or systemd")
	}
	var files, units []any
	for i := range k {
		for _, f := range cfg["storage"].(map[string]any)["files"].([]any) {
			var c map[string]any
			deepCopy(t, f, &c)
			c["path"] = fmt.Sprintf("%s.%d", c["path"], i)
			files = append(files, c)
		}
		for _, u := range cfg["systemd"].(map[string]any)["units"].([]any) {
			var c map[string]any
			deepCopy(t, u, &c)
			c["name"] = fmt.Sprintf("k%d-%s", i, c["name"])
			units = append(units, c)
		}
	}
	storage["files"], systemd["units"] = files, units
	return out
}

func deepCopy(t testing.TB, from any, to any) {
	t.Helper()
	b, err := json.Marshal(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, to); err != nil {
		t.Fatal(err)
	}
}

// loadScales holds the load of a fragment (Parse, Merge, Derive) of
// inputs[1] and of inputs[10], one ten times the other's files and units,
// to linear growth, and checks that every file and unit of each is an
// entry.
func loadScales(t *testing.T, what, name string, inputs map[int][]byte) {
	t.Helper()
	count := func(raw []byte) (files, units int) {
		frag, err := Parse(name, raw)
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := merge.All([]parsed.Fragment{frag})
		if err != nil {
			t.Fatal(err)
		}
		st, err := derive.Derive(cfg, emptyAccounts{})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range st.Entries {
			switch e.Kind {
			case model.KindFile:
				files++
			case model.KindUnit, model.KindEnablement:
				units++
			}
		}
		return files, units
	}
	f1, u1 := count(inputs[1])
	if f1 == 0 || u1 == 0 {
		t.Fatalf("%s: %d files and %d units: the real config declares both", what, f1, u1)
	}
	harness.Linear(t, what, func(scale int) {
		if f, u := count(inputs[scale]); f != scale*f1 || u != scale*u1 {
			t.Fatalf("%s, %d times over: %d files of %d, %d units of %d", what, scale, f, scale*f1, u, scale*u1)
		}
	})
}

// TestMachineConfigYAMLScales: a YAML MachineConfig loads in time and
// memory linear in its size, held at ten times the largest real one (its
// files and units ten times over), with every file and unit.
func TestMachineConfigYAMLScales(t *testing.T) {
	mc := largestRealMachineConfig(t)
	inputs := map[int][]byte{}
	for _, k := range []int{1, 10} {
		var m map[string]any
		deepCopy(t, mc, &m)
		m["spec"].(map[string]any)["config"] = timesOver(t, mc["spec"].(map[string]any)["config"].(map[string]any), k)
		raw, err := yaml.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		inputs[k] = raw
	}
	loadScales(t, "loading a YAML MachineConfig", "/etc/drift-monitor/desired.d/50-mc.yaml", inputs)
}

// realButane is the Ignition config of the largest real MachineConfig
// written as the Butane config (fcos 1.4.0, for Ignition's spec 3.3.0)
// that declares the same: Butane's fields are Ignition's.
func realButane(t testing.TB, k int) []byte {
	t.Helper()
	cfg := timesOver(t, largestRealMachineConfig(t)["spec"].(map[string]any)["config"].(map[string]any), k)
	delete(cfg, "ignition")
	cfg["variant"], cfg["version"] = "fcos", "1.4.0"
	raw, err := yaml.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// TestButaneScales: a Butane config translates and loads in time and
// memory linear in its size, held at ten times the largest real config
// (as Butane), with every file and unit.
func TestButaneScales(t *testing.T) {
	loadScales(t, "loading a Butane config", "/etc/drift-monitor/desired.d/50-config.bu",
		map[int][]byte{1: realButane(t, 1), 10: realButane(t, 10)})
}

// FuzzParseButane is FuzzParse for a fragment named as a Butane config,
// seeded with one of each variant and the largest real config as Butane:
// whatever it holds, a usable fragment or an error that names the file.
func FuzzParseButane(f *testing.F) {
	for _, s := range []string{
		"variant: fcos\nversion: 1.5.0\nstorage:\n  files:\n    - path: /etc/motd\n      mode: 0644\n      contents:\n        inline: hello\n",
		"variant: fcos\nversion: 1.4.0\nsystemd:\n  units:\n    - name: a.service\n      enabled: true\n      contents: |\n        [Service]\n        ExecStart=/bin/true\n        [Install]\n        WantedBy=multi-user.target\n",
		"variant: openshift\nversion: 4.14.0\nmetadata:\n  name: 99-worker-x\n  labels:\n    machineconfiguration.openshift.io/role: worker\nopenshift:\n  kernel_arguments: [nosmt]\nstorage:\n  files:\n    - path: /etc/x\n      contents:\n        inline: x\n",
		"variant: flatcar\nversion: 1.1.0\nstorage:\n  links:\n    - path: /etc/l\n      target: /etc/motd\n",
		"variant: r4e\nversion: 1.1.0\npasswd:\n  users:\n    - name: core\n      ssh_authorized_keys: [ssh-ed25519 AAAA]\n",
		"variant: fiot\nversion: 1.0.0\nstorage:\n  directories:\n    - path: /var/x\n      mode: 0700\n",
		"variant: fcos\nversion: 1.5.0\nstorage:\n  files:\n    - path: /etc/a\n      contents:\n        local: a\n",
		"variant: fcos\nversion: 9.9.0\n",
	} {
		f.Add([]byte(s))
	}
	f.Add(realButane(f, 1))
	f.Fuzz(func(t *testing.T, raw []byte) {
		checkParse(t, "/etc/drift-monitor/desired.d/50-fuzz.bu", raw)
	})
}

// TestYAMLAliases: a YAML config whose aliases would expand to ten
// billion nodes (ten levels of ten) is refused, or read with its aliases
// unexpanded, at the cost of a small config, whether it is a MachineConfig
// (sigs.k8s.io/yaml, whose decoder refuses excessive aliasing) or Butane
// (yaml.v3, which decodes into Butane's types node by node).
func TestYAMLAliases(t *testing.T) {
	var b strings.Builder
	b.WriteString("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n")
	for i := 1; i < 10; i++ {
		fmt.Fprintf(&b, "a%d: &a%d [%s]\n", i, i, strings.TrimSuffix(strings.Repeat(fmt.Sprintf("*a%d, ", i-1), 10), ", "))
	}
	bomb := b.String()
	for name, doc := range map[string]string{
		"50-mc.yaml":     "apiVersion: machineconfiguration.openshift.io/v1\nkind: MachineConfig\nmetadata:\n  name: x\n" + bomb + "spec:\n  config:\n    ignition:\n      version: 3.2.0\n",
		"50-butane.yaml": "variant: fcos\nversion: 1.5.0\n" + bomb,
		"50-keys.bu":     "variant: fcos\nversion: 1.5.0\n" + bomb,
		"50-karg.bu":     "variant: fcos\nversion: 1.5.0\n" + bomb + "kernel_arguments:\n  should_exist: *a9\n",
		"50-files.bu":    "variant: fcos\nversion: 1.5.0\n" + bomb + "storage:\n  files: *a9\n",
	} {
		t.Run(name, func(t *testing.T) {
			file := "/etc/drift-monitor/desired.d/" + name
			var err error
			c := harness.Measure(func() { _, err = Parse(file, []byte(doc)) })
			if err != nil && !strings.HasPrefix(err.Error(), file+":") {
				t.Errorf("the error does not name the file: %v", err)
			}
			if c.Bytes > 64<<20 {
				t.Errorf("%d bytes allocated for a config of %d (%v)", c.Bytes, len(doc), err)
			}
		})
	}
}
