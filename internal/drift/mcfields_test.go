package drift

import (
	"testing"

	"github.com/drift-monitor/drift-monitor/internal/model"
	"github.com/drift-monitor/drift-monitor/internal/osstate"
)

// TestMachineConfigSubjects: the status line names the field, and which
// extension.
func TestMachineConfigSubjects(t *testing.T) {
	s := &osstate.State{Ostree: true, FIPSEnabled: "0"}
	for _, tt := range []struct {
		e    model.Entry
		want string
	}{
		{model.Entry{Kind: model.KindExtension, Path: model.ExtensionPath, Arg: "kerberos"}, "extension kerberos"},
		{model.Entry{Kind: model.KindFIPS, Path: model.FIPSPath, Arg: "true", ArgPresent: true}, "fips"},
	} {
		r := CompareMachineConfig(&tt.e, s, map[string]bool{}, nil)
		if len(r.Drift) != 1 || r.Drift[0].Subject() != tt.want {
			t.Errorf("%s: drift %+v, want one with subject %q", tt.e.Kind, r.Drift, tt.want)
		}
	}
}
