package blackbox

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/drift-monitor/drift-monitor/test/harness"
)

// TestCheckButaneFragment: a Butane config in desired.d is a fragment:
// what it declares is checked (/opt/file declared in a .bu file and
// missing is drift, not "nothing to check"), and a Butane error
// names the file, line and column, exit 2.
func TestCheckButaneFragment(t *testing.T) {
	root := t.TempDir()
	d := filepath.Join(root, "etc/drift-monitor/desired.d")
	if err := os.MkdirAll(d, 0o700); err != nil {
		t.Fatal(err)
	}
	bu := filepath.Join(d, "50-site.bu")
	if err := os.WriteFile(bu, []byte(`variant: fcos
version: 1.7.0
storage:
  files:
    - path: /opt/file
      mode: 0644
      contents:
        inline: from Butane
`), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errs := checkRoot(t, root, "--format", "json")
	var rep harness.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != 1 || len(rep.Drift) != 1 ||
		rep.Drift[0].Path != "/opt/file" || rep.Drift[0].Kind != "missing" {
		t.Fatalf("a .bu declaring a missing /opt/file: exit %d (%v), stderr %q; want 1 and /opt/file missing:\n%s", code, err, errs, out)
	}
	if len(rep.Configs) != 1 || rep.Configs[0] != "/etc/drift-monitor/desired.d/50-site.bu" {
		t.Errorf("configs %q, want the .bu file", rep.Configs)
	}
	if err := os.MkdirAll(filepath.Join(root, "opt"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "opt/file"), []byte("from Butane"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out, errs := checkRoot(t, root); code != 0 || out != "No drift: 1 entry matches 1 config file.\n" {
		t.Errorf("with /opt/file as declared: exit %d, %q, %q; want 0", code, out, errs)
	}

	if err := os.WriteFile(bu, []byte("variant: fcos\nversion: 1.7.0\nstorage:\n  files:\n    - path: /opt/file\n      contents:\n        local: file.txt\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errs = checkRoot(t, root)
	want := "drift-monitor check: " + bu + ":7:16: $.storage.files.0.contents.local: Butane: local file contents (local:, trees) are not supported"
	if code != 2 || out != "" || !strings.HasPrefix(errs, want) {
		t.Errorf("a .bu with local contents: exit %d, stdout %q, stderr %q; want 2 and %q", code, out, errs, want)
	}
}

// TestReleaseBinaryTranslatesEveryVariant: the binary the tiers run is the
// release build (tools/release-goenv.sh: Butane's module without its test
// helpers), and it still translates every variant Butane knows, as
// internal/desired's TestButaneVariants does with the library: a root that
// holds what each declares checks clean.
func TestReleaseBinaryTranslatesEveryVariant(t *testing.T) {
	for _, c := range []struct{ name, file, variant, version string }{
		{"fcos 1.7.0", "a.bu", "fcos", "1.7.0"},
		{"fcos 1.0.0", "a.bu", "fcos", "1.0.0"},
		{"fcos in a .yaml file", "a.yaml", "fcos", "1.6.0"},
		{"flatcar 1.1.0", "a.bu", "flatcar", "1.1.0"},
		{"r4e 1.1.0", "a.bu", "r4e", "1.1.0"},
		{"fiot 1.0.0", "a.bu", "fiot", "1.0.0"},
		{"openshift 4.22.0", "a.bu", "openshift", "4.22.0"},
		{"openshift 4.8.0 in a .yaml file", "99-worker.yaml", "openshift", "4.8.0"},
	} {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			if err := os.MkdirAll(filepath.Join(root, "etc/drift-monitor/desired.d"), 0o700); err != nil {
				t.Fatal(err)
			}
			src := "variant: " + c.variant + "\nversion: " + c.version + "\nstorage:\n  files:\n    - path: /etc/from-butane\n      mode: 0640\n      contents:\n        inline: hello\n"
			if c.variant == "openshift" {
				src += "metadata:\n  name: 99-worker-butane\n  labels:\n    machineconfiguration.openshift.io/role: worker\n"
			}
			if err := os.WriteFile(filepath.Join(root, "etc/drift-monitor/desired.d", c.file), []byte(src), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(root, "etc/from-butane"), []byte("hello"), 0o640); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(filepath.Join(root, "etc/from-butane"), 0o640); err != nil {
				t.Fatal(err)
			}
			code, out, errs := checkRoot(t, root, "--format", "json")
			var rep harness.Report
			if err := json.Unmarshal([]byte(out), &rep); err != nil || code != 0 || rep.Checked < 1 {
				t.Fatalf("exit %d (%v), want 0 and the file checked; stderr %q:\n%s", code, err, errs, out)
			}
		})
	}
}
