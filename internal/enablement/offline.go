package enablement

import (
	"errors"
	"strings"

	"github.com/drift-monitor/drift-monitor/internal/ondisk"
)

// UnitFileState returns what State returns, with a unit that has no unit
// file as the state "not-found" and no error: the answer of
// `systemctl is-enabled` for callers that take an interface with
// UnitFileState (check.UnitStates).
func (t *Tree) UnitFileState(unit string) (string, error) {
	st, err := t.State(unit)
	if errors.Is(err, ErrNotFound) {
		return StateNotFound, nil
	}
	return st, err
}

// Offline answers `systemctl is-enabled` from the unit files under Root,
// the root its caller opened. Each question reads the tree afresh; a check
// pass asks Pass for one Tree that answers all of its questions from one
// reading.
type Offline struct{ Root *ondisk.Root }

// UnitFileState returns the state Tree.UnitFileState computes, from a Tree
// of its own.
func (o Offline) UnitFileState(unit string) (string, error) {
	t, err := New(o.Root)
	if err != nil {
		return "", err
	}
	defer t.Close()
	return t.UnitFileState(unit)
}

// Pass returns one Tree for a check pass: the caller closes it when the
// pass is over.
func (o Offline) Pass() (*Tree, error) { return New(o.Root) }

// ChangedBy reports whether a change at host path p may change what o
// answers: systemctl enable, disable and mask write their links under
// /etc/systemd/system (the daemon watches only where something is declared,
// so only that directory is asked about).
func (o Offline) ChangedBy(p string) bool {
	return p == persistentConfig || strings.HasPrefix(p, persistentConfig+"/")
}
