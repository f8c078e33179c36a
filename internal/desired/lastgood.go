package desired

import (
	"github.com/drift-monitor/drift-monitor/internal/desired/statekey"
	"github.com/drift-monitor/drift-monitor/internal/model"
)

// FromCache returns the state c keeps under key, made current as LoadCached
// makes a state it serves (the SSH keys put where root's layout puts them
// now): a state derived earlier, for a daemon that cannot derive one from the
// configs in place (they are refused) but knows the key of the last one it
// loaded. False when c does not hold it, or it cannot be made current.
func FromCache(c statekey.Cache, root Host, key statekey.Key) (model.State, bool) {
	if c == nil {
		return model.State{}, false
	}
	st, ok := c.Get(key)
	if !ok || applySSHLayout(root, &st) != nil {
		return model.State{}, false
	}
	return st, true
}
