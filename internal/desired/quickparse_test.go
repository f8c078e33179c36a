package desired

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/coreos/vcontext/report"
	"github.com/drift-monitor/drift-monitor/internal/desired/discover"
	"github.com/drift-monitor/drift-monitor/internal/desired/ignition"
	"github.com/drift-monitor/drift-monitor/internal/desired/machineconfig"
	"github.com/drift-monitor/drift-monitor/internal/desired/merge"
	"github.com/drift-monitor/drift-monitor/internal/desired/parsed"
	types "github.com/drift-monitor/drift-monitor/internal/ignspec"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"sigs.k8s.io/yaml"
)

// ignitionParse is Ignition's own path, the oracle: Ignition's
// ParseCompatibleVersion of the newest spec itself (the position tree
// built for every config, each Translate), then for a config of an older
// spec the newest spec's validation (ignspec.IgnitionParse).
func ignitionParse(raw []byte, version string) (types.Config, report.Report, error) {
	return types.IgnitionParse(raw, version)
}

// sameAsIgnition checks that parsing raw, a config file named file, gives
// exactly what Ignition's own path gives: the config, the report (messages,
// line, column), the error and the LoadError made of them. It returns
// whether the quick path answered (accepted the config, or refused it in
// the newest spec's validation) rather than handing it to Ignition's.
func sameAsIgnition(t *testing.T, file string, raw []byte) (quick bool) {
	t.Helper()
	positions := true
	if ext := filepath.Ext(file); ext == ".yaml" || ext == ".yml" {
		j, err := yaml.YAMLToJSON(raw)
		if err != nil {
			return false
		}
		raw = j
	}
	mc, isMC, version, err := machineconfig.Detect(raw)
	if err != nil {
		return false
	}
	if isMC {
		raw, version, positions = mc.Spec.Config, ignition.ConfigVersion(mc.Spec.Config), false
		if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
			return false
		}
	}
	wantCfg, wantRpt, wantErr := ignitionParse(raw, version)
	compare := func(how string, cfg types.Config, rpt report.Report, err error) {
		t.Helper()
		if diff := cmp.Diff(wantCfg, cfg); diff != "" {
			t.Errorf("%s: config (-Ignition +ours):\n%s", how, diff)
		}
		if got, want := reportShown(rpt), reportShown(wantRpt); got != want {
			t.Errorf("%s: report:\n%s\nIgnition's:\n%s", how, got, want)
		}
		if (err == nil) != (wantErr == nil) || (err != nil && !errors.Is(err, wantErr)) {
			t.Errorf("%s: error %v; Ignition's %v", how, err, wantErr)
		}
		if err != nil && wantErr != nil {
			got := ignition.ReportError(file, raw, rpt, err, positions).Error()
			want := ignition.ReportError(file, raw, wantRpt, wantErr, positions).Error()
			if got != want {
				t.Errorf("%s: refused with %q; Ignition's path: %q", how, got, want)
			}
		}
	}
	cfg, rpt, err := types.ParseBytes(raw, version)
	compare("parseIgnition", cfg, rpt, err)
	reread := 0
	src := types.NewBytes(raw, reopenBytes(bytes.Clone(raw), &reread))
	cfg, rpt, err = types.Parse(src, version)
	compare("parseIgnitionFrom, the bytes dropped", cfg, rpt, err)
	if reread > 1 {
		t.Errorf("the bytes were read again %d times", reread)
	}
	return types.Quick(raw, version)
}

// reportShown is what is shown of a report: of a refused config (a fatal
// entry) its first fatal entry with its line and column (the LoadError's:
// ignspec's refusal path places only that one, stops at the first
// duplicate, and gathers no warnings); of any other, every entry with its
// position (reportLines).
func reportShown(r report.Report) string {
	if !r.IsFatal() {
		return reportLines(r)
	}
	for _, e := range r.Entries {
		if e.Kind.IsFatal() {
			return e.String() + "\n"
		}
	}
	return ""
}

// reportLines is a report's entries, one a line, sorted: Ignition reports
// unused keys in the order of a map's iteration (config/validate/validate.go,
// ValidateUnusedKeys), which varies from one run to the next.
func reportLines(r report.Report) string {
	lines := strings.Split(strings.TrimSuffix(r.String(), "\n"), "\n")
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// quickSeeds are inputs for the differential test: the fuzz corpus of
// FuzzParse, the real configs, and configs made to reach each way the
// quick path gives up; every one that declares a spec version 3.x also
// once with each stable spec's version.
func quickSeeds(t testing.TB) map[string][]byte {
	seeds := map[string][]byte{}
	corpus, err := filepath.Glob("testdata/fuzz/FuzzParse/*")
	if err != nil || len(corpus) == 0 {
		t.Fatalf("no fuzz corpus: %v", err)
	}
	for _, f := range corpus {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		yamlFile := bytes.Contains(b, []byte("bool(true)"))
		for _, line := range strings.Split(string(b), "\n") {
			lit, ok := strings.CutPrefix(line, "[]byte(")
			if !ok {
				continue
			}
			raw, err := strconv.Unquote(strings.TrimSuffix(lit, ")"))
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			name := "corpus-" + filepath.Base(f) + ".ign"
			if yamlFile {
				name = "corpus-" + filepath.Base(f) + ".yaml"
			}
			seeds[name] = []byte(raw)
		}
	}
	for _, dir := range []string{realConfigsCopy, sharedRealConfigs} {
		files, _ := filepath.Glob(filepath.Join(dir, "*"))
		for _, f := range files {
			if !discover.IsFragmentName(filepath.Base(f)) || filepath.Ext(f) == discover.ChildExt {
				continue
			}
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			seeds["real-"+filepath.Base(f)] = b
		}
	}
	const head = `{"ignition":{"version":"3.4.0"},`
	for name, body := range map[string]string{
		"every kind of entry": `"storage":{"files":[{"path":"/etc/a","mode":420,"contents":{"source":"data:,x"}},
 {"path":"/etc/b","append":[{"source":"data:;base64,eQ=="}],"user":{"id":0},"group":{"name":"wheel"}},
 {"path":"/etc/c","contents":{"source":"https://example.com/c","verification":{"hash":"sha512-00"}}}],
 "directories":[{"path":"/etc/d","mode":448}],"links":[{"path":"/etc/l","target":"/etc/a","hard":false}]},
 "systemd":{"units":[{"name":"a.service","enabled":true,"contents":"[Unit]\nDescription=\"q\\\\\"\n","dropins":[{"name":"x.conf","contents":"[Unit]\n"}]},
 {"name":"m.service","mask":true}]},
 "kernelArguments":{"shouldExist":["quiet"],"shouldNotExist":["debug"]},
 "passwd":{"users":[{"name":"core","sshAuthorizedKeys":["ssh-ed25519 AAAA core"]}],"groups":[{"name":"g","gid":5}]}}`,
		"white space everywhere": " \"storage\" :\r\n{ \"files\" : [ { \"path\" : \"/a\" , \"mode\" : 420 } ] } }\n\t",
		"empty lists":            `"storage":{"files":[],"directories":[]},"systemd":{}}`,
		"a key of another case":  `"storage":{"files":[{"Path":"/etc/a"}]}}`,
		"an unknown key":         `"storage":{"files":[{"path":"/etc/a","mdoe":420}]}}`,
		"an unknown nested key":  `"storage":{"files":[{"path":"/etc/a","extra":{"a":[[1,{"b":null}]]}}]}}`,
		"a null struct":          `"storage":null}`,
		"a null pointer":         `"storage":{"files":[{"path":"/etc/a","mode":null}]}}`,
		"a null in a list":       `"storage":{"files":[null]}}`,
		"a key twice":            `"storage":{"files":[{"path":"/etc/a","path":"/etc/b"}]}}`,
		"a key in two cases":     `"storage":{"files":[{"path":"/etc/a","PATH":"/etc/b"}]}}`,
		"an escaped key":         `"storage":{"files":[{"p\u0061th":"/etc/a"}]}}`,
		"escapes in values":      `"storage":{"files":[{"path":"/etc/\"a\\","contents":{"source":"data:,a%20b"}}]}}`,
		"a number as a float":    `"storage":{"files":[{"path":"/etc/a","mode":420.0}]}}`,
		"a number with exponent": `"storage":{"files":[{"path":"/etc/a","mode":4.2e2}]}}`,
		"a negative id":          `"storage":{"files":[{"path":"/etc/a","user":{"id":-1}}]}}`,
		"a relative path":        `"storage":{"files":[{"path":"etc/a"}]}}`,
		"a duplicate path":       `"storage":{"files":[{"path":"/a"}],"directories":[{"path":"/a"}]}}`,
		"a link without target":  `"storage":{"links":[{"path":"/etc/l"}]}}`,
		"a bad data URL":         `"storage":{"files":[{"path":"/etc/a","contents":{"source":"data:%%"}}]}}`,
		"a wrong type":           `"storage":{"files":{"path":"/etc/a"}}}`,
		"trailing garbage":       `"storage":{}} x`,
		"a unit in a file":       `"storage":{"files":[{"path":"/etc/systemd/system/a.service"}]},"systemd":{"units":[{"name":"a.service","contents":"x"}]}}`,
		"a top-level array":      `"ignition":[]}`,
		"luks with tang":         `"storage":{"luks":[{"name":"root","device":"/dev/vda4","clevis":{"tang":[{"url":"https://tang.example.com","thumbprint":"x"}]}}]}}`,
		"a tang advertisement": `"storage":{"luks":[{"name":"root","device":"/dev/vda4","clevis":{"tang":[{"url":"https://tang.example.com","thumbprint":"x",
 "advertisement":"{\"payload\": \"eyJrZXlzIjogW119\", \"protected\": \"eyJhbGciOiJFUzUxMiIsImN0eSI6Imp3ay1zZXQranNvbiJ9\", \"signature\": \"AA\"}"}]}}]}}`,
		"a string too short": `"storage":{"files":[{"path":"/etc/a`,
		// What quickOlder's guards exclude (ignspec/quick.go): bits that
		// 3.6.0's translate masks, schemes that older specs refuse, the
		// sections translated by hand, an absent or empty link target.
		"special bits": `"storage":{"files":[{"path":"/usr/local/bin/su","mode":3565,"contents":{"source":"data:,"}}],
 "directories":[{"path":"/srv/shared","mode":1023},{"path":"/srv/plain","mode":493}]}}`,
		"an arn source":        `"storage":{"files":[{"path":"/etc/a","contents":{"source":"arn:aws:s3:us-east-1:123456789012:accesspoint/test/object/some/path"}}]}}`,
		"a gs source":          `"storage":{"files":[{"path":"/etc/a","append":[{"source":"GS://bucket/object"}]}]}}`,
		"an s3 source":         `"storage":{"files":[{"path":"/etc/a","contents":{"source":"s3://bucket/key?versionId="}}]}}`,
		"a raid":               `"storage":{"raid":[{"name":"md","level":"raid1","devices":["/dev/vda","/dev/vdb"]}]}}`,
		"a filesystem":         `"storage":{"filesystems":[{"device":"/dev/vda","format":"ext4","path":"/var"}]}}`,
		"a clevis custom pin":  `"storage":{"luks":[{"name":"root","device":"/dev/vda4","clevis":{"custom":{"pin":"foo","config":"{}"}}}]}}`,
		"an empty link target": `"storage":{"links":[{"path":"/etc/l","target":""}]}}`,
		// What validQuick's placeholder stands for (ignspec/quick.go): a
		// base64 data URL Ignition refuses, one with HTTP headers, gzip.
		"a bad base64 padding":     `"storage":{"files":[{"path":"/etc/a","contents":{"source":"data:;base64,eQ="}}]}}`,
		"a data URL with headers":  `"storage":{"files":[{"path":"/etc/a","contents":{"source":"data:;base64,eQ==","httpHeaders":[{"name":"a","value":"b"}]}}]}}`,
		"a gzip data URL":          `"storage":{"files":[{"path":"/etc/a","contents":{"compression":"gzip","source":"data:;base64,H4sIAAAAAAAA/8tIzcnJBwCGphA2BQAAAA=="}}]}}`,
		"a data URL and overwrite": `"storage":{"files":[{"path":"/etc/a","overwrite":true,"contents":{"source":"data:;base64,eQ==","verification":{"hash":"sha512-00"}}}]}}`,
		"a user and a group":       `"passwd":{"users":[{"name":"core","uid":1000,"groups":["wheel"],"shell":"/bin/bash"}],"groups":[{"name":"g","gid":5}]}}`,
	} {
		seeds["made-"+name+".ign"] = []byte(head + body)
	}
	seeds["made-ignition sections.ign"] = []byte(`{"ignition":{"version":"3.4.0","timeouts":{"httpTotal":10},` +
		`"security":{"tls":{"certificateAuthorities":[{"source":"data:,ca"}]}},"config":{"merge":[{"source":"https://example.com/c.ign"}]}},` +
		`"storage":{"files":[{"path":"/etc/a"}]}}`)
	seeds["made-a CA without source.ign"] = []byte(`{"ignition":{"version":"3.4.0","security":{"tls":{"certificateAuthorities":[{}]}}}}`)
	versions := regexp.MustCompile(`"version"\s*:\s*"3\.[0-9]+\.0"`)
	names := make([]string, 0, len(seeds))
	for name := range seeds {
		names = append(names, name)
	}
	for _, name := range names {
		raw := seeds[name]
		if !versions.Match(raw) {
			continue
		}
		for _, v := range types.Versions() {
			variant := versions.ReplaceAll(raw, []byte(`"version":"`+v+`"`))
			seeds[fmt.Sprintf("%s as %s%s", strings.TrimSuffix(name, filepath.Ext(name)), v, filepath.Ext(name))] = variant
		}
	}
	return seeds
}

// TestQuickParseIsIgnitions: on every seed, and every spec, the quick path
// accepts and refuses what Ignition's own path does, with the same config,
// report, line and column; and it does answer for configs Ignition has
// nothing to say on, in every spec (else it would prove nothing).
func TestQuickParseIsIgnitions(t *testing.T) {
	answered := map[string]int{}
	for name, raw := range quickSeeds(t) {
		t.Run(name, func(t *testing.T) {
			if sameAsIgnition(t, name, raw) {
				_, _, version, _ := machineconfig.Detect(raw)
				answered[version]++
			}
		})
	}
	for _, v := range types.Versions() {
		if answered[v] < 3 {
			t.Errorf("the quick path answered %d seeds of spec %s: want 3 at least", answered[v], v)
		}
	}
}

// FuzzQuickParse: whatever the bytes, the quick path and Ignition's agree
// (sameAsIgnition). Its seeds are quickSeeds.
func FuzzQuickParse(f *testing.F) {
	for _, raw := range quickSeeds(f) {
		f.Add(raw)
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		sameAsIgnition(t, "fuzz.ign", raw)
	})
}

// TestPlainIgnitionVersion: where plainIgnitionVersion answers, the probe
// of encoding/json reads the same of valid JSON; of bytes that are not
// JSON, the parse of the version it gives refuses them as the parse of the
// probe's does. And it answers for the configs Ignition's tools write.
func TestPlainIgnitionVersion(t *testing.T) {
	seeds := quickSeeds(t)
	for name, body := range map[string]string{
		"kind in another case": `{"KIND":"MachineConfig","ignition":{"version":"3.4.0"}}`,
		"spec in another case": `{"Spec":{"config":{}},"ignition":{"version":"3.4.0"}}`,
		"ignition twice":       `{"ignition":{"version":"3.4.0"},"storage":{},"IGNITION":{"config":{}}}`,
		"version twice":        `{"ignition":{"version":"3.1.0","Version":"3.4.0"}}`,
		"a null version":       `{"ignition":{"version":null}}`,
		"a null ignition":      `{"ignition":null}`,
		"a number version":     `{"ignition":{"version":3}}`,
		"an escaped version":   `{"ignition":{"version":"3.4.\u0030"}}`,
		"an escaped key":       `{"ign\u0069tion":{"version":"3.4.0"}}`,
		"no ignition":          `{"storage":{"files":[]}}`,
		"not an object":        `["ignition"]`,
		"a bad literal":        `{"ignition":{"version":"3.4.0"},"x":tru}`,
		"trailing bytes":       `{"ignition":{"version":"3.4.0"}}}`,
	} {
		seeds["probe-"+name+".ign"] = []byte(body)
	}
	answered := 0
	for name, raw := range seeds {
		v, ok := types.PlainIgnitionVersion(raw)
		if !ok {
			continue
		}
		answered++
		mc, isMC, want, err := machineconfig.Probe(raw)
		if json.Valid(raw) {
			if isMC || err != nil || v != want || !cmp.Equal(mc, machineconfig.Object{}) {
				t.Errorf("%s: plainIgnitionVersion = %q; the probe: %v, %v, %q, %v", name, v, mc, isMC, want, err)
			}
			continue
		}
		_, rpt, err := types.ParseBytes(raw, v)
		_, wantRpt, wantErr := types.ParseBytes(raw, want)
		if err == nil || wantErr == nil {
			t.Errorf("%s: not JSON, yet parsed: %v, %v", name, err, wantErr)
			continue
		}
		if got, want := ignition.ReportError(name, raw, rpt, err, true).Error(), ignition.ReportError(name, raw, wantRpt, wantErr, true).Error(); got != want {
			t.Errorf("%s: refused as %q with version %q; as %q with the probe's %q", name, got, v, want, want)
		}
	}
	if answered < len(seeds)/2 {
		t.Errorf("plainIgnitionVersion answered %d of %d seeds", answered, len(seeds))
	}
}

// TestMergeOneIsIgnitions: Merge of one parsed fragment is Ignition's merge
// of it onto an empty config, which it no longer calls (empty lists aside,
// which that merge makes nil), on every seed that parses.
func TestMergeOneIsIgnitions(t *testing.T) {
	merged := 0
	for name, raw := range quickSeeds(t) {
		frag, err := Parse(name, raw)
		if err != nil {
			continue
		}
		got, err := merge.All([]parsed.Fragment{frag})
		if err != nil {
			t.Errorf("%s: Merge: %v", name, err)
			continue
		}
		var empty types.Config
		empty.Ignition.Version = types.MaxVersion.String()
		want := types.Merge(empty, frag.Config)
		if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("%s: Merge (-Ignition's merge +Merge):\n%s", name, diff)
		}
		merged++
	}
	if merged < 20 {
		t.Errorf("only %d seeds parsed", merged)
	}
}

// TestConfigBytesChanged: bytes let go during a parse and read again for
// Ignition's report are refused if they are not the bytes parsed; the same
// bytes are reported on as without dropping them.
func TestConfigBytesChanged(t *testing.T) {
	raw := []byte(`{"ignition":{"version":"3.4.0"},"storage":{"files":[{"path":"etc/relative"}]}}`)
	changed := []byte(`{"ignition":{"version":"3.4.0"},"storage":{"files":[{"path":"/etc/absolute"}]}}`)
	for _, tt := range []struct {
		name  string
		again []byte
		want  string
	}{
		{"the same bytes", raw, "50-x.ign:1:61: $.storage.files.0.path: path not absolute"},
		{"other bytes", changed, "50-x.ign: changed while it was being read: load it again"},
		{"fewer bytes", raw[:10], "50-x.ign: changed while it was being read: load it again"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			reads := 0
			_, err := parseFragment("50-x.ign", bytes.Clone(raw), ignition.Supplies{}, false, reopenBytes(tt.again, &reads))
			if err == nil || err.Error() != tt.want {
				t.Errorf("parse = %v, want %q", err, tt.want)
			}
			if reads != 1 {
				t.Errorf("read again %d times, want 1 (the bytes dropped, then needed for the report)", reads)
			}
		})
	}
}

// TestLoadReportsWhatItDropped: a bad config loaded from a file, whose
// bytes the parse lets go, and from a pipe, whose bytes it keeps (it could
// not read them again), is refused with Ignition's line and column either
// way.
func TestLoadReportsWhatItDropped(t *testing.T) {
	raw := []byte("{\"ignition\":{\"version\":\"3.4.0\"},\n\"storage\":{\"files\":[{\"path\":\"etc/relative\"}]}}")
	const want = ":2:29: $.storage.files.0.path: path not absolute"
	dir := t.TempDir()
	file := filepath.Join(dir, "10-bad.ign")
	if err := os.WriteFile(file, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "20-bad.ign")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{file, fifo} {
		done := make(chan error, 1)
		if f == fifo {
			go func() { done <- os.WriteFile(fifo, raw, 0o600) }()
		} else {
			done <- nil
		}
		_, err := LoadState(dirHost(t.TempDir()), []string{f})
		if err == nil || err.Error() != f+want {
			t.Errorf("LoadState(%s) = %v, want %q", f, err, f+want)
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
}

// TestAsMachineConfigIsTheProbe: machineconfig.Detect, with its shortcuts
// (ignspec.PlainIgnitionVersion, ignspec.PlainKind), reads of valid JSON
// what the encoding/json probe reads; and the MachineConfig shortcut is
// taken for the MachineConfigs the machine-config operator writes.
func TestAsMachineConfigIsTheProbe(t *testing.T) {
	seeds := quickSeeds(t)
	mc := `{"apiVersion":"machineconfiguration.openshift.io/v1","kind":"MachineConfig","metadata":{"name":"99-x"},` +
		`"spec":{"config":{"ignition":{"version":"3.2.0"}},"kernelArguments":["nosmt"]}}`
	for name, body := range map[string]string{
		"a MachineConfig":             mc,
		"kind in another case":        `{"KIND":"MachineConfig","spec":{"config":{"ignition":{"version":"3.2.0"}}}}`,
		"kind twice":                  `{"kind":"Pod","Kind":"MachineConfig","spec":{}}`,
		"kind null":                   `{"kind":null,"spec":{"config":{}}}`,
		"kind a number":               `{"kind":5,"spec":{}}`,
		"kind escaped":                `{"kind":"Machine\u0043onfig","spec":{}}`,
		"another kind":                `{"kind":"Pod","spec":{}}`,
		"a spec that is a string":     `{"kind":"MachineConfig","spec":"x"}`,
		"an ignition section too":     `{"kind":"MachineConfig","ignition":{"version":"3.2.0"},"spec":{}}`,
		"kernel arguments not a list": `{"kind":"MachineConfig","spec":{"kernelArguments":{"a":"b"}}}`,
		"trailing bytes":              mc + "}",
		"a bad literal":               `{"kind":"MachineConfig","spec":{"config":tru}}`,
		"the MCD's currentconfig":     `{"metadata":{"name":"rendered"},"spec":{"config":{"ignition":{"version":"3.2.0"}}}}`,
	} {
		seeds["mc-"+name+".json"] = []byte(body)
	}
	shortcut := 0
	for name, raw := range seeds {
		if !json.Valid(raw) {
			continue
		}
		gotMC, gotIs, gotV, gotErr := machineconfig.Detect(raw)
		wantMC, wantIs, wantV, wantErr := machineconfig.Probe(raw)
		if !cmp.Equal(gotMC, wantMC) || gotIs != wantIs || gotV != wantV || fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
			t.Errorf("%s: Detect = %+v, %v, %q, %v; the probe: %+v, %v, %q, %v", name, gotMC, gotIs, gotV, gotErr, wantMC, wantIs, wantV, wantErr)
		}
		if kind, ok := types.PlainKind(raw); ok && kind == "MachineConfig" && wantIs {
			shortcut++
		}
	}
	if shortcut < 3 {
		t.Errorf("the MachineConfig shortcut answered %d seeds", shortcut)
	}
}
