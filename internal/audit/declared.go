package audit

import (
	"path/filepath"

	"github.com/drift-monitor/drift-monitor/internal/model"
)

// DeclaredPaths are the paths of entries whose drift a write makes, as the
// kernel names them: under rootDir (the daemon's --root). Enablement
// (symlinks systemd places, found through systemd), kernel arguments and
// config notices have no declared node of their own to watch.
func DeclaredPaths(rootDir string, entries []model.Entry) []string {
	var out []string
	for _, e := range entries {
		switch e.Kind {
		case model.KindEnablement, model.KindKernelArg, model.KindConfig:
			continue
		case model.KindHardLink:
			out = append(out, filepath.Join(rootDir, e.Target))
		}
		out = append(out, filepath.Join(rootDir, e.Path))
	}
	return out
}
