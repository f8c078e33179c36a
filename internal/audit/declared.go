package audit

import (
	"path/filepath"

	"github.com/drift-monitor/drift-monitor/internal/desired"
)

// DeclaredPaths are the paths of entries whose drift a write makes, as the
// kernel names them: under rootDir (the daemon's --root). Enablement
// (symlinks systemd places, found through systemd), kernel arguments and
// config notices have no declared node of their own to watch. A host path
// leave is true of (the exclusions: exclude.Rules.Forbids) gets no rule:
// what is left alone is not audited either. Nil leaves nothing.
func DeclaredPaths(rootDir string, entries []desired.Entry, leave func(hostPath string) bool) []string {
	var out []string
	add := func(p string) {
		if leave == nil || !leave(p) {
			out = append(out, filepath.Join(rootDir, p))
		}
	}
	for _, e := range entries {
		switch e.Kind {
		case desired.KindEnablement, desired.KindKernelArg, desired.KindConfig:
			continue
		case desired.KindHardLink:
			add(e.Target)
		}
		add(e.Path)
	}
	return out
}
