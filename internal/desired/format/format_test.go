package format

import (
	"slices"
	"testing"

	"sigs.k8s.io/yaml"
)

// TestDocuments: the documents of a YAML stream are those its markers
// start, a marker only at the start of a line, and a document of comments
// and directives alone is none.
func TestDocuments(t *testing.T) {
	tests := []struct {
		in   string
		want int
	}{
		{"", 0},
		{"# only a comment\n", 0},
		{"kind: MachineConfig\n", 1},
		{"---\nkind: MachineConfig\n", 1},
		{"%YAML 1.2\n---\nkind: MachineConfig\n...\n", 1},
		{"---\n# header\n---\nkind: MachineConfig\n---\n", 1},
		{"a: 1\n---\nb: 2\n", 2},
		{"a: 1\n...\nb: 2\n", 2},
		{"--- {a: 1}\n--- {b: 2}\n", 2},
		{"a: 1\r\n---\r\nb: 2\r\n", 2},
		{"a: |\n  ---\n  not a marker\nb: ----\n", 1},
		{"a: 1\n----\n", 1}, // not a marker: part of the document
	}
	for _, tt := range tests {
		if got := Documents([]byte(tt.in)); got != tt.want {
			t.Errorf("Documents(%q) = %d, want %d", tt.in, got, tt.want)
		}
	}
}

// slowIsButane is IsButane's decision for YAML by the full decoding alone,
// as it was before blockRootKeys.
func slowIsButane(raw []byte) bool {
	var f butaneFields
	if Documents(raw) > 1 || yaml.Unmarshal(raw, &f) != nil {
		return false
	}
	return f.Variant != "" && f.Version != "" && f.Kind != "MachineConfig"
}

// butaneProbeSeeds are YAML shapes around blockRootKeys' rule: the root's
// keys, or a variant hidden from a line scan in every way YAML allows.
var butaneProbeSeeds = []string{
	"apiVersion: machineconfiguration.openshift.io/v1\nkind: MachineConfig\nmetadata:\n  name: x\nspec:\n  config:\n    ignition:\n      version: 3.2.0\n",
	"variant: fcos\nversion: 1.6.0\nstorage:\n  files:\n    - path: /etc/from-butane\n      mode: 0640\n      contents:\n        inline: hello\n",
	"# comment\n---\nvariant: fcos\nversion: 1.6.0\n",
	"Variant: fcos\nversion: 1.6.0\n",
	"VARIANT: fcos\nVERSION: 1.6.0\n",
	"\"variant\": fcos\nversion: 1.6.0\n",
	"'variant': fcos\nversion: 1.6.0\n",
	"\"v\\x61riant\": fcos\nversion: 1.6.0\n",
	"? variant\n: fcos\nversion: 1.6.0\n",
	"{variant: fcos, version: 1.6.0}\n",
	"--- {variant: fcos, version: 1.6.0}\n",
	"  variant: fcos\n  version: 1.6.0\n",
	"&a variant: fcos\nversion: 1.6.0\n",
	"base: &b {variant: fcos}\n<<: *b\nversion: 1.6.0\n",
	"!!binary dmFyaWFudA==: fcos\nversion: 1.6.0\n",
	"%YAML 1.1\n---\nvariant: fcos\nversion: 1.6.0\n",
	"\ufeffvariant: fcos\nversion: 1.6.0\n",
	"variant : fcos\nversion: 1.6.0\n",
	"variant:\tfcos\nversion: 1.6.0\n",
	"kind: \"a\nvariant: x\"\nversion: 1.6.0\n",
	"version: 1.6.0\r\nvariant: fcos\r\n",
	"version: 1.6.0\rvariant: fcos\n",
	"version: 1.6.0\u0085variant: fcos\n",
	"version: 1.6.0\u2028variant: fcos\n",
	"version: 1.6.0\u2029variant: fcos\n",
	"kind: x\n#c\rvariant: fcos\nversion: 1.6.0\n",
	"kind: x\n  y\rvariant: fcos\nversion: 1.6.0\n",
	"version: 1.6.0\nkind: x\r",
	"version: 1.6.0\nspec:\n- a\nvariant: fcos\n",
	"version: 1.6.0\nnote: |\n  variant: in a block scalar\n",
	"version: 1.6.0\n\tvariant: fcos\n",
	"- variant: fcos\n",
	"",
	"# only a comment\n",
}

// TestButaneProbe: for every seed, IsButane decides as the full decoding
// does, and blockRootKeys answers only for the shapes its rule covers.
func TestButaneProbe(t *testing.T) {
	for _, s := range butaneProbeSeeds {
		if got, want := IsButane("x.yaml", []byte(s)), slowIsButane([]byte(s)); got != want {
			t.Errorf("IsButane(%q) = %v, the full decoding says %v", s, got, want)
		}
	}
	for s, want := range map[string][]string{
		"apiVersion: v1\nkind: MachineConfig\nspec:\n  variant: x\n": {"apiVersion", "kind", "spec"},
		"# c\n---\nkind: X\n\nspec: {}\n...\n":                       {"kind", "spec"},
	} {
		keys, ok := blockRootKeys([]byte(s))
		var got []string
		for _, k := range keys {
			got = append(got, string(k))
		}
		if !ok || !slices.Equal(got, want) {
			t.Errorf("blockRootKeys(%q) = %q, %v; want %q", s, got, ok, want)
		}
	}
	for _, s := range []string{"  kind: X\n", "{kind: X}\n", "\"kind\": X\n", "kind: X\n- a\n", "", "\ufeffkind: X\n", "kind: X\rspec: {}\n", "kind: X\u2028spec: {}\n"} {
		if keys, ok := blockRootKeys([]byte(s)); ok {
			t.Errorf("blockRootKeys(%q) = %q, ok; want not ok", s, keys)
		}
	}
}

// FuzzButaneProbe: whatever the bytes, IsButane on a YAML file decides as
// the full decoding does.
func FuzzButaneProbe(f *testing.F) {
	for _, s := range butaneProbeSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if got, want := IsButane("x.yaml", raw), slowIsButane(raw); got != want {
			t.Fatalf("IsButane(%q) = %v, the full decoding says %v", raw, got, want)
		}
	})
}
