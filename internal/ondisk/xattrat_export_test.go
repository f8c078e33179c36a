package ondisk

import "time"

// ForceProcXattrs makes observers read xattrs through /proc/self/fd, as on
// a kernel without listxattrat (before 6.13), until undone.
func ForceProcXattrs(on bool) { noXattrat.Store(on) }

// SetXattrCacheClock gives c another clock, for its racy window.
func SetXattrCacheClock(c *XattrCache, now func() time.Time) { c.now = now }
