package model

// KindUndeclared is no declared entry: a path of /etc that differs from the
// OS image's /etc (package image's baseline) and that no config declares.
// It is what the image declares, checked by the image's own rules; its row
// of Kinds says how: watched on the whole /etc tree by a watcher of its own
// (the daemon's image part), audited nowhere (a tree), repaired only when
// named (reconcile --image PATH, back to the image's default), from no
// MachineConfig field, and counted as one series of
// drift_monitor_drift_entries however many paths differ.
const KindUndeclared Kind = "undeclared"
