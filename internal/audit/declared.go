package audit

import (
	"path"
	"path/filepath"
	"strings"

	"github.com/drift-monitor/drift-monitor/internal/model"
)

// DeclaredPaths are the paths of entries whose drift a write makes, as the
// kernel names them: under rootDir (the daemon's --root), the nodes each
// entry's row of model.Kinds lets an audit rule watch. Enablement
// (symlinks systemd places, found through systemd), kernel arguments, the
// fields a MachineConfig declares beyond Ignition (the booted deployment,
// /proc, /sys, the rpm database) and notices have none. Nothing under
// /proc or /sys is watched whatever the kind: the kernel's settings, not
// files (and a rule there would follow what the kernel itself writes). A
// host path leave is true of (the exclusions: exclude.Rules.Forbids) gets
// no rule: what is left alone is not audited either. Nil leaves nothing.
func DeclaredPaths(rootDir string, entries []model.Entry, leave func(hostPath string) bool) []string {
	var out []string
	add := func(hostPath string) {
		if !underKernelTree(hostPath) && (leave == nil || !leave(hostPath)) {
			out = append(out, filepath.Join(rootDir, hostPath))
		}
	}
	for _, e := range entries {
		switch e.Kind.Means().Audit {
		case model.AuditNothing:
			continue
		case model.AuditNodeAndTarget:
			add(e.Target)
		}
		add(e.Path)
	}
	return out
}

// kernelTrees are the host paths of the kernel's pseudo-filesystems.
var kernelTrees = []string{"/proc", "/sys"}

func underKernelTree(hostPath string) bool {
	p := path.Clean("/" + hostPath)
	for _, t := range kernelTrees {
		if p == t || strings.HasPrefix(p, t+"/") {
			return true
		}
	}
	return false
}
