package machineconfig

import (
	"path"

	"github.com/drift-monitor/drift-monitor/internal/desired/parsed"
	"github.com/drift-monitor/drift-monitor/internal/model"
)

// Writes is what the machine-config daemon writes differently from
// Ignition, for the MachineConfigs among a load's fragments: what is
// noted of them before the load lets their storage go (Note), applied to
// the entries derived from the merged config (Apply).
type Writes struct {
	paths map[string]bool // machineConfigPaths
	certs map[string]bool // mcdCertificateFiles
}

// Note notes what Apply needs of frags' storage.
func Note(frags []parsed.Fragment) Writes {
	return Writes{paths: machineConfigPaths(frags), certs: mcdCertificateFiles(frags)}
}

// Apply makes st, derived from frags merged, what the MCD writes: an empty
// drop-in may be absent, the certificate writer's files are not checked
// unless asked (ApplyMCDExemptions), the MachineConfig fields beyond
// Ignition are entries, a user's password is the MCD's, and nothing it
// writes is relabelled.
func (w Writes) Apply(st *model.State, frags []parsed.Fragment) {
	emptyDropins(st, frags)
	mcdExemptions(st, w.certs)
	st.Entries = append(st.Entries, machineConfigEntries(frags)...)
	mcdPasswords(st, frags)
	notRelabelled(st, w.paths)
}

// emptyDropins lets a drop-in declared empty by a MachineConfig be absent:
// the MCD deletes an empty drop-in instead of writing it
// (machine-config-operator pkg/daemon/update.go, writeUnits: "Dropin for %s
// has no content, skipping write"); Ignition writes it empty.
func emptyDropins(st *model.State, frags []parsed.Fragment) {
	mcEmpty := map[string]bool{}
	for _, f := range frags {
		if !f.MachineConfig {
			continue
		}
		for _, u := range f.Config.Systemd.Units {
			for _, d := range u.Dropins {
				if d.Contents != nil && *d.Contents == "" {
					mcEmpty[path.Join(parsed.UnitDir, u.Name+".d", d.Name)] = true
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
