package ondisk

// ForceProcXattrs makes observers read xattrs through /proc/self/fd, as on
// a kernel without listxattrat (before 6.13), until undone.
func ForceProcXattrs(on bool) { noXattrat.Store(on) }
