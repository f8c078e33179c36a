package cli

import (
	"context"

	"github.com/drift-monitor/drift-monitor/internal/check"
	"github.com/drift-monitor/drift-monitor/internal/enablement"
	"github.com/drift-monitor/drift-monitor/internal/ondisk"
	"github.com/drift-monitor/drift-monitor/internal/systemd"
)

// unitStates picks how enablement is determined: from the running systemd
// over D-Bus when checking the live host, otherwise offline from the unit
// files under root, as `systemctl --root` computes it. The returned func
// releases what was opened.
func unitStates(ctx context.Context, root *ondisk.Root) (check.UnitStates, func()) {
	if root.IsHost() && systemd.Booted() {
		if conn, err := systemd.Connect(ctx); err == nil {
			return conn, func() { conn.Close() }
		}
	}
	return enablement.Offline{Root: root}, func() {}
}
