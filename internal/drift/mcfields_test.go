package drift

import (
	"testing"

	"github.com/drift-monitor/drift-monitor/internal/desired"
	"github.com/drift-monitor/drift-monitor/internal/osstate"
)

// TestMachineConfigSubjects: the status line names the field, and which
// extension.
func TestMachineConfigSubjects(t *testing.T) {
	s := &osstate.State{Ostree: true, FIPSEnabled: "0"}
	for _, tt := range []struct {
		e    desired.Entry
		want string
	}{
		{desired.Entry{Kind: desired.KindExtension, Path: desired.ExtensionPath, Arg: "kerberos"}, "extension kerberos"},
		{desired.Entry{Kind: desired.KindFIPS, Path: desired.FIPSPath, Arg: "true", ArgPresent: true}, "fips"},
	} {
		r := CompareMachineConfig(&tt.e, s, map[string]bool{}, nil)
		if len(r.Drift) != 1 || r.Drift[0].Subject() != tt.want {
			t.Errorf("%s: drift %+v, want one with subject %q", tt.e.Kind, r.Drift, tt.want)
		}
	}
}
