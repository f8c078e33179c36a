package enablement

import "errors"

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
