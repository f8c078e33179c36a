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

// FirstBootRecord is the first-boot record's host path (package firstboot):
// drift-monitor adopt writes it beside the config it adopts, in the
// directory it makes 0700. Its name is no config's: the loader leaves it
// to package firstboot, which reads it on every load.
const FirstBootRecord = AdminDir + "/10-firstboot.record"

// ownFiles are drift-monitor's own files in the desired-state directories
// that are no configs, by host path, with what each is. (The config adopt
// writes, 10-firstboot.ignition-cache.json, is a config: it is loaded.)
var ownFiles = map[string]string{
	FirstBootRecord: "drift-monitor's first-boot record (drift-monitor adopt wrote it; it is read as the record, not as a config)",
}

// OwnFile says what the file at hostPath is when it is one of
// drift-monitor's own files in a desired-state directory, "" when it is
// not: a name the loader knows, never to be named as a file it leaves
// alone. Whether the file is sound is its reader's to say.
func OwnFile(hostPath string) string { return ownFiles[hostPath] }
