package machineconfig

import (
	"path"

	"github.com/drift-monitor/drift-monitor/internal/desired/derive"
	"github.com/drift-monitor/drift-monitor/internal/desired/parsed"
	"github.com/drift-monitor/drift-monitor/internal/model"
)

// EmptyDropins lets a drop-in declared empty by a MachineConfig be absent:
// the MCD deletes an empty drop-in instead of writing it
// (machine-config-operator pkg/daemon/update.go, writeUnits: "Dropin for %s
// has no content, skipping write"); Ignition writes it empty.
func EmptyDropins(st *model.State, frags []parsed.Fragment) {
	mcEmpty := map[string]bool{}
	for _, f := range frags {
		if !f.MachineConfig {
			continue
		}
		for _, u := range f.Config.Systemd.Units {
			for _, d := range u.Dropins {
				if d.Contents != nil && *d.Contents == "" {
					mcEmpty[path.Join(derive.UnitDir, u.Name+".d", d.Name)] = true
				}
			}
		}
	}
	for i := range st.Entries {
		e := &st.Entries[i]
		if e.Kind == model.KindDropin && mcEmpty[e.Path] && e.Content != nil && len(e.Content.Exact) == 0 {
			e.MayBeAbsent = true
		}
	}
}

// Passwords gives the users a MachineConfig declares the password the
// machine-config daemon sets them: it runs `usermod -p HASH USER` for each
// of them on every update, with "*" when no hash (or an empty one) is
// declared (machine-config-operator pkg/daemon/update.go, SetPasswordHash:
// pwhash := "*"), where Ignition leaves an undeclared hash alone.
func Passwords(st *model.State, frags []parsed.Fragment) {
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
