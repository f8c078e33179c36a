package desired

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/drift-monitor/drift-monitor/internal/desired/butane"
	"github.com/drift-monitor/drift-monitor/internal/desired/configerr"
	"github.com/drift-monitor/drift-monitor/internal/desired/discover"
	"github.com/drift-monitor/drift-monitor/internal/model"
)

// butaneFile is a Butane config of variant and version declaring one file,
// /etc/from-butane, with mode 0640 and the contents "hello".
func butaneFile(variant, version string) string {
	return "variant: " + variant + "\nversion: " + version + "\n" + `storage:
  files:
    - path: /etc/from-butane
      mode: 0640
      contents:
        inline: hello
`
}

// TestButaneVariants: every variant Butane knows translates, with the
// module's own translator, into the fragment Ignition (or, for openshift,
// the machine-config daemon) applies.
func TestButaneVariants(t *testing.T) {
	for _, c := range []struct {
		name, file, variant, version string
		mc                           bool
	}{
		{"fcos 1.7.0 (Ignition 3.6.0)", "a.bu", "fcos", "1.7.0", false},
		{"fcos 1.0.0 (Ignition 3.0.0)", "a.bu", "fcos", "1.0.0", false},
		{"fcos in a .yaml file", "a.yaml", "fcos", "1.6.0", false},
		{"fcos in a .yml file", "a.yml", "fcos", "1.5.0", false},
		{"flatcar 1.1.0", "a.bu", "flatcar", "1.1.0", false},
		{"r4e 1.1.0", "a.bu", "r4e", "1.1.0", false},
		{"fiot 1.0.0", "a.bu", "fiot", "1.0.0", false},
		{"openshift 4.22.0: a MachineConfig", "a.bu", "openshift", "4.22.0", true},
		{"openshift 4.8.0 in a .yaml file", "99-worker.yaml", "openshift", "4.8.0", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := butaneFile(c.variant, c.version)
			if c.variant == "openshift" {
				src += "metadata:\n  name: 99-worker-butane\n  labels:\n    machineconfiguration.openshift.io/role: worker\n"
			}
			frag, err := Parse(c.file, []byte(src))
			if err != nil {
				t.Fatal(err)
			}
			if frag.File != c.file || frag.MachineConfig != c.mc {
				t.Errorf("fragment %q, MachineConfig %v; want %q, %v", frag.File, frag.MachineConfig, c.file, c.mc)
			}
			fs := frag.Config.Storage.Files
			if len(fs) != 1 || fs[0].Path != "/etc/from-butane" || fs[0].Mode == nil || *fs[0].Mode != 0o640 ||
				fs[0].Contents.Source == nil || !strings.Contains(*fs[0].Contents.Source, "hello") {
				t.Errorf("files %+v; want /etc/from-butane 0640 with hello", fs)
			}
		})
	}
}

// TestButaneNotButane: what is not Butane is read as before.
func TestButaneNotButane(t *testing.T) {
	// Ignition JSON in a .bu file: Ignition's Parse reads it as JSON first.
	frag, err := Parse("a.bu", []byte(`{"ignition":{"version":"3.6.0"},"storage":{"files":[{"path":"/etc/j"}]}}`))
	if err != nil || len(frag.Config.Storage.Files) != 1 || frag.Config.Storage.Files[0].Path != "/etc/j" {
		t.Errorf("Ignition JSON in a .bu: %v, %+v", err, frag.Config.Storage)
	}
	// A MachineConfig that happens to have a version field somewhere.
	mc := "apiVersion: machineconfiguration.openshift.io/v1\nkind: MachineConfig\nvariant: x\nversion: 1\nspec:\n  config:\n    ignition: {version: 3.2.0}\n"
	if frag, err := Parse("mc.yaml", []byte(mc)); err != nil || !frag.MachineConfig {
		t.Errorf("a MachineConfig with variant: and version: keys: %v, MachineConfig %v", err, frag.MachineConfig)
	}
	// YAML that is neither says what it may be.
	_, err = Parse("x.yaml", []byte("foo: bar\n"))
	if err == nil || !strings.Contains(err.Error(), "x.yaml: a YAML file must hold a MachineConfig (kind: MachineConfig) or a Butane config (variant: and version:)") {
		t.Errorf("plain YAML: %v", err)
	}
}

// TestButaneErrors: Butane's errors name the file, line and column Butane
// reports; files-dir (local contents, trees) is refused as such.
func TestButaneErrors(t *testing.T) {
	for _, c := range []struct {
		name, src string
		want      string // the whole message
	}{
		{"not absolute", "variant: fcos\nversion: 1.7.0\nstorage:\n  files:\n    - path: etc/x\n",
			"a.bu:5:13: $.storage.files.0.path: Butane: path not absolute"},
		{"local contents", "variant: fcos\nversion: 1.7.0\nstorage:\n  files:\n    - path: /etc/x\n      contents:\n        local: x.txt\n",
			"a.bu:7:16: $.storage.files.0.contents.local: Butane: " + butane.ErrFilesDir.Error()},
		{"trees", "variant: fcos\nversion: 1.7.0\nstorage:\n  trees:\n    - local: tree\n      path: /etc/tree\n",
			"a.bu:5:7: $.storage.trees.0: Butane: " + butane.ErrFilesDir.Error()},
		{"unknown version", "variant: fcos\nversion: 9.0.0\n",
			"a.bu: Butane: No translator exists for variant fcos with version 9.0.0"},
		{"no variant", "version: 1.7.0\nstorage: {}\n", "a.bu: Butane: error parsing variant; must be specified"},
		{"bad YAML", "variant: fcos\nversion: 1.7.0\nstorage: [\n", "a.bu:3:1: Butane: invalid YAML: yaml: did not find expected node content"},
		// go-yaml says "line 4", where the sequence starts; the error is
		// on line 7.
		{"bad YAML inside a sequence", "variant: fcos\nversion: 1.5.0\nstorage:\n  files:\n    - path: /etc/a\n      mode: 420\n     - path: /etc/b\n",
			"a.bu:7:6: Butane: invalid YAML: yaml: did not find expected '-' indicator"},
		{"a wrong type", "variant: fcos\nversion: 1.7.0\nstorage:\n  files:\n    - path: /etc/x\n      mode: rw\n",
			"a.bu:6:7: Butane: invalid YAML: cannot unmarshal !!str `rw` into int"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse("a.bu", []byte(c.src))
			var le *configerr.LoadError
			if !errors.As(err, &le) {
				t.Fatalf("error %v (%T), want a LoadError", err, err)
			}
			if err.Error() != c.want {
				t.Errorf("error:\n got %q\nwant %q", err.Error(), c.want)
			}
		})
	}
	// An experimental Butane version translates to an experimental spec,
	// which is not a desired state (only Ignition's cache may be one).
	_, err := Parse("a.bu", []byte(butaneFile("fcos", "1.8.0-experimental")))
	if err == nil || !strings.HasPrefix(err.Error(), "a.bu: in the config Butane translated it to: ") || !strings.Contains(err.Error(), "3.7.0-experimental") {
		t.Errorf("fcos 1.8.0-experimental: %v", err)
	}
}

// TestButaneFragmentListed: a .bu file in a desired-state directory is a
// fragment, merged in its place by name.
func TestButaneFragmentListed(t *testing.T) {
	root := t.TempDir()
	d := filepath.Join(root, model.AdminDir)
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(d, "50-site.bu"), []byte(butaneFile("fcos", "1.7.0")), 0o600); err != nil {
		t.Fatal(err)
	}
	if ig := discover.IgnoredFiles(dirHost(root), nil); len(ig) != 0 {
		t.Errorf("a .bu file is reported not loaded: %v", ig)
	}
	st, err := LoadState(dirHost(root), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Files) != 1 || !strings.HasSuffix(st.Files[0], "50-site.bu") || len(st.Entries) == 0 {
		t.Fatalf("state from %v: %d entries", st.Files, len(st.Entries))
	}
	found := false
	for _, e := range st.Entries {
		found = found || e.Path == "/etc/from-butane"
	}
	if !found {
		t.Errorf("no entry for /etc/from-butane in %+v", st.Entries)
	}
}

// TestButaneWarnings: Butane's warnings (an unused key) are the fragment's,
// with their line and column, as Ignition's are.
func TestButaneWarnings(t *testing.T) {
	frag, err := Parse("w.bu", []byte("variant: fcos\nversion: 1.7.0\nbogus: 1\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(frag.Warnings) != 1 || frag.Warnings[0] != "line 3 column 1: Butane: unused key bogus" {
		t.Errorf("warnings %q; want Butane's unused key, at line 3 column 1", frag.Warnings)
	}
}
