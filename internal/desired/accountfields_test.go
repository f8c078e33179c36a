package desired

import (
	"errors"
	"testing"

	"github.com/drift-monitor/drift-monitor/internal/desired/configerr"
	"github.com/drift-monitor/drift-monitor/internal/model"
)

// TestParseRefusesAccountFields: a config whose account value is not one
// field is a config error at the field's path, for users and groups, in
// every spec that has the field and in a MachineConfig's spec.config.
func TestParseRefusesAccountFields(t *testing.T) {
	tests := []struct {
		file, raw, context string
	}{
		{"u.ign", `{"ignition":{"version":"3.4.0"},"passwd":{"users":[{"name":"core","passwordHash":"x\nroot:y"}]}}`,
			"$.passwd.users.0.passwordHash"},
		{"g.ign", `{"ignition":{"version":"3.0.0"},"passwd":{"groups":[{"name":"a"},{"name":"wheel","passwordHash":"x\ncore:y"}]}}`,
			"$.passwd.groups.1.passwordHash"},
		{"s.ign", `{"ignition":{"version":"3.6.0"},"passwd":{"users":[{"name":"core","groups":["ok","wheel,root"]}]}}`,
			"$.passwd.users.0.groups.1"},
		{"mc.yaml", "kind: MachineConfig\napiVersion: machineconfiguration.openshift.io/v1\nspec:\n  config:\n    ignition: {version: 3.2.0}\n    passwd:\n      users: [{name: core, gecos: \"a\\nb\"}]\n",
			"spec.config.passwd.users.0.gecos"},
	}
	for _, tt := range tests {
		_, err := Parse(tt.file, []byte(tt.raw))
		var le *configerr.LoadError
		if !errors.As(err, &le) || le.Context != tt.context || !errors.Is(err, model.ErrNotOneField) || le.File != tt.file {
			t.Errorf("%s: error %v, want a LoadError at %s", tt.file, err, tt.context)
		}
	}
}
