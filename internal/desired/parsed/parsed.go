// Package parsed holds a config file as a reader (Ignition, Butane,
// MachineConfig) gives it to the merge and the derivation: the Ignition
// config it declares, in the newest spec, and what the reading found
// beside it. It is the loader's leaf, as Ignition's config/vX_Y/types is
// Ignition's: data, and no step of a load. It exists so that the readers,
// the merge and the derivation hand each other one type without importing
// one another: each stage imports only those below it.
package parsed

import types "github.com/drift-monitor/drift-monitor/internal/ignspec"

// UnitDir is where Ignition writes the units a config declares and their
// drop-ins (Ignition's internal/exec/util/unit.go, FileFromSystemdUnit:
// distro.SystemdUnitsPath). It is what a fragment's systemd section means
// on disk, for the derivation and for the MachineConfig reader, which says
// what the MCD writes there otherwise: here, so that neither stage imports
// the other.
const UnitDir = "/etc/systemd/system"

// Fragment is one parsed config file.
type Fragment struct {
	File   string
	Config types.Config
	// Warnings are Ignition's non-fatal findings (deprecations, unused keys).
	Warnings []string
	// Unfetched are the child configs (ignition.config.merge, replace) that
	// need the network: Config lacks what they declare.
	Unfetched []Unfetched
	// MachineConfig: the fragment is a MachineConfig, written by the MCD.
	MachineConfig bool
	// MCFields: a MachineConfig's fields beyond Ignition.
	MCFields *MCFields
	// SpecialBits are the optional special bits it declares, by path
	// (the Ignition reader's specialbits.go).
	SpecialBits map[string]uint32
	// Validated: Config passed Ignition's validation with the newest spec's
	// rules as it is (Parse of an Ignition config); merge.All need not validate
	// it again when it is the only fragment.
	Validated bool
}

// Unfetched is a child config that needs the network: what it declares is
// not known, so not checked.
type Unfetched struct {
	// Ref is where it is referenced: ignition.config.merge.N or
	// ignition.config.replace, nested as "ignition.config.merge.0 >
	// ignition.config.merge.1" for a data-URL child's own children.
	Ref string
	// Source is the URL without user information and query (either may
	// carry a credential).
	Source string
	// Replace: the child replaces its parent, so nothing of the parent is
	// checked either.
	Replace bool
	// Why, when set, is what the notice says instead of "never fetched".
	Why string
}

// Unverifiable is the text of its notice.
func (u Unfetched) Unverifiable() string {
	if u.Why != "" {
		return u.Why
	}
	if u.Replace {
		return "it is never fetched (it needs the network) and replaces the config that references it: " +
			"nothing that config declares is checked, and nothing the child declares is known"
	}
	return "it is never fetched (it needs the network): the files, directories, links, units, users and kernel arguments " +
		"it declares are not checked, and where it overrides entries of the config that references it, those are checked as the parent declares them"
}

// MCFields are a MachineConfig's fields beyond Ignition, as declared: nil
// or empty is not declared.
type MCFields struct {
	OSImageURL string
	KernelType *string
	Extensions []string
	FIPS       *bool
}
