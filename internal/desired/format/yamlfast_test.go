package format

import (
	"bytes"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// yamlSeeds are MachineConfigs as sigs.k8s.io/yaml's JSONToYAML writes
// them, the first ones of the shape the fast path is for (plain, which it
// must answer), and YAML of every shape it must leave to go-yaml or
// resolve as go-yaml does.
func yamlSeeds(t testing.TB) (written []string, plain int, made []string) {
	for _, j := range []string{
		`{"apiVersion":"machineconfiguration.openshift.io/v1","kind":"MachineConfig","metadata":{"name":"99-bench","labels":{"machineconfiguration.openshift.io/role":"worker"}},` +
			`"spec":{"config":{"ignition":{"version":"3.2.0"},"storage":{"files":[{"path":"/etc/a","mode":420,"overwrite":true,"contents":{"source":"data:;base64,ZmlsZSAwCmFhYWFh"}},` +
			`{"path":"/etc/b","contents":{"source":"data:,a%20b#c: d"},"user":{"name":"core"}},{"path":"/etc/c","contents":{"source":"data:,it's \"q\" <&>"}}],` +
			`"directories":[{"path":"/etc/d","mode":493}],"links":[{"path":"/etc/l","target":"/etc/a","hard":false}]},` +
			`"systemd":{"units":[{"name":"a.service","enabled":true,"contents":"[Unit]\nDescription=x\n\n[Install]\nWantedBy=multi-user.target\n"},` +
			`{"name":"b.service","mask":true},{"name":"c.service","contents":"no newline","dropins":[{"name":"x.conf","contents":"[Service]\nX=1"}]}]},` +
			`"passwd":{"users":[{"name":"core","sshAuthorizedKeys":["ssh-ed25519 AAAA core@host"]}]}},` +
			`"kernelArguments":["nosmt","a=b","y","no","1","0755"],"osImageURL":"","fips":false,"extensions":[],"kernelType":"default"}}`,
		`{"kind":"MachineConfig","spec":{"config":{"ignition":{"version":"3.2.0"}},"kernelArguments":[]},"metadata":{"name":"x","labels":{}}}`,
		// Beyond the fast path's shapes.
		`{"kind":"MachineConfig","spec":{"config":{"ignition":{"version":"3.2.0"},"systemd":{"units":[{"name":"x.service","contents":"  indented first\nthen\n\n\n"}]}}}}`,
		`{"kind":"MachineConfig","metadata":{"name":"2024-10-01"},"spec":{"config":{"ignition":{"version":"3.4.0"}},"kernelArguments":["-1","1.5","1e3","0x10","+1",".5","~","null","true","on","2001-12-14"]}}`,
		`{"kind":"MachineConfig","spec":{"config":{"ignition":{"version":"3.2.0"},"storage":{"files":[{"path":"/etc/e","contents":{"source":""}}]}}},"metadata":{"annotations":{"a":"b: c","d":" lead","e":"trail ","f":"#x","g":"- x","h":"x\ty","i":"é"}}}`,
	} {
		y, err := yaml.JSONToYAML([]byte(j))
		if err != nil {
			t.Fatal(err)
		}
		written = append(written, string(y))
	}
	plain = 2
	made = []string{
		"a: 1\n", "a: 01\n", "a: 0755\n", "a: 123456789012345678901\n", "a: -1\n", "a: +1\n", "a: 1_000\n", "a: 0x1F\n", "a: 0b101\n", "a: 1.5\n", "a: 3.2.0\n",
		"a: 99-worker\n", "a: 2024-bench\n", "a: 2001-12-14\n", "a: 2001-12-14t21:59:43.10-05:00\n", "a: 1-2\n", "a: 9-x.y\n", "a: .inf\n", "a: .5\n",
		"a: y\n", "a: yes\n", "a: Off\n", "a: ~\n", "a: null\n", "a: nope\n", "a:\n", "a: ''\n", "a: ''''\n", "a: 'x''y'\n", "a: 'x\n", "a: \"x\"\n", "a: \"x\\ty\"\n",
		"y: 1\n", "1: a\n", "on: a\n", "a: 1\na: 2\n", "a: b # comment\n", "# c\na: b\n", "a: &x b\nc: *x\n", "a: !!str 1\n", "a: [1, 2]\n", "a: {b: c}\n",
		"a: b\n  c\n", "a: 'b\n  c'\n", "a:\n  b: c\n d: e\n", "a:\n- b\n- c\nd: e\n", "a:\n  - b\n  - c\n", "a:\n- b: c\n  d: e\n- f\n", "- a\n- b\n",
		"a:\n- - b\n", "a:\n-\n  b: c\n", "---\na: b\n", "a: b\n...\n", "a: b", "a:\tb\n", "a: b\r\n", "a:  b\n", "a: b \n", "a : b\n",
		"a: |\n  x\n  y\n", "a: |-\n  x\n\n", "a: |+\n  x\n\n", "a: |2\n   x\n", "a: >\n  x\n  y\n", "a: |\n\n  x\n", "a: |\n  x\n   y\n  z\n", "a: |\n   x\n  y\n",
		"a: |\n  x\n    \n", "a: |\nb: c\n", "a:\n  b: |\n    x\n  c: d\n", "a: b:c\n", "a: b:\n", "a: -b\n", "a: ?b\n", "a: x#y\n", "a: <<\n", "<<: a\n",
		"a: \"\"\n", "a: \"x\\\"\"\n", "b: 1\na: 2\n", "a:\n  d: 1\n  c: 2\n", "a: b\n\n\nc: d\n", "a:\n\n  b: c\n", "\na: b\n", "a:\n  b:\n  - c\n  d: e\n", "a:\n  - b\n  c: d\n",
	}
	return written, plain, made
}

// checkPlainYAML: where the fast path answers, sigs.k8s.io/yaml's
// YAMLToJSON gives the same bytes (and no error).
func checkPlainYAML(t *testing.T, y string) bool {
	t.Helper()
	got, ok := plainYAMLToJSON([]byte(y))
	if !ok {
		return false
	}
	want, err := yaml.YAMLToJSON([]byte(y))
	if err != nil {
		t.Fatalf("plainYAMLToJSON(%q) = %s; YAMLToJSON: %v", y, got, err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("plainYAMLToJSON(%q) =\n%s\nYAMLToJSON:\n%s", y, got, want)
	}
	return true
}

// TestPlainYAMLIsSigsYAML: on every seed, and every seed cut at each line,
// the fast path answers as sigs.k8s.io/yaml's YAMLToJSON does; and it
// answers for what JSONToYAML writes.
func TestPlainYAMLIsSigsYAML(t *testing.T) {
	written, plain, made := yamlSeeds(t)
	for _, y := range written[:plain] {
		if !checkPlainYAML(t, y) {
			t.Errorf("the fast path declines what JSONToYAML writes:\n%s", y)
		}
	}
	answered := 0
	for _, y := range append(written, made...) {
		if checkPlainYAML(t, y) {
			answered++
		}
		lines := strings.SplitAfter(y, "\n")
		for i := range lines {
			checkPlainYAML(t, strings.Join(lines[:i], ""))
			checkPlainYAML(t, strings.Join(append(lines[:i:i], lines[i+1:]...), ""))
		}
	}
	t.Logf("answered %d of %d seeds", answered, len(written)+len(made))
}

// FuzzPlainYAML: whatever the bytes, where the fast path answers,
// YAMLToJSON gives the same.
func FuzzPlainYAML(f *testing.F) {
	written, _, made := yamlSeeds(f)
	for _, y := range append(written, made...) {
		f.Add(y)
	}
	f.Fuzz(func(t *testing.T, y string) { checkPlainYAML(t, y) })
}
