package enablement

import (
	"errors"
	"strings"
)

// Offline answers `systemctl is-enabled` from the unit files under Root, for
// callers that take an interface with UnitFileState: a missing unit is the
// state "not-found", not an error.
type Offline struct{ Root string }

// UnitFileState returns the state State computes, or "not-found".
func (o Offline) UnitFileState(unit string) (string, error) {
	st, err := State(o.Root, unit)
	if errors.Is(err, ErrNotFound) {
		return StateNotFound, nil
	}
	return st, err
}

// CannotEnable returns what Tree.CannotEnable says of unit.
func (o Offline) CannotEnable(unit string) (string, error) {
	t, err := Open(o.Root)
	if err != nil {
		return "", err
	}
	return t.CannotEnable(unit)
}

// ChangedBy reports whether a change at host path p may change what o
// answers: systemctl enable, disable and mask write their links under
// /etc/systemd/system (the daemon watches only where something is declared,
// so only that directory is asked about).
func (o Offline) ChangedBy(p string) bool {
	return p == persistentConfig || strings.HasPrefix(p, persistentConfig+"/")
}
