package enablement

import (
	"fmt"
	"path"
	"strings"
)

// SatisfiesEnabled reports whether a unit in state (as `systemctl
// is-enabled` names it) is what `enabled: true` asks for by its state
// alone: what Ignition's enablement leaves, or what it could not make any
// more enabled. Ignition (v2.27.0) enables a unit by a preset line only
// ("enable NAME" in /etc/systemd/system-preset/20-ignition.preset:
// createSystemdPresetFile in internal/exec/stages/files/units.go,
// EnableUnit in internal/exec/util/unit.go), which systemd applies at the
// first boot with `preset-all` into the persistent configuration (systemd
// 252 src/core/manager.c, manager_preset_all → unit_file_preset_all with
// runtime false: links in /etc/systemd/system, install.c). So:
//
//   - "enabled" (links in /etc) satisfies it, and "enabled-runtime" (links
//     in /run only, install.c find_symlinks_in_scope) does not: the preset
//     never makes runtime links, and counting them would hide a persistent
//     `systemctl disable` until the next boot empties /run;
//   - "linked" and "linked-runtime" (a unit file symlinked into the search
//     path, without enablement links) do not by their state:
//     `systemctl is-enabled` exits non-zero for them (systemctl-is-enabled.c
//     counts enabled, static, alias, indirect, generated and
//     enabled-runtime). Tree.WantEnabled settles "linked" where enabling
//     could do nothing more;
//   - "static" (no [Install] to act on), "indirect" (enabled through Also=
//     or another name), "alias", "generated" and "transient" (not the
//     preset's to change) satisfy it;
//   - so does "not-found": without a unit file anywhere the preset line is
//     skipped.
func SatisfiesEnabled(state string) bool {
	switch state {
	case StateEnabled, StateStatic, StateIndirect, StateGenerated, StateTransient, StateAlias, StateNotFound:
		return true
	}
	return false
}

// IsState reports whether s is one of the states State returns (a
// record of states read back, for one, holds nothing else).
func IsState(s string) bool {
	switch s {
	case StateEnabled, StateEnabledRuntime, StateLinked, StateLinkedRuntime, StateAlias, StateMasked,
		StateMaskedRuntime, StateStatic, StateIndirect, StateDisabled, StateGenerated, StateTransient,
		StateBad, StateNotFound:
		return true
	}
	return false
}

// Held is a symbolic link that enabling a unit would make in
// /etc/systemd/system, whose name a link to another unit holds: enabling
// leaves that link as it is (install.c, create_symlink: -EEXIST).
type Held struct {
	Path string // the link's path, as seen inside the root
	Now  string // its target as written
	Want string // the target enabling would give it: the unit's file
}

// Enabling is what enabling a unit (`systemctl enable`, or the preset
// Ignition writes for `enabled: true`) would do to its state: see
// Tree.Enabling.
type Enabling struct {
	// State is the unit's state now (as State).
	State string
	// Settled: the unit is "disabled", "linked" or "enabled-runtime", and
	// enabling it would make no link that changes its state.
	Settled bool
	// Why, for a settled unit that has [Install] rules to apply (Alias=,
	// WantedBy=, RequiredBy=), says why enabling does nothing for it: a
	// clause that starts "cannot be enabled". A settled unit without them
	// (a linked unit file with no [Install]) has nothing to enable, as a
	// static one.
	Why string
	// Held are the links enabling would make whose names other units'
	// links hold, when that is why it cannot be enabled: freed, they
	// would enable it.
	Held []Held
}

// Enabling says what `systemctl enable UNIT` of systemd 252 would do to the
// state of a "disabled", "linked" or "enabled-runtime" unit (the states
// that fall short of `enabled: true`, SatisfiesEnabled, and that enabling
// could change): whether it would create a
// symbolic link that changes what `systemctl is-enabled UNIT` says, and
// if not, why. Ignition enables a unit through a preset line
// (internal/exec/stages/files/units.go, createSystemdPresetFile, v2.27.0:
// "enable foo@.service" for a template, "enable foo@.service bar" for an
// instance), and the first boot's preset makes the links enable makes
// (install.c, preset_prepare_one → install_context_apply →
// install_info_apply: the Alias=, WantedBy= and RequiredBy= links, and for
// a unit file outside of the search path the link to it), so a settled
// unit is as enabled as a freshly provisioned host leaves it. For other
// states it answers the state only: that is for the state to say.
//
// It is decided by what enabling would do: the links EnableLinks computes
// (the refused aliases left out, as systemctl goes on without them) are
// added to what the unit search path holds where their names are free,
// and the state is asked again. The common cases (install.c,
// install_info_symlink_alias, install_info_symlink_wants and
// find_symlinks_in_directory):
//
//   - a template without DefaultInstance= or Alias=, wanted only by plain
//     targets: "If this is a template, and we have no instance", no link;
//   - an instance read from its template's file, whose [Install] has Alias=
//     but no WantedBy= nor RequiredBy=: the alias links are named after the
//     instance and point to the template's file, and is-enabled counts
//     neither (it looks for links named after the unit, or pointing to a
//     file of that name);
//   - an Alias= whose name a link to another unit holds (Held): enable
//     leaves that link alone, so the unit stays disabled. The same tree
//     results when an admin replaces the alias link of an enabled unit:
//     only a record of the unit's state at the first boot tells the two
//     apart (WantEnabled);
//   - a linked unit file (state "linked": its link in /etc/systemd/system,
//     install_info_symlink_link) with no [Install] rules: enabling links it
//     again, and that is all.
//
// A link enabling makes where the lookup finds the unit (an alias of a
// name on its way, in /etc/systemd/system, which comes first) changes the
// lookup itself, not only the links it counts: undecided, so not settled.
func (t *Tree) Enabling(unit string) (Enabling, error) {
	unlock, err := t.lock(unit)
	if err != nil {
		return Enabling{}, err
	}
	defer unlock()
	return t.enabling(unit)
}

func (t *Tree) enabling(unit string) (Enabling, error) {
	st, err := t.state(unit)
	if err != nil {
		return Enabling{}, err
	}
	en := Enabling{State: st}
	if !enableable(st) {
		return en, nil
	}
	links, err := t.enableLinks(unit, true)
	if err != nil {
		return en, nil // enabling fails: for the state to say (drift)
	}
	c := &lookup{t: t, infos: map[string]*installInfo{}}
	info, err := c.traverse(c.add(unit))
	if err != nil {
		return en, nil
	}
	for _, l := range links {
		if dir, name := path.Split(l.Path); dir == persistentConfig+"/" && c.infos[name] != nil {
			return en, nil
		}
	}
	if after, err := t.stateWith(unit, links, false); err != nil || after != st {
		return en, nil
	}
	en.Settled = true
	if !info.hasRules() {
		return en, nil // nothing to enable ("disabled" has rules)
	}
	if freed, err := t.stateWith(unit, links, true); err == nil && freed != st {
		en.Held = t.held(links)
	}
	switch {
	case len(en.Held) > 0:
		var b strings.Builder
		for k, h := range en.Held {
			if k > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "%q (a link to %q)", h.Path, h.Now)
		}
		en.Why = "cannot be enabled: the alias link that enabling it (as Ignition's preset does) would make is another unit's: " + b.String()
	case classifyName(unit) == nameTemplate:
		en.Why = "cannot be enabled without an instance: enabling a template without DefaultInstance= (as Ignition's preset does) makes no link that systemd counts for it"
	case st == StateEnabledRuntime:
		en.Why = "cannot be enabled persistently: enabling it (as Ignition's preset does) makes no link in " + persistentConfig + " that systemd counts for it, and the links in /run that enable it last until the next boot"
	default:
		en.Why = "cannot be enabled: enabling it (as Ignition's preset does) makes no link that systemd counts for it"
	}
	return en, nil
}

// enableable: the states Enabling looks into.
func enableable(state string) bool {
	return state == StateDisabled || state == StateLinked || state == StateEnabledRuntime
}

// stateWith is the unit's state with links added to /etc/systemd/system:
// where their names are free, or, with replace, in place of the links
// that hold their names.
func (t *Tree) stateWith(unit string, links []Link, replace bool) (string, error) {
	t.enabled, t.replaceHeld = links, replace
	defer func() { t.enabled, t.replaceHeld = nil, false }()
	return t.state(unit)
}

// held lists the links of links directly in /etc/systemd/system whose names
// a link there holds, pointing to another file name.
func (t *Tree) held(links []Link) []Held {
	s := t.scanDir(persistentConfig)
	var out []Held
	for _, l := range links {
		dir, name := path.Split(l.Path)
		if dir != persistentConfig+"/" {
			continue
		}
		for _, have := range s.top {
			if have.name == name && have.err == nil && baseName(have.dest) != baseName(l.Target) {
				out = append(out, Held{Path: l.Path, Now: have.dest, Want: l.Target})
			}
		}
	}
	return out
}

// Verdict is what `enabled: true` makes of a unit: see Tree.WantEnabled.
type Verdict int

const (
	// Satisfied: no drift.
	Satisfied Verdict = iota
	// CannotEnable: a notice, not drift: nothing can enable the unit,
	// and nothing says that it ever was (Enabling.Why says why).
	CannotEnable
	// Drift: the unit is not as enabled as the config asks.
	Drift
)

// WantEnabled judges a unit declared `enabled: true` in state, as systemd
// (or State) reports it, the way Ignition leaves it: satisfied where the
// state says so (SatisfiesEnabled), or where enabling would change nothing
// and has nothing to do (a linked unit file with no [Install]: "linked" is
// drift only where `systemctl enable` would still create links); a
// CannotEnable notice where enabling would change nothing for another
// reason; drift otherwise. firstBoot is the unit's state at the first
// boot, as the first-boot record keeps it ("" for no record): a unit that
// was "enabled" then and cannot be now was enabled by Ignition and has
// been changed since, which is drift (an admin who replaced the alias link of an
// enabled unit, see Enabling); with no record, the same tree is a notice,
// which says that it cannot tell. The Enabling is the one the verdict
// rests on (zero when the state alone decided).
func (t *Tree) WantEnabled(unit, state, firstBoot string) (Verdict, Enabling, error) {
	if SatisfiesEnabled(state) {
		return Satisfied, Enabling{State: state}, nil
	}
	if !enableable(state) {
		return Drift, Enabling{State: state}, nil
	}
	en, err := t.Enabling(unit)
	switch {
	case err != nil:
		return Drift, Enabling{State: state}, err
	case en.State != state || !en.Settled:
		// The unit files say otherwise than systemd (a daemon-reload
		// pending), or enabling would do something: as the state says.
		return Drift, en, nil
	case en.Why == "":
		return Satisfied, en, nil
	case firstBoot == StateEnabled:
		return Drift, en, nil
	}
	return CannotEnable, en, nil
}
