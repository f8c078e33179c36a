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

// ServiceStatus returns a service's ActiveState and its StatusText (the
// last STATUS= it sent with sd_notify).
func (c *Conn) ServiceStatus(ctx context.Context, service string) (active, status string, err error) {
	a, err := c.sd.GetUnitPropertyContext(ctx, service, "ActiveState")
	if err != nil {
		return "", "", fmt.Errorf("ActiveState of %s: %w", service, err)
	}
	s, err := c.sd.GetServicePropertyContext(ctx, service, "StatusText")
	if err != nil {
		return "", "", fmt.Errorf("StatusText of %s: %w", service, err)
	}
	active, _ = a.Value.Value().(string)
	status, _ = s.Value.Value().(string)
	return active, status, nil
}
