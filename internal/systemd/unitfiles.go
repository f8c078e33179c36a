package systemd

import (
	"context"
	"fmt"
)

// EnableUnitFiles enables units persistently, as `systemctl enable` does
// (Manager.EnableUnitFiles, runtime false, force false: an existing link of
// another target is an error, not replaced). systemd writes the links; a
// daemon-reload (Reload) makes it load what changed.
func (c *Conn) EnableUnitFiles(ctx context.Context, units []string) error {
	if _, _, err := c.sd.EnableUnitFilesContext(ctx, units, false, false); err != nil {
		return fmt.Errorf("enabling %v through systemd: %w", units, err)
	}
	return nil
}

// DisableUnitFiles disables units persistently, as `systemctl disable` does
// (Manager.DisableUnitFiles, runtime false).
func (c *Conn) DisableUnitFiles(ctx context.Context, units []string) error {
	if _, err := c.sd.DisableUnitFilesContext(ctx, units, false); err != nil {
		return fmt.Errorf("disabling %v through systemd: %w", units, err)
	}
	return nil
}

// Reload is `systemctl daemon-reload` (Manager.Reload): systemd reads the
// unit files, drop-ins and masks again.
func (c *Conn) Reload(ctx context.Context) error {
	if err := c.sd.ReloadContext(ctx); err != nil {
		return fmt.Errorf("daemon-reload: %w", err)
	}
	return nil
}
