package desired

import (
	"strings"
	"testing"

	types "github.com/drift-monitor/drift-monitor/internal/ignspec"
	"github.com/drift-monitor/drift-monitor/internal/model"
	"github.com/google/go-cmp/cmp"
)

// TestMachineConfigRules: what the MCD writes, not only Ignition.
func TestMachineConfigRules(t *testing.T) {
	t.Run("repeated kernel arguments load, each checked once", func(t *testing.T) {
		raw := "kind: MachineConfig\nspec:\n  kernelArguments:\n  - hugepagesz=1G hugepages=4 hugepagesz=2M hugepages=4\n  - y=0\n  - z=4\n  - y=1\n  - z=4\n"
		st, err := deriveState("/", []string{"50-kargs.yaml"}, [][]byte{[]byte(raw)}, [4][]byte{})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, e := range st.Entries {
			if e.Kind != model.KindKernelArg || !e.ArgPresent {
				t.Errorf("entry %+v: want present kernel arguments only", e)
			}
			got = append(got, e.Arg)
		}
		want := []string{"hugepagesz=1G", "hugepages=4", "hugepagesz=2M", "y=0", "z=4", "y=1"}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("kernel arguments (-want +got):\n%s", diff)
		}
	})
	t.Run("two MachineConfigs declaring one argument", func(t *testing.T) {
		a := "kind: MachineConfig\nspec:\n  kernelArguments: [nosmt, nosmt]\n"
		st, err := deriveState("/", []string{"a.yaml", "b.yaml"}, [][]byte{[]byte(a), []byte(a)}, [4][]byte{})
		if err != nil || len(st.Entries) != 1 {
			t.Fatalf("entries %+v, err %v: want one nosmt", st.Entries, err)
		}
	})

	dropins := `{"ignition":{"version":"3.2.0"},"systemd":{"units":[{"name":"zincati.service","dropins":[` +
		`{"name":"mco-disabled.conf","contents":""},{"name":"10-x.conf","contents":"[Unit]\n"}]}]}}`
	for _, tt := range []struct {
		name, file, raw string
		mayBeAbsent     bool
	}{
		{"empty drop-in of a MachineConfig may be absent", "mc.json", `{"kind":"MachineConfig","spec":{"config":` + dropins + `}}`, true},
		{"empty drop-in of an Ignition config must exist", "10.ign", dropins, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			st, err := deriveState("/", []string{tt.file}, [][]byte{[]byte(tt.raw)}, [4][]byte{})
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]bool{}
			for _, e := range st.Entries {
				got[e.Path] = e.MayBeAbsent
			}
			want := map[string]bool{
				"/etc/systemd/system/zincati.service.d/mco-disabled.conf": tt.mayBeAbsent,
				"/etc/systemd/system/zincati.service.d/10-x.conf":         false,
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("MayBeAbsent by path (-want +got):\n%s", diff)
			}
		})
	}

	owned := func(uid, gid string) string {
		return `{"ignition":{"version":"3.2.0"},"storage":{"files":[{"path":"/etc/x","user":{"id":` + uid + `},"group":{"id":` + gid + `}}]}}`
	}
	mc := func(cfg string) string { return `{"kind":"MachineConfig","spec":{"config":` + cfg + `}}` }
	t.Run("id -1 in a MachineConfig: no owner, no group", func(t *testing.T) {
		for _, ids := range [][2]string{{"-1", "-1"}, {"-1", "5"}, {"5", "-1"}} {
			st, err := deriveState("/", []string{"mc.json"}, [][]byte{[]byte(mc(owned(ids[0], ids[1])))}, [4][]byte{})
			if err != nil {
				t.Fatal(err)
			}
			if e := st.Entries[0]; e.UID != nil || e.GID != nil {
				t.Errorf("ids %v: uid %v gid %v, want neither desired (the MCD does not chown)", ids, e.UID, e.GID)
			}
		}
	})
	for _, tt := range []struct{ name, file, raw, want string }{
		{"negative id in an Ignition config", "10.ign", owned("-1", "0"), "10.ign: $.storage.files.0.user.id: user id -1 is negative"},
		{"id below -1 in a MachineConfig", "mc.json", mc(owned("0", "-2")), "mc.json: spec.config.storage.files.0.group.id: group id -2 is negative"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse(tt.file, []byte(tt.raw))
			if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
				t.Fatalf("Parse: %v, want an error starting %q", err, tt.want)
			}
		})
	}

	t.Run("currentconfig: a MachineConfig without kind and apiVersion", func(t *testing.T) {
		raw := `{"metadata":{"name":"rendered-worker-1"},"spec":{"config":{"ignition":{"version":"3.2.0"},` +
			`"storage":{"files":[{"path":"/etc/a","contents":{"source":"data:,a"}}]}},"kernelArguments":["nosmt"],"osImageURL":""},"status":{}}`
		frag, err := Parse("/etc/machine-config-daemon/currentconfig", []byte(raw))
		if err != nil {
			t.Fatal(err)
		}
		if !frag.MachineConfig || len(frag.Config.Storage.Files) != 1 ||
			!cmp.Equal(frag.Config.KernelArguments.ShouldExist, []types.KernelArgument{"nosmt"}) {
			t.Errorf("not read as a MachineConfig: %+v", frag.Config)
		}
	})
	t.Run("an Ignition config with a spec key stays an Ignition config", func(t *testing.T) {
		_, err := Parse("10.ign", []byte(`{"ignition":{"version":"3.2.0"},"spec":{"config":{}}}`))
		if err != nil {
			t.Fatal(err) // an unknown key is a warning for Ignition
		}
	})

	t.Run("spec 2.x: loads, a notice, kernel arguments kept", func(t *testing.T) {
		raw := "kind: MachineConfig\nspec:\n  kernelArguments: [nosmt]\n  config:\n    ignition:\n      version: 2.2.0\n"
		st, err := deriveState("/", []string{"/x/mc.yaml"}, [][]byte{[]byte(raw)}, [4][]byte{})
		if err != nil {
			t.Fatal(err)
		}
		var kinds []model.Kind
		for _, e := range st.Entries {
			kinds = append(kinds, e.Kind)
		}
		if diff := cmp.Diff([]model.Kind{model.KindKernelArg, model.KindConfig}, kinds); diff != "" {
			t.Errorf("entries (-want +got):\n%s", diff)
		}
	})
}

// TestMachineConfigValidated: a MachineConfig's spec.config, validated when
// parsed, is not validated again by Merge (the one-fragment shortcut, a
// third of its cold load); once its spec adds kernel arguments, Merge
// validates them with spec.config's.
func TestMachineConfigValidated(t *testing.T) {
	files := `{"kind":"MachineConfig","spec":{"config":{"ignition":{"version":"3.2.0"},"storage":{"files":[{"path":"/etc/a","contents":{"source":"data:,a"}}]}}}}`
	frag, err := Parse("99-files.json", []byte(files))
	if err != nil || !frag.Validated {
		t.Fatalf("Parse = validated %v, %v; want a validated fragment", frag.Validated, err)
	}
	conflict := `{"kind":"MachineConfig","spec":{"kernelArguments":["quiet"],` +
		`"config":{"ignition":{"version":"3.2.0"},"kernelArguments":{"shouldNotExist":["quiet"]}}}}`
	frag, err = Parse("99-kargs.json", []byte(conflict))
	if err != nil || frag.Validated {
		t.Fatalf("Parse = validated %v, %v; want a fragment Merge validates", frag.Validated, err)
	}
}
