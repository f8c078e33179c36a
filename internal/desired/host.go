package desired

import "github.com/drift-monitor/drift-monitor/internal/desired/discover"

// Host is a root's host paths as the loader reads them (discover.Host):
// named here too because LoadCached takes one.
type Host = discover.Host
