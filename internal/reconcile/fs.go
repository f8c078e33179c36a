package reconcile

import "github.com/drift-monitor/drift-monitor/internal/fsx"

// FS is the write primitives a reconcile uses (package fsx), one system
// call each, so that a test can fail (or inspect the disk at) any step by
// embedding SysFS and overriding one method. Every name is one path
// component inside a directory descriptor that was resolved inside the
// root (ondisk.Root.LocateDir, openat2 RESOLVE_IN_ROOT): no method ever
// resolves a host path by itself, and none follows a symbolic link in its
// last component.
type FS = fsx.FS

// SysFS is FS on the running kernel.
type SysFS = fsx.Sys

// tempPattern names temporary nodes. It is hidden (a dot), as Ignition's
// CreateTemp(dir, "tmp") names are not, so that a listing or a shell glob
// does not pick up a half-made node.
const (
	tempPrefix  = ".drift-monitor-reconcile-"
	tempPattern = tempPrefix + "*"
)
