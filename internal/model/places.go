package model

// The desired-state locations: the vendor's (packages) and the admin's,
// which masks it.
const (
	VendorDir = "/usr/lib/drift-monitor/desired.d"
	AdminDir  = "/etc/drift-monitor/desired.d"
)

// DefaultDirs are the desired-state locations, in precedence order: a file in
// a later directory masks the file of the same name in an earlier one (the
// systemd convention: /etc overrides /usr/lib).
var DefaultDirs = []string{VendorDir, AdminDir}
