package desired

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/drift-monitor/drift-monitor/internal/desired/configerr"
	"github.com/drift-monitor/drift-monitor/internal/desired/format"
	"github.com/drift-monitor/drift-monitor/internal/desired/machineconfig"
	"github.com/drift-monitor/drift-monitor/internal/desired/parsed"
	"github.com/drift-monitor/drift-monitor/internal/model"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"sigs.k8s.io/yaml"

	types "github.com/drift-monitor/drift-monitor/internal/ignspec"
)

// mcSeeds are MachineConfigs of every shape the fast path (machineconfig/fast.go) must
// either read as encoding/json does or leave to it, with the real ones
// (quickSeeds' real-*) and the fuzz corpus.
func mcSeeds(t testing.TB) map[string][]byte {
	seeds := map[string][]byte{}
	for name, raw := range quickSeeds(t) {
		if strings.HasPrefix(name, "real-") || strings.HasPrefix(name, "corpus-") {
			seeds[name] = raw
		}
	}
	const cfg = `{"ignition":{"version":"3.2.0"},"storage":{"files":[{"path":"/etc/a","mode":420,"contents":{"source":"data:,a"}}]}}`
	const head = `{"apiVersion":"machineconfiguration.openshift.io/v1","kind":"MachineConfig","metadata":{"name":"99-x","labels":{"a":"b"}},`
	for name, body := range map[string]string{
		"plain":                    `"spec":{"config":` + cfg + `}}`,
		"every field":              `"spec":{"config":` + cfg + `,"kernelArguments":["nosmt","a=1 b=2"],"osImageURL":"quay.io/x@sha256:00","kernelType":"realtime","extensions":["usbguard"],"fips":true}}`,
		"fields before config":     `"spec":{"fips":false,"kernelType":"","extensions":[],"kernelArguments":null,"config":` + cfg + `}}`,
		"config absent":            `"spec":{"kernelArguments":["nosmt"]}}`,
		"config null":              `"spec":{"config":null,"kernelArguments":["nosmt"]}}`,
		"config empty":             `"spec":{"config":{}}}`,
		"config a string":          `"spec":{"config":"{\"ignition\":{\"version\":\"3.2.0\"}}"}}`,
		"config a number":          `"spec":{"config":3}}`,
		"config of spec 2":         `"spec":{"config":{"ignition":{"version":"2.2.0"}},"kernelArguments":["nosmt"]}}`,
		"config of spec 3.6.0":     `"spec":{"config":{"ignition":{"version":"3.6.0"},"storage":{"files":[{"path":"/etc/a","mode":2541}]}}}}`,
		"config with kind inside":  `"spec":{"config":{"kind":"x","ignition":{"version":"3.2.0"}}}}`,
		"special bits":             `"spec":{"config":{"ignition":{"version":"3.2.0"},"storage":{"files":[{"path":"/usr/bin/x","mode":3565,"contents":{"source":"data:,"}}]}}}}`,
		"escapes in config":        `"spec":{"config":{"ignition":{"version":"3.2.0"},"storage":{"files":[{"path":"/etc/\"a\\\u00e9","contents":{"source":"data:,a%22b"}}]}}}}`,
		"an escaped key in config": `"spec":{"config":{"ignition":{"version":"3.2.0"},"storage":{"files":[{"p\u0061th":"/etc/a"}]}}}}`,
		"an escaped version":       `"spec":{"config":{"ignition":{"version":"3.2.\u0030"}}}}`,
		"a version twice":          `"spec":{"config":{"ignition":{"version":"3.1.0"},"IGNITION":{"version":"3.2.0"}}}}`,
		"kind twice":               `"kind":"MachineConfig","spec":{"config":` + cfg + `}}`,
		"spec twice":               `"spec":{"kernelArguments":["a"]},"spec":{"config":` + cfg + `}}`,
		"config twice":             `"spec":{"config":{"ignition":{"version":"3.1.0"}},"config":` + cfg + `}}`,
		"kernelArguments twice":    `"spec":{"kernelArguments":["a"],"kernelArguments":["b"],"config":` + cfg + `}}`,
		"Spec of another case":     `"Spec":{"config":` + cfg + `}}`,
		"Config of another case":   `"spec":{"Config":` + cfg + `}}`,
		"fips of another case":     `"spec":{"FIPS":true,"config":` + cfg + `}}`,
		"an escaped key":           `"sp\u0065c":{"config":` + cfg + `}}`,
		"a non-ASCII key":          `"ſpec":{"config":` + cfg + `}}`,
		"an ignition key":          `"ignition":{"version":"3.2.0"},"spec":{"config":` + cfg + `}}`,
		"unknown fields":           `"status":{"x":[1,2.5e3,true,null,{"y":"z"}]},"spec":{"unknown":{"a":[]},"config":` + cfg + `}}`,
		"white space everywhere":   " \"spec\" :\r\n { \"config\" :\t" + cfg + " ,\n \"fips\" : true } }\n",
		"kernelArguments a string": `"spec":{"kernelArguments":"nosmt","config":` + cfg + `}}`,
		"fips a string":            `"spec":{"fips":"true","config":` + cfg + `}}`,
		"osImageURL a number":      `"spec":{"osImageURL":3,"config":` + cfg + `}}`,
		"a bad kernel type":        `"spec":{"kernelType":"rt","config":` + cfg + `}}`,
		"an unknown extension":     `"spec":{"extensions":["x"],"config":` + cfg + `}}`,
		"spec null":                `"spec":null}`,
		"spec a list":              `"spec":[]}`,
		"a syntax error in config": `"spec":{"config":{"ignition":{"version":"3.2.0"},"x":tru}}}`,
		"a syntax error outside":   `"status":{"x":tru},"spec":{"config":` + cfg + `}}`,
		"a bad string outside":     `"status":"a` + "\x01" + `b","spec":{"config":` + cfg + `}}`,
		"trailing garbage":         `"spec":{"config":` + cfg + `}} x`,
		"a bad config":             `"spec":{"config":{"ignition":{"version":"3.2.0"},"storage":{"files":[{"path":"etc/a"}]}}}}`,
		"an unknown key in config": `"spec":{"config":{"ignition":{"version":"3.2.0"},"storage":{"files":[{"path":"/etc/a","mdoe":1}]}}}}`,
	} {
		seeds["mc-"+name+".json"] = []byte(head + body)
	}
	seeds["mc-kind escaped.json"] = []byte(`{"kind":"Machine\u0043onfig","spec":{"config":` + cfg + `}}`)
	seeds["mc-kind another.json"] = []byte(`{"kind":"KubeletConfig","spec":{"config":` + cfg + `}}`)
	seeds["mc-kind null.json"] = []byte(`{"kind":null,"spec":{"config":` + cfg + `}}`)
	seeds["mc-currentconfig.json"] = []byte(`{"metadata":{"name":"rendered-worker-0"},"spec":{"config":` + cfg + `,"fips":false}}`)
	seeds["mc-currentconfig null config.json"] = []byte(`{"spec":{"config":null,"kernelArguments":["a"]}}`)
	seeds["mc-currentconfig no config.json"] = []byte(`{"spec":{"kernelArguments":["a"]}}`)
	seeds["mc-yaml.yaml"] = []byte("apiVersion: machineconfiguration.openshift.io/v1\nkind: MachineConfig\nmetadata:\n  name: 99-x\nspec:\n  config:\n    ignition:\n      version: 3.2.0\n    storage:\n      files:\n      - path: /etc/a\n        contents:\n          source: data:,a\n  kernelArguments: [nosmt]\n")
	return seeds
}

// sameMachineConfig: where the fast path reads raw, it reads what
// machineconfig.Detect's decoding does; and Parse of raw gives the same
// fragment, or the same error, by either. It returns whether the fast path
// answered.
func sameMachineConfig(t *testing.T, name string, raw []byte) bool {
	t.Helper()
	in := raw
	if ext := filepath.Ext(name); ext == ".yaml" || ext == ".yml" {
		if format.Documents(raw) > 1 {
			return false
		}
		var err error
		if in, err = yaml.YAMLToJSON(raw); err != nil {
			return false
		}
	}
	fast, ok := machineconfig.Plain(in)
	restore := machineconfig.SlowPath()
	mc, isMC, version, err := machineconfig.Detect(in)
	slowFrag, slowErr := Parse(name, raw)
	restore()
	if ok && (!isMC || err != nil || version != "" || !cmp.Equal(fast, mc)) {
		t.Errorf("%s: fast path %+v; the decoding: %+v, %v, %q, %v", name, fast, mc, isMC, version, err)
	}
	fastFrag, fastErr := Parse(name, raw)
	if errString(fastErr) != errString(slowErr) {
		t.Errorf("%s: Parse error %q; without the fast path %q", name, errString(fastErr), errString(slowErr))
	}
	if diff := cmp.Diff(slowFrag, fastFrag, cmp.AllowUnexported(parsed.Fragment{}), cmpopts.EquateEmpty(), anyOrderWarnings); diff != "" {
		t.Errorf("%s: Parse (-without the fast path +with it):\n%s", name, diff)
	}
	return ok
}

// anyOrderWarnings: Ignition's warnings of unused keys come in no set
// order (two parses of the same bytes differ).
var anyOrderWarnings = cmp.FilterPath(func(p cmp.Path) bool { return p.Last().String() == ".Warnings" },
	cmpopts.SortSlices(func(a, b string) bool { return a < b }))

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// TestMachineConfigFastPath: on every seed (the real MachineConfigs among
// them) the fast path reads what the decoding does, and Parse gives the
// same; and it answers for the real ones and the plain shapes, else it
// would prove nothing.
func TestMachineConfigFastPath(t *testing.T) {
	answered := map[string]bool{}
	for name, raw := range mcSeeds(t) {
		t.Run(name, func(t *testing.T) {
			answered[name] = sameMachineConfig(t, name, raw)
		})
	}
	for _, name := range []string{"mc-plain.json", "mc-every field.json", "mc-config null.json", "mc-config absent.json",
		"mc-currentconfig.json", "mc-unknown fields.json", "mc-escapes in config.json", "mc-white space everywhere.json",
		"mc-special bits.json", "mc-yaml.yaml"} {
		if !answered[name] {
			t.Errorf("%s: the fast path did not answer", name)
		}
	}
	for _, name := range []string{"mc-kind twice.json", "mc-spec twice.json", "mc-config twice.json", "mc-Spec of another case.json",
		"mc-an escaped key.json", "mc-a non-ASCII key.json", "mc-a syntax error in config.json", "mc-a syntax error outside.json",
		"mc-fips a string.json", "mc-an ignition key.json",
		// The key scanner takes no escaped key, as ignspec's quick path.
		"mc-an escaped key in config.json"} {
		if answered[name] {
			t.Errorf("%s: the fast path answered; the decoding must", name)
		}
	}
	real := 0
	for name, ok := range answered {
		if strings.HasPrefix(name, "real-") && ok {
			real++
		}
	}
	if real < 4 {
		t.Errorf("the fast path answered %d real configs; want the 4 real MachineConfigs of spec 3 at least", real)
	}
}

// FuzzMachineConfigFastPath: whatever the bytes, the fast path and the
// decoding agree (sameMachineConfig). Its seeds are mcSeeds.
func FuzzMachineConfigFastPath(f *testing.F) {
	for name, raw := range mcSeeds(f) {
		f.Add(filepath.Ext(name) == ".yaml", raw)
	}
	f.Fuzz(func(t *testing.T, asYAML bool, raw []byte) {
		sameMachineConfig(t, fuzzFile(asYAML), raw)
	})
}

// TestMachineConfigFastPathLoads: a load from files, where the parse lets
// spec.config's bytes go and reads them again should its report need
// them, gives the same state, or the same error, as the decoding.
func TestMachineConfigFastPathLoads(t *testing.T) {
	dir := t.TempDir()
	for name, raw := range mcSeeds(t) {
		t.Run(name, func(t *testing.T) {
			f := filepath.Join(dir, strings.ReplaceAll(name, " ", "_"))
			if filepath.Ext(f) == ".ign" {
				f += ".json"
			}
			if err := os.WriteFile(f, raw, 0o644); err != nil {
				t.Fatal(err)
			}
			restore := machineconfig.SlowPath()
			want, wantErr := LoadState(dirHost(dir), []string{f})
			restore()
			got, err := LoadState(dirHost(dir), []string{f})
			if errString(err) != errString(wantErr) {
				t.Fatalf("error %q; without the fast path %q", errString(err), errString(wantErr))
			}
			if diff := cmp.Diff(want, got, cmpEntries, cmpopts.EquateEmpty(), anyOrderWarnings); diff != "" {
				t.Errorf("state (-without the fast path +with it):\n%s", diff)
			}
		})
	}
}

// TestMachineConfigReread: spec.config's bytes, let go by the parse, are
// read again when its report needs them (a 3.2.0 config with special bits:
// the quick path decodes, drops, then hands it to Ignition), and a file
// that changed in between is refused, naming it.
func TestMachineConfigReread(t *testing.T) {
	raw := mcSeeds(t)["mc-special bits.json"]
	const file = "/etc/drift-monitor/desired.d/50-mc.json"
	reads := 0
	again := func(b []byte) func(string) types.Reopen {
		return func(string) types.Reopen { return reopenBytes(b, &reads) }
	}
	want, err := deriveState("/", []string{file}, [][]byte{raw}, [4][]byte{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := deriveStateFrom("/", []string{file}, [][]byte{append([]byte(nil), raw...)}, [4][]byte{}, again(raw))
	if err != nil {
		t.Fatal(err)
	}
	if reads != 1 {
		t.Errorf("spec.config read again %d times, want once (dropped, then needed by Ignition's report)", reads)
	}
	if diff := cmp.Diff(want, got, cmpEntries, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("state read again (-held +dropped):\n%s", diff)
	}
	changed := []byte(strings.Replace(string(raw), "/usr/bin/x", "/usr/bin/y", 1))
	_, err = deriveStateFrom("/", []string{file}, [][]byte{append([]byte(nil), raw...)}, [4][]byte{}, again(changed))
	var le *configerr.LoadError
	if !errors.As(err, &le) || le.File != file || !strings.Contains(err.Error(), "changed while it was being read") {
		t.Errorf("a file changed before it was read again: %v, want a LoadError naming %s", err, file)
	}
}

// TestLargeMachineConfigLoads: a MachineConfig large enough for the lean
// decoding, in JSON (its spec.config a part of the file) and in the YAML
// JSONToYAML writes of it (converted without go-yaml, decoded lean from
// memory), gives the state the paths without these shortcuts give (the
// JSON decoded by encoding/json: machineconfig.SlowPath).
func TestLargeMachineConfigLoads(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"ignition":{"version":"3.2.0"},"storage":{"files":[`)
	for i := range 40 {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `{"path":"/etc/large/f%d","mode":420,"contents":{"source":"data:;base64,%s"}}`, i,
			base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{byte('a' + i%26)}, 30000)))
	}
	b.WriteString(`]},"systemd":{"units":[{"name":"a.service","enabled":true,"contents":"[Unit]\nDescription=a\n\n[Install]\nWantedBy=multi-user.target\n"}]}}`)
	mc := `{"apiVersion":"machineconfiguration.openshift.io/v1","kind":"MachineConfig","metadata":{"name":"99-large"},"spec":{"config":` + b.String() + `}}`
	y, err := yaml.JSONToYAML([]byte(mc))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for name, raw := range map[string][]byte{"large.json": []byte(mc), "large.yaml": y} {
		if err := os.WriteFile(filepath.Join(dir, name), raw, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	load := func(name string, slow bool) model.State {
		t.Helper()
		if slow {
			defer machineconfig.SlowPath()()
		}
		st, err := LoadState(dirHost(dir), []string{filepath.Join(dir, name)})
		if err != nil {
			t.Fatalf("%s (slow path %v): %v", name, slow, err)
		}
		if len(st.Entries) < 40 {
			t.Fatalf("%s (slow path %v): %d entries", name, slow, len(st.Entries))
		}
		return st
	}
	want := load("large.json", true)
	for _, name := range []string{"large.json", "large.yaml"} {
		got := load(name, false)
		// Contents compared as bytes: element by element, cmp takes seconds.
		if !cmp.Equal(want.Entries, got.Entries, cmpEntries, cmp.Comparer(bytes.Equal)) {
			t.Errorf("%s: entries differ from the slow path's", name)
		}
	}
}
