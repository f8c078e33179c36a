package desired_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/drift-monitor/drift-monitor/internal/desired/machineconfig"
	"sigs.k8s.io/yaml"
)

// benchMachineConfig wraps the 10,000 files of benchConfig (spec 3.2.0, as
// the machine-config operator renders) into a MachineConfig in JSON, as
// bench/'s fixture does.
func benchMachineConfig(b *testing.B, n int) string {
	b.Helper()
	raw, err := os.ReadFile(benchConfig(b, "3.2.0", n))
	if err != nil {
		b.Fatal(err)
	}
	mc := `{"apiVersion":"machineconfiguration.openshift.io/v1","kind":"MachineConfig",` +
		`"metadata":{"name":"99-bench","labels":{"machineconfiguration.openshift.io/role":"worker"}},` +
		`"spec":{"config":` + strings.TrimSuffix(string(raw), "\n") + `}}` + "\n"
	f := filepath.Join(b.TempDir(), "config-mc.json")
	if err := os.WriteFile(f, []byte(mc), 0o644); err != nil {
		b.Fatal(err)
	}
	return f
}

// BenchmarkLoadStateMachineConfig: BenchmarkLoadStateSpec's 10,000 files at
// spec 3.2.0, as an Ignition config and as a MachineConfig carrying it,
// read by the fast path (machineconfig/fast.go) and by the decoding it spares
// (path=slow), side by side.
func BenchmarkLoadStateMachineConfig(b *testing.B) {
	b.Run("ign-3.2.0", func(b *testing.B) { benchLoad(b, benchConfig(b, "3.2.0", 10000), 10000) })
	b.Run("mc-json/path=fast", func(b *testing.B) { benchLoad(b, benchMachineConfig(b, 10000), 10000) })
	b.Run("mc-json/path=slow", func(b *testing.B) {
		defer machineconfig.SlowPath()()
		benchLoad(b, benchMachineConfig(b, 10000), 10000)
	})
}

// BenchmarkLoadStateMachineConfigYAML: the same MachineConfig in YAML, as
// `oc get machineconfig -o yaml` gives it: converted to JSON whole
// (sigs.k8s.io/yaml) before either path reads it.
func BenchmarkLoadStateMachineConfigYAML(b *testing.B) {
	for _, path := range []string{"fast", "slow"} {
		b.Run("path="+path, func(b *testing.B) {
			if path == "slow" {
				defer machineconfig.SlowPath()()
			}
			benchLoad(b, benchMachineConfigYAML(b, 10000), 10000)
		})
	}
}

// benchMachineConfigYAML is benchMachineConfig in YAML.
func benchMachineConfigYAML(b *testing.B, n int) string {
	b.Helper()
	raw, err := os.ReadFile(benchMachineConfig(b, n))
	if err != nil {
		b.Fatal(err)
	}
	y, err := yaml.JSONToYAML(raw)
	if err != nil {
		b.Fatal(err)
	}
	f := filepath.Join(b.TempDir(), "config-mc.yaml")
	if err := os.WriteFile(f, y, 0o644); err != nil {
		b.Fatal(err)
	}
	return f
}
