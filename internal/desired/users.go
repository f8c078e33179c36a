package desired

import (
	"github.com/drift-monitor/drift-monitor/internal/desired/parsed"
	"github.com/drift-monitor/drift-monitor/internal/model"
)

// mcdPasswords gives the users a MachineConfig declares the password the
// machine-config daemon sets them: it runs `usermod -p HASH USER` for each
// of them on every update, with "*" when no hash (or an empty one) is
// declared (machine-config-operator pkg/daemon/update.go, SetPasswordHash:
// pwhash := "*"), where Ignition leaves an undeclared hash alone.
func mcdPasswords(st *model.State, frags []parsed.Fragment) {
	mc := map[string]bool{}
	for _, f := range frags {
		if f.MachineConfig {
			for _, u := range f.Config.Passwd.Users {
				mc[u.Name] = true
			}
		}
	}
	for i := range st.Entries {
		e := &st.Entries[i]
		if e.Kind == model.KindUser && mc[e.User] && !e.Account.Absent && e.Account.PasswordHash == nil {
			star := "*"
			e.Account.PasswordHash = &star
		}
	}
}
