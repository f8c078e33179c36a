package desired

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	ignerrors "github.com/coreos/ignition/v2/config/shared/errors"
	"github.com/drift-monitor/drift-monitor/internal/desired/configerr"
	"github.com/drift-monitor/drift-monitor/internal/desired/derive"
	"github.com/drift-monitor/drift-monitor/internal/desired/merge"
	"github.com/drift-monitor/drift-monitor/internal/desired/parsed"
	types "github.com/drift-monitor/drift-monitor/internal/ignspec"
	"github.com/drift-monitor/drift-monitor/internal/model"
	"github.com/google/go-cmp/cmp"
)

// TestParseErrors: every config that cannot be loaded is refused with a
// LoadError that names the file first, then (where Ignition's report has
// them) the line and column, then what is wrong.
func TestParseErrors(t *testing.T) {
	tests := []struct {
		name string
		file string
		raw  string
		// want are substrings of the message after "file:"/"file:line:col:".
		want         []string
		line, column int
		context      string
		is           error
	}{
		{
			name: "unparsable JSON, trailing comma",
			file: "10-bad.ign",
			raw:  `{"ignition":{"version":"3.0.0"},}`,
			want: []string{"invalid character '}'"},
			line: 1, column: 33,
		},
		{
			name: "unparsable JSON on the third line",
			file: "10-bad.ign",
			raw:  "{\n  \"ignition\": {\"version\": \"3.0.0\"},\n  \"storage\": x}",
			want: []string{"invalid character 'x'"},
			line: 3, column: 15, // Ignition's own count
		},
		{
			name: "unparsable JSON, cut short",
			file: "cut.json",
			raw:  `{"ignition": {"version": "3.4.0"}, "st`,
			want: []string{"unexpected end of JSON input"},
			line: 1, column: 38,
		},
		{
			name: "JSON of the wrong shape",
			file: "array.ign",
			raw:  `[1, 2]`,
			want: []string{"cannot unmarshal array"},
			line: 1, column: 2,
		},
		{
			name: "JSON field of the wrong type",
			file: "type.ign",
			raw:  "{\"ignition\": {\"version\": \"3.5.0\"},\n\"storage\": {\"files\": [{\"path\": 5}]}}",
			want: []string{"cannot unmarshal number"},
			line: 2, column: 33,
		},
		{
			name: "empty file",
			file: "empty.ign",
			raw:  "",
			want: []string{"not a config (empty)"},
			is:   ignerrors.ErrEmpty,
		},
		{
			name: "unparsable YAML",
			file: "bad.yaml",
			raw:  "kind: MachineConfig\nspec: [1, 2\n",
			want: []string{"invalid YAML", "did not find expected ',' or ']'"},
			line: 2, column: 1,
		},
		{
			name: "experimental spec",
			file: "exp.ign",
			raw:  `{"ignition":{"version":"3.6.0-experimental"}}`,
			want: []string{`unsupported config version "3.6.0-experimental"`, "supported: 3.0.0 to 3.6.0", "*.ignition-cache.json"},
			is:   ignerrors.ErrUnknownVersion,
		},
		{
			name: "spec 2",
			file: "old.ign",
			raw:  `{"ignition":{"version":"2.2.0"}}`,
			want: []string{`unsupported config version "2.2.0"`},
			is:   ignerrors.ErrUnknownVersion,
		},
		{
			name: "spec 4",
			file: "future.ign",
			raw:  `{"ignition":{"version":"4.0.0"}}`,
			want: []string{`unsupported config version "4.0.0"`},
			is:   ignerrors.ErrUnknownVersion,
		},
		{
			name: "no version",
			file: "noversion.ign",
			raw:  `{}`,
			want: []string{"invalid config version"},
			is:   ignerrors.ErrInvalidVersion,
		},
		{
			name:    "relative path",
			file:    "rel.ign",
			raw:     `{"ignition":{"version":"3.1.0"},"storage":{"files":[{"path":"etc/x"}]}}`,
			want:    []string{"path not absolute"},
			line:    1,
			column:  61,
			context: "$.storage.files.0.path",
		},
		{
			name:    "undecodable data URL",
			file:    "data.ign",
			raw:     `{"ignition":{"version":"3.1.0"},"storage":{"files":[{"path":"/x","contents":{"source":"data:;base64,!!!"}}]}}`,
			want:    []string{"invalid data character"},
			line:    1,
			column:  87,
			context: "$.storage.files.0.contents.source",
		},
		{
			name:    "data URL marked gzip that is not gzip",
			file:    "gzip.ign",
			raw:     `{"ignition":{"version":"3.1.0"},"storage":{"files":[{"path":"/x","contents":{"source":"data:,plain","compression":"gzip"}}]}}`,
			want:    []string{"gzip data URL"},
			context: "$.storage.files.0",
		},
		{
			name:    "append fragment marked gzip that is not gzip",
			file:    "gzip.ign",
			raw:     `{"ignition":{"version":"3.1.0"},"storage":{"files":[{"path":"/x","append":[{"source":"data:,a"},{"source":"data:,plain","compression":"gzip"}]}]}}`,
			want:    []string{"append 1: gzip data URL"},
			context: "$.storage.files.0",
		},
		{
			name:    "duplicate file",
			file:    "dup.ign",
			raw:     `{"ignition":{"version":"3.1.0"},"storage":{"files":[{"path":"/x"},{"path":"/x"}]}}`,
			want:    []string{"duplicate entry defined"},
			line:    1,
			column:  68,
			context: "$.storage.files.1",
		},
		{
			name:    "one path as a file and a directory in one config",
			file:    "dup.ign",
			raw:     `{"ignition":{"version":"3.1.0"},"storage":{"files":[{"path":"/x"}],"directories":[{"path":"/x"}]}}`,
			want:    []string{"duplicate entry defined"},
			line:    1,
			column:  54,
			context: "$.storage.files.0",
		},
		{
			name:    "duplicate unit",
			file:    "dup.ign",
			raw:     `{"ignition":{"version":"3.1.0"},"systemd":{"units":[{"name":"a.service"},{"name":"a.service"}]}}`,
			want:    []string{"duplicate entry defined"},
			line:    1,
			column:  75,
			context: "$.systemd.units.1",
		},
		{
			name:    "overwrite without a source",
			file:    "ow.ign",
			raw:     `{"ignition":{"version":"3.0.0"},"storage":{"files":[{"path":"/x","overwrite":true}]}}`,
			want:    []string{"overwrite must be false if source is unspecified"},
			line:    1,
			column:  78,
			context: "$.storage.files.0.overwrite",
		},
		{
			name: "YAML that is neither a MachineConfig nor Butane",
			file: "other.yaml",
			raw:  "version: 1.5.0\nfoo: bar\n",
			want: []string{"must hold a MachineConfig", "or a Butane config (variant: and version:)"},
		},
		{
			name:    "3.0.0 link without a target: valid in 3.0.0, not once translated",
			file:    "old-link.ign",
			raw:     `{"ignition":{"version":"3.0.0"},"storage":{"links":[{"path":"/x"}]}}`,
			want:    []string{"link target is required"},
			context: "$.storage.links.0.target",
		},
		{
			name: "YAML with two MachineConfigs",
			file: "two.yaml",
			raw:  "kind: MachineConfig\nspec:\n  kernelArguments: [a]\n---\nkind: MachineConfig\nspec:\n  kernelArguments: [b]\n",
			want: []string{"holds 2 YAML documents"},
		},
		{
			name: "YAML that is nothing",
			file: "empty.yml",
			raw:  "",
			want: []string{"must hold a MachineConfig"},
		},
		{
			name: "YAML of another kind",
			file: "pod.yaml",
			raw:  "apiVersion: v1\nkind: Pod\n",
			want: []string{`unsupported object kind "Pod"`},
		},
		{
			name: "JSON of another kind",
			file: "pod.json",
			raw:  `{"apiVersion": "v1", "kind": "Pod"}`,
			want: []string{`unsupported object kind "Pod"`},
		},
		{
			name:    "MachineConfig with a bad spec.config",
			file:    "99-worker.yaml",
			raw:     "apiVersion: machineconfiguration.openshift.io/v1\nkind: MachineConfig\nspec:\n  config:\n    ignition:\n      version: 3.2.0\n    storage:\n      files:\n      - path: etc/chrony.conf\n",
			want:    []string{"path not absolute"},
			context: "spec.config.storage.files.0.path",
		},
		{
			name:    "MachineConfig with an unknown spec in spec.config",
			file:    "99-worker.yaml",
			raw:     "kind: MachineConfig\nspec:\n  config:\n    ignition:\n      version: 3.6.0-experimental\n",
			want:    []string{`unsupported config version "3.6.0-experimental"`},
			context: "spec.config",
			is:      ignerrors.ErrUnknownVersion,
		},
		{
			name:    "MachineConfig whose spec.config is not an object",
			file:    "99-worker.yaml",
			raw:     "kind: MachineConfig\nspec:\n  config: hello\n",
			want:    []string{"cannot unmarshal string"},
			context: "spec.config",
		},
		{
			name:    "MachineConfig with a gzip data URL that is not gzip",
			file:    "99-worker.json",
			raw:     `{"kind": "MachineConfig", "spec": {"config": {"ignition": {"version": "3.2.0"}, "storage": {"files": [{"path": "/x", "contents": {"source": "data:,x", "compression": "gzip"}}]}}}}`,
			want:    []string{"gzip data URL"},
			context: "spec.config.storage.files.0",
		},
		{
			name: "MachineConfig with kernelArguments that are not strings",
			file: "99-kargs.yaml",
			raw:  "kind: MachineConfig\nspec:\n  kernelArguments:\n    a: b\n",
			want: []string{"invalid MachineConfig"},
		},
		// Ignition's config cache (the Ignition reader's cache.go): what the stable spec cannot
		// carry is refused, naming the field.
		{
			// 3.7.0-experimental adds no field, but values: a virtiofs
			// file system, whose device is a tag, which 3.6.0's rules
			// refuse.
			name: "cache: a virtiofs file system in 3.7.0-experimental",
			file: cacheFile,
			raw:  `{"ignition":{"version":"3.7.0-experimental"},"storage":{"filesystems":[{"device":"share","format":"virtiofs","path":"/mnt"}]}}`,
			want: []string{"path not absolute"},
			line: 1, column: 82, context: "$.storage.filesystems.0.device",
		},
		{
			name: "cache: a key 3.6.0 lacks in 3.6.0-experimental",
			file: cacheFile,
			raw:  `{"ignition":{"version":"3.6.0-experimental"},"storage":{"files":[{"path":"/etc/a","mdoe":420}]}}`,
			want: []string{`"mdoe" is no field of spec 3.6.0`, "3.6.0-experimental"},
			line: 1, column: 83, context: "$.storage.files.0.mdoe",
		},
		{
			name: "cache: a key 3.4.0 lacks in 3.4.0-experimental",
			file: cacheFile,
			raw:  "{\"ignition\":{\"version\":\"3.4.0-experimental\"},\n\"storage\":{\"luks\":[{\"name\":\"root\",\"cex\":{\"enabled\":true}}]}}",
			want: []string{`"cex" is no field of spec 3.4.0`, "3.4.0-experimental"},
			line: 2, column: 35, context: "$.storage.luks.0.cex",
		},
		{
			name: "cache: invalid in 3.7.0-experimental (Ignition's own validation)",
			file: cacheFile,
			raw:  `{"ignition":{"version":"3.7.0-experimental"},"storage":{"files":[{"path":"etc/x"}]}}`,
			want: []string{"path not absolute"},
			line: 1, column: 74, context: "$.storage.files.0.path",
		},
		{
			name: "cache: invalid in 3.4.0-experimental",
			file: cacheFile,
			raw:  `{"ignition":{"version":"3.4.0-experimental"},"storage":{"files":[{"path":"etc/x"}]}}`,
			want: []string{"path not absolute"},
			line: 1, column: 74, context: "$.storage.files.0.path",
		},
		{
			name: "cache: unparsable",
			file: cacheFile,
			raw:  `{"ignition":{"version":"3.7.0-experimental"},}`,
			want: []string{"invalid character '}'"},
			line: 1, column: 46,
		},
		{
			name: "cache: a newer experimental spec",
			file: cacheFile,
			raw:  `{"ignition":{"version":"3.8.0-experimental"}}`,
			want: []string{`"3.8.0-experimental"`, "cannot read"},
			is:   ignerrors.ErrUnknownVersion,
		},
		{
			name:    "cache: a replace child",
			file:    cacheFile,
			raw:     `{"ignition":{"version":"3.7.0-experimental","config":{"replace":{"source":"https://example.com/c.ign"}}}}`,
			want:    []string{"names a replace child", "no Ignition config cache"},
			context: "$.ignition.config.replace",
		},
		{
			name: "cache: a MachineConfig",
			file: cacheFile,
			raw:  `{"kind":"MachineConfig","spec":{"config":{"ignition":{"version":"3.5.0"}}}}`,
			want: []string{"not a MachineConfig"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sameAsIgnition(t, tt.file, []byte(tt.raw)) // and the quick path refuses it as Ignition does
			frag, err := Parse(tt.file, []byte(tt.raw))
			if err == nil {
				t.Fatalf("Parse(%q) = %+v, want an error", tt.file, frag.Config)
			}
			var le *configerr.LoadError
			if !errors.As(err, &le) {
				t.Fatalf("Parse error %v (%T) is not a *LoadError", err, err)
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, tt.file+":") {
				t.Errorf("message %q does not start with the file name %q", msg, tt.file)
			}
			if got, want := [3]any{le.File, le.Line, le.Column}, [3]any{tt.file, tt.line, tt.column}; got != want {
				t.Errorf("file, line, column = %v, want %v (message %q)", got, want, msg)
			}
			if tt.line > 0 && !strings.HasPrefix(msg, fmt.Sprintf("%s:%d:%d: ", tt.file, tt.line, tt.column)) {
				t.Errorf("message %q does not start with file:line:column", msg)
			}
			if le.Context != tt.context {
				t.Errorf("context = %q, want %q (message %q)", le.Context, tt.context, msg)
			}
			for _, w := range tt.want {
				if !strings.Contains(msg, w) {
					t.Errorf("message %q does not contain %q", msg, w)
				}
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("errors.Is(%v, %v) = false", err, tt.is)
			}
		})
	}
}

func TestLoadFileErrors(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing.ign")
	_, err := loadFile(missing)
	var le *configerr.LoadError
	if !errors.As(err, &le) || le.File != missing || !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("loadFile(missing) = %v, want a LoadError naming %s that is fs.ErrNotExist", err, missing)
	}
	if err != nil && !strings.HasPrefix(err.Error(), missing+": ") {
		t.Errorf("message %q does not start with the file name", err)
	}

	asDir := filepath.Join(dir, "dir.ign")
	if err := os.Mkdir(asDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := loadFile(asDir); err == nil || !strings.HasPrefix(err.Error(), asDir+": ") {
		t.Errorf("loadFile(a directory) = %v, want an error naming it", err)
	}

	good := filepath.Join(dir, "good.ign")
	writeFile(t, good, `{"ignition":{"version":"3.3.0"},"storage":{"files":[{"path":"/etc/a"}]}}`)
	frag, err := loadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	if frag.File != good || len(frag.Config.Storage.Files) != 1 {
		t.Errorf("loadFile(good) = %+v", frag)
	}
}

// specConfig is a config of a given spec that uses every kind of entry its
// spec knows.
func specConfig(version string) string {
	kargs := ""
	if version >= "3.3.0" {
		kargs = `,"kernelArguments":{"shouldExist":["nosmt"],"shouldNotExist":["quiet"]}`
	}
	return `{
  "ignition": {"version": "` + version + `"},
  "storage": {
    "files": [{"path": "/etc/motd", "mode": 420, "overwrite": true, "contents": {"source": "data:,hello%0A"},
               "append": [{"source": "data:,more%0A"}]}],
    "directories": [{"path": "/etc/d", "mode": 493}],
    "links": [{"path": "/etc/l", "target": "motd"}, {"path": "/etc/h", "target": "/etc/motd", "hard": true}]
  },
  "systemd": {"units": [{"name": "a.service", "enabled": true, "contents": "[Unit]\n",
                         "dropins": [{"name": "10-x.conf", "contents": "[Service]\n"}]},
                        {"name": "b.service", "mask": true}]},
  "passwd": {"users": [{"name": "core", "sshAuthorizedKeys": ["ssh-ed25519 AAAA core@example"]}]}` + kargs + `
}`
}

func TestParseSpecVersions(t *testing.T) {
	for _, v := range types.Versions() {
		t.Run(v, func(t *testing.T) {
			frag, err := Parse("spec-"+v+".ign", []byte(specConfig(v)))
			if err != nil {
				t.Fatal(err)
			}
			c := frag.Config
			if c.Ignition.Version != types.MaxVersion.String() {
				t.Errorf("version = %q, want the config translated to %s", c.Ignition.Version, types.MaxVersion)
			}
			got := []string{c.Storage.Files[0].Path, c.Storage.Directories[0].Path, c.Storage.Links[0].Path,
				c.Storage.Links[1].Path, c.Systemd.Units[0].Name, c.Systemd.Units[0].Dropins[0].Name,
				c.Systemd.Units[1].Name, c.Passwd.Users[0].Name}
			want := []string{"/etc/motd", "/etc/d", "/etc/l", "/etc/h", "a.service", "10-x.conf", "b.service", "core"}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("translated config (-want +got):\n%s", diff)
			}
			st, err := derive.Derive(c, emptyAccounts{})
			if err != nil {
				t.Fatal(err)
			}
			wantKinds := map[model.Kind]int{model.KindFile: 1, model.KindDirectory: 1, model.KindLink: 1, model.KindHardLink: 1, model.KindUnit: 1,
				model.KindDropin: 1, model.KindEnablement: 1, model.KindMask: 1, model.KindSSHKeys: 1, model.KindUser: 1}
			if v >= "3.3.0" {
				wantKinds[model.KindKernelArg] = 2
			}
			gotKinds := map[model.Kind]int{}
			for _, e := range st.Entries {
				gotKinds[e.Kind]++
			}
			if diff := cmp.Diff(wantKinds, gotKinds); diff != "" {
				t.Errorf("entries per kind (-want +got):\n%s", diff)
			}
		})
	}
}

const machineConfigYAML = `apiVersion: machineconfiguration.openshift.io/v1
kind: MachineConfig
metadata:
  name: 99-worker-chrony
  labels:
    machineconfiguration.openshift.io/role: worker
spec:
  config:
    ignition:
      version: 3.2.0
    storage:
      files:
      - path: /etc/chrony.conf
        mode: 420
        overwrite: true
        contents:
          source: data:,server%20ntp.example.com%0A
  kernelArguments:
  - nosmt
  - mitigations=auto,nosmt  quiet
  - 'foo="bar baz"'
  osImageURL: ""
`

const machineConfigJSON = `{
  "apiVersion": "machineconfiguration.openshift.io/v1",
  "kind": "MachineConfig",
  "metadata": {"name": "99-worker-chrony"},
  "spec": {
    "config": {"ignition": {"version": "3.2.0"},
               "storage": {"files": [{"path": "/etc/chrony.conf", "mode": 420, "overwrite": true,
                                      "contents": {"source": "data:,server%20ntp.example.com%0A"}}]}},
    "kernelArguments": ["nosmt", "mitigations=auto,nosmt  quiet", "foo=\"bar baz\""]
  }
}`

func TestParseMachineConfig(t *testing.T) {
	wantArgs := []types.KernelArgument{"nosmt", "mitigations=auto,nosmt", "quiet", `foo="bar baz"`}
	for _, tt := range []struct{ file, raw string }{
		{"99-worker-chrony.yaml", machineConfigYAML},
		{"99-worker-chrony.yml", machineConfigYAML},
		{"99-worker-chrony.json", machineConfigJSON},
	} {
		t.Run(tt.file, func(t *testing.T) {
			frag, err := Parse(tt.file, []byte(tt.raw))
			if err != nil {
				t.Fatal(err)
			}
			c := frag.Config
			if c.Ignition.Version != types.MaxVersion.String() || len(c.Storage.Files) != 1 || c.Storage.Files[0].Path != "/etc/chrony.conf" {
				t.Errorf("spec.config not parsed: %+v", c)
			}
			if diff := cmp.Diff(wantArgs, c.KernelArguments.ShouldExist); diff != "" {
				t.Errorf("kernel arguments (-want +got):\n%s", diff)
			}
			st, err := derive.Derive(c, emptyAccounts{})
			if err != nil {
				t.Fatal(err)
			}
			if got := string(st.Entries[0].Content.Exact); got != "server ntp.example.com\n" {
				t.Errorf("content = %q", got)
			}
		})
	}

	t.Run("kernel arguments only", func(t *testing.T) {
		frag, err := Parse("05-kargs.yaml", []byte("kind: MachineConfig\nspec:\n  kernelArguments: [nosmt]\n"))
		if err != nil {
			t.Fatal(err)
		}
		if frag.Config.Ignition.Version != types.MaxVersion.String() || len(frag.Config.KernelArguments.ShouldExist) != 1 {
			t.Errorf("config = %+v", frag.Config)
		}
	})
	t.Run("null config", func(t *testing.T) {
		if _, err := Parse("05-null.yaml", []byte("kind: MachineConfig\nspec:\n  config: null\n")); err != nil {
			t.Error(err)
		}
	})
}

func TestSplitKernelArguments(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"  ", nil},
		{"a", []string{"a"}},
		{" a  b\tc\nd\re\vf\fg ", []string{"a", "b", "c", "d", "e", "f", "g"}},
		{`foo="bar baz" x`, []string{`foo="bar baz"`, "x"}},
		{`"a b" c`, []string{`"a b"`, "c"}},
		{`unterminated="a b`, []string{`unterminated="a b`}},
		// The cases of drift's SplitCmdline, which this replaced.
		{"\n", nil},
		{"BOOT_IMAGE=(hd0,gpt3)/vmlinuz root=UUID=x rw\n", []string{"BOOT_IMAGE=(hd0,gpt3)/vmlinuz", "root=UUID=x", "rw"}},
		{"  a \t b\n", []string{"a", "b"}},
		{"a\rb\vc\fd", []string{"a", "b", "c", "d"}},
		{`foo="bar baz" qux`, []string{`foo="bar baz"`, "qux"}},
		{`"quoted whole" x`, []string{`"quoted whole"`, "x"}},
		{`a="x y"z b`, []string{`a="x y"z`, "b"}},
		{`open="never closed x`, []string{`open="never closed x`}},
		{`e=""`, []string{`e=""`}},
		{"ünï=cödé", []string{"ünï=cödé"}},
		{"bad=\xff x", []string{"bad=\xff", "x"}},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, model.SplitKernelArguments(tt.in)); diff != "" {
			t.Errorf("SplitKernelArguments(%q) (-want +got):\n%s", tt.in, diff)
		}
	}
}

func TestParseWarnings(t *testing.T) {
	frag, err := Parse("w.ign", []byte(`{"ignition":{"version":"3.5.0"},"storage":{"files":[{"path":"/x"}]},"unknownKey":1}`))
	if err != nil {
		t.Fatal(err)
	}
	if len(frag.Warnings) == 0 || !strings.Contains(strings.Join(frag.Warnings, "\n"), "unknownKey") {
		t.Errorf("warnings = %q, want one about unknownKey", frag.Warnings)
	}
}

func mustParse(t *testing.T, file, raw string) parsed.Fragment {
	t.Helper()
	f, err := Parse(file, []byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestMerge(t *testing.T) {
	file := `{"ignition":{"version":"3.1.0"},"storage":{"files":[{"path":"/x","overwrite":true,"contents":{"source":"data:,first"}}]}}`
	dir := `{"ignition":{"version":"3.4.0"},"storage":{"directories":[{"path":"/x"}]}}`
	link := `{"ignition":{"version":"3.4.0"},"storage":{"links":[{"path":"/x","target":"/y"}]}}`
	later := `{"ignition":{"version":"3.5.0"},"storage":{"files":[{"path":"/x","overwrite":true,"contents":{"source":"data:,second"}}]}}`

	conflicts := []struct {
		name   string
		frags  []parsed.Fragment
		file   string
		want   string
		ctxStr string
	}{
		{"file then directory", []parsed.Fragment{mustParse(t, "10-a.ign", file), mustParse(t, "20-b.ign", dir)},
			"20-b.ign", `"/x" is declared as a directory here and as a file in 10-a.ign`, "$.storage.directories.0"},
		{"directory then file", []parsed.Fragment{mustParse(t, "10-a.ign", dir), mustParse(t, "20-b.ign", file)},
			"20-b.ign", `"/x" is declared as a file here and as a directory in 10-a.ign`, "$.storage.files.0"},
		{"file then link", []parsed.Fragment{mustParse(t, "10-a.ign", file), mustParse(t, "20-b.ign", link)},
			"20-b.ign", `"/x" is declared as a link here and as a file in 10-a.ign`, "$.storage.links.0"},
	}
	for _, tt := range conflicts {
		t.Run(tt.name, func(t *testing.T) {
			_, err := merge.All(tt.frags)
			var le *configerr.LoadError
			if !errors.As(err, &le) {
				t.Fatalf("Merge = %v, want a LoadError", err)
			}
			if le.File != tt.file || le.Context != tt.ctxStr || !strings.Contains(err.Error(), tt.want) ||
				!strings.HasPrefix(err.Error(), tt.file+": ") {
				t.Errorf("Merge error = %q (file %q, context %q), want it to name %s at %s and say %q",
					err, le.File, le.Context, tt.file, tt.ctxStr, tt.want)
			}
		})
	}

	t.Run("a later fragment replaces an entry of the same type", func(t *testing.T) {
		cfg, err := merge.All([]parsed.Fragment{mustParse(t, "10-a.ign", file), mustParse(t, "20-b.ign", later)})
		if err != nil {
			t.Fatal(err)
		}
		st, err := derive.Derive(cfg, emptyAccounts{})
		if err != nil {
			t.Fatal(err)
		}
		if len(st.Entries) != 1 || string(st.Entries[0].Content.Exact) != "second" {
			t.Errorf("entries = %+v, want one file holding \"second\"", st.Entries)
		}
	})
	t.Run("no fragments", func(t *testing.T) {
		cfg, err := merge.All(nil)
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Ignition.Version != types.MaxVersion.String() {
			t.Errorf("version = %q", cfg.Ignition.Version)
		}
	})
}

func TestLoadState(t *testing.T) {
	root := t.TempDir()
	writeFile(t, filepath.Join(root, "etc/passwd"), "root:x:0:0::/root:/bin/sh\nalice:x:1000:1001::/home/alice:/bin/sh\n")
	writeFile(t, filepath.Join(root, "etc/group"), "root:x:0:\nstaff:x:50:\n")
	writeFile(t, filepath.Join(root, "usr/lib/drift-monitor/desired.d/10-base.ign"),
		`{"ignition":{"version":"3.0.0"},"storage":{"files":[{"path":"/etc/b","user":{"name":"alice"},"group":{"name":"staff"}}]}}`)
	writeFile(t, filepath.Join(root, "etc/drift-monitor/desired.d/20-mc.yaml"),
		"kind: MachineConfig\nspec:\n  config:\n    ignition: {version: 3.2.0}\n    storage:\n      directories: [{path: /etc/a}]\n")

	st, err := LoadState(dirHost(root), nil)
	if err != nil {
		t.Fatal(err)
	}
	wantFiles := []string{filepath.Join(root, "usr/lib/drift-monitor/desired.d/10-base.ign"),
		filepath.Join(root, "etc/drift-monitor/desired.d/20-mc.yaml")}
	if diff := cmp.Diff(wantFiles, st.Files); diff != "" {
		t.Errorf("Files (-want +got):\n%s", diff)
	}
	want := []model.Entry{
		// Neither node is created afresh: no mode (nor owner) is desired.
		// The MachineConfig's is written by the MCD, which never relabels.
		{Kind: model.KindDirectory, Path: "/etc/a", Type: model.TypeDirectory, NotRelabelled: true},
		{Kind: model.KindFile, Path: "/etc/b", Type: model.TypeRegular, UID: ptr(1000), GID: ptr(50)},
	}
	if diff := cmp.Diff(want, st.Entries, cmpEntries); diff != "" {
		t.Errorf("Entries (-want +got):\n%s", diff)
	}

	// A bad fragment fails the load, naming it.
	bad := filepath.Join(root, "etc/drift-monitor/desired.d/30-bad.ign")
	writeFile(t, bad, `{"ignition":{"version":"3.0.0"},`)
	if _, err := LoadState(dirHost(root), nil); err == nil || !strings.HasPrefix(err.Error(), bad+":") {
		t.Errorf("LoadState with a bad fragment = %v, want an error naming %s", err, bad)
	}
}
