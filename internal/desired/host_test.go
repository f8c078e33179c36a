package desired

import "github.com/drift-monitor/drift-monitor/internal/desired/desiredtest"

// The loader's test fixtures (package desiredtest), by the names desired's
// tests use.
var writeFile = desiredtest.WriteFile

type dirHost = desiredtest.DirHost
