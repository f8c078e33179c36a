package desired

import (
	"strings"

	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/drift-monitor/drift-monitor/internal/desired/configerr"
	"github.com/drift-monitor/drift-monitor/internal/desired/machineconfig"
	"github.com/drift-monitor/drift-monitor/internal/model"
)

// mcEntries derives the files (name → contents) and returns the entries
// of the MachineConfig fields beyond Ignition, as kind=value strings.
func mcEntries(t *testing.T, files ...[2]string) []string {
	t.Helper()
	var names []string
	var raws [][]byte
	for _, f := range files {
		names, raws = append(names, f[0]), append(raws, []byte(f[1]))
	}
	st, err := deriveState("/", names, raws, [4][]byte{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range st.Entries {
		if e.Kind.Means().Source == model.FromOS {
			got = append(got, string(e.Kind)+"="+e.Arg+"@"+e.Path)
		}
	}
	return got
}

func TestMachineConfigFields(t *testing.T) {
	for _, tt := range []struct {
		name  string
		files [][2]string
		want  []string
	}{
		{"every field", [][2]string{{"mc.yaml", "kind: MachineConfig\nspec:\n  osImageURL: quay.io/o/rhcos@sha256:aa\n  kernelType: realtime\n" +
			"  extensions: [usbguard, ipsec]\n  fips: true\n"}},
			[]string{"os-image=quay.io/o/rhcos@sha256:aa@/ostree/deploy", "kernel-type=realtime@/sys/kernel/realtime",
				"extension=usbguard@/var/lib/rpm", "extension=ipsec@/var/lib/rpm", "fips=true@/proc/sys/crypto/fips_enabled"}},
		// The MCD's currentconfig: a rendered MachineConfig without kind,
		// its empty kernelType the default.
		{"currentconfig", [][2]string{{"currentconfig.json", `{"spec":{"config":{"ignition":{"version":"3.4.0"}},"osImageURL":"q/r:4.16","kernelType":"","fips":false}}`}},
			[]string{"os-image=q/r:4.16@/ostree/deploy", "kernel-type=default@/sys/kernel/realtime", "fips=false@/proc/sys/crypto/fips_enabled"}},
		{"nothing declared", [][2]string{{"mc.yaml", "kind: MachineConfig\nspec:\n  kernelArguments: [nosmt]\n"}}, nil},
		{"an Ignition config has none", [][2]string{{"10.ign", `{"ignition":{"version":"3.4.0"}}`}}, nil},
		// As MergeMachineConfigs renders a pool: FIPS on if any, a
		// non-default kernel wins, extensions add up, the last image.
		{"merged as the MCO renders", [][2]string{
			{"a.yaml", "kind: MachineConfig\nspec:\n  osImageURL: a\n  kernelType: 64k-pages\n  extensions: [usbguard]\n  fips: true\n"},
			{"b.yaml", "kind: MachineConfig\nspec:\n  osImageURL: b\n  kernelType: default\n  extensions: [usbguard, sysstat]\n  fips: false\n"},
		}, []string{"os-image=b@/ostree/deploy", "kernel-type=64k-pages@/sys/kernel/realtime",
			"extension=usbguard@/var/lib/rpm", "extension=sysstat@/var/lib/rpm", "fips=true@/proc/sys/crypto/fips_enabled"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, mcEntries(t, tt.files...)); diff != "" {
				t.Errorf("entries (-want +got):\n%s", diff)
			}
		})
	}
}

func TestMachineConfigFieldsRefused(t *testing.T) {
	for _, tt := range []struct{ name, raw, context string }{
		{"unknown kernel type", "kind: MachineConfig\nspec:\n  kernelType: rt\n", "spec.kernelType"},
		{"unknown extension", "kind: MachineConfig\nspec:\n  extensions: [usbguard, wireguard]\n", "spec.extensions.1"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := deriveState("/", []string{"mc.yaml"}, [][]byte{[]byte(tt.raw)}, [4][]byte{})
			var le *configerr.LoadError
			if !errors.As(err, &le) || le.File != "mc.yaml" || le.Context != tt.context {
				t.Fatalf("err %v: want a LoadError of mc.yaml at %s", err, tt.context)
			}
		})
	}
}

func TestExtensionEntriesHaveDistinctIDs(t *testing.T) {
	a := model.Entry{Kind: model.KindExtension, Path: model.ExtensionPath, Arg: "usbguard"}
	b := model.Entry{Kind: model.KindExtension, Path: model.ExtensionPath, Arg: "sysstat"}
	if a.ID() == b.ID() {
		t.Errorf("two extensions share the ID %q", a.ID())
	}
}

func TestMCDCertificateExemptions(t *testing.T) {
	files := `"storage":{"files":[` +
		`{"path":"/etc/kubernetes/kubelet-ca.crt","contents":{"source":"data:,ca"}},` +
		`{"path":"/etc/mco/internal-registry-pull-secret.json","mode":384,"contents":{"source":"data:,s"}},` +
		`{"path":"/etc/kubernetes/kubeconfig","contents":{"source":"data:,k"}}]}`
	mc := `{"kind":"MachineConfig","spec":{"config":{"ignition":{"version":"3.4.0"},` + files + `}}}`
	ign := `{"ignition":{"version":"3.4.0"},` + files + `}`
	// A MachineConfig that declares none of them.
	mcOther := `{"kind":"MachineConfig","spec":{"config":{"ignition":{"version":"3.4.0"},"storage":{"files":[{"path":"/etc/other","contents":{"source":"data:,o"}}]}}}}`
	kinds := func(es []model.Entry) map[string][]model.Kind {
		m := map[string][]model.Kind{}
		for _, e := range es {
			m[e.Path] = append(m[e.Path], e.Kind)
		}
		return m
	}
	notChecked := map[string][]model.Kind{
		"/etc/kubernetes/kubelet-ca.crt":              {model.KindNotChecked},
		"/etc/mco/internal-registry-pull-secret.json": {model.KindNotChecked},
		"/etc/kubernetes/kubeconfig":                  {model.KindFile},
	}
	checked := map[string][]model.Kind{
		"/etc/kubernetes/kubelet-ca.crt":              {model.KindFile},
		"/etc/mco/internal-registry-pull-secret.json": {model.KindFile},
		"/etc/kubernetes/kubeconfig":                  {model.KindFile},
	}
	withOther := func(m map[string][]model.Kind) map[string][]model.Kind {
		out := map[string][]model.Kind{"/etc/other": {model.KindFile}}
		for k, v := range m {
			out[k] = v
		}
		return out
	}
	for _, tt := range []struct {
		name        string
		files, raws []string
		exempt      bool
		want        map[string][]model.Kind
	}{
		{"a MachineConfig's certificate files are not checked", []string{"mc.json"}, []string{mc}, true, notChecked},
		{"the rule turned off checks them", []string{"mc.json"}, []string{mc}, false, checked},
		{"an Ignition config's are checked: no MCD writes them", []string{"10.ign"}, []string{ign}, true, checked},
		{"an Ignition config's are checked beside a MachineConfig that does not declare them",
			[]string{"10.ign", "20-mc.json"}, []string{ign, mcOther}, true, withOther(checked)},
		{"... whichever comes first", []string{"10-mc.json", "20.ign"}, []string{mcOther, ign}, true, withOther(checked)},
		{"the last fragment to declare a path decides: a MachineConfig over an Ignition config",
			[]string{"10.ign", "20-mc.json"}, []string{ign, mc}, true, notChecked},
		{"the last fragment to declare a path decides: an Ignition config over a MachineConfig",
			[]string{"10-mc.json", "20.ign"}, []string{mc, ign}, true, checked},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var raws [][]byte
			for _, r := range tt.raws {
				raws = append(raws, []byte(r))
			}
			st, err := deriveState("/", tt.files, raws, [4][]byte{})
			if err != nil {
				t.Fatal(err)
			}
			kept := machineconfig.ApplyMCDExemptions(st.Entries, tt.exempt)
			for _, e := range kept {
				if e.Kind == model.KindNotChecked && (e.Content == nil || !strings.Contains(e.Content.Unverifiable, "certificate writer owns it")) {
					t.Errorf("not-checked entry %s has no reason: %+v", e.Path, e.Content)
				}
			}
			got := kinds(kept)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("entries by path (-want +got):\n%s", diff)
			}
		})
	}
}
