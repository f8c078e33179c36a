package reconcile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/drift-monitor/drift-monitor/internal/model"
)

// TestMachineConfigFieldsRefused: a MachineConfig's FIPS (or OS image,
// kernel, extension) drift is not written: the MCD applies those, and the
// refusal says so; nothing is written at the entry's path.
func TestMachineConfigFieldsRefused(t *testing.T) {
	root := t.TempDir()
	for p, c := range map[string]string{
		"run/ostree-booted":            "",
		"proc/self/smaps":              "KernelPageSize: 4 kB\n",
		"proc/cmdline":                 "root=/dev/vda4\n",
		"proc/sys/crypto/fips_enabled": "0\n",
	} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(root, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, p), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	entries := []model.Entry{{Kind: model.KindFIPS, Path: model.FIPSPath, Type: model.TypeNone, Arg: "true", ArgPresent: true}}
	res := repairWith(t, root, entries, SysFS{})
	if len(res.Refused) != 1 || !strings.Contains(res.Refused[0].Problem, "the machine-config daemon applies fips") {
		t.Errorf("refused %+v: want the FIPS drift refused, left to the MCD", res.Refused)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "proc/sys/crypto/fips_enabled")); string(b) != "0\n" {
		t.Errorf("fips_enabled written: %q", b)
	}
}
