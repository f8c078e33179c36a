package machineconfig

import (
	"path"

	"github.com/drift-monitor/drift-monitor/internal/desired/parsed"
	"github.com/drift-monitor/drift-monitor/internal/model"
)

// notRelabelled marks the entries a MachineConfig declares: the MCD writes
// them through renameio and chmod/chown and never relabels them
// (machine-config-operator pkg/daemon/file_writers.go,
// writeFileAtomically; no restorecon or setfiles anywhere in pkg/daemon),
// so they carry the label the kernel gave them at creation, not the
// policy's default — MCO's own kubelet unit runs restorecon on the files
// it needs labelled (templates/*/01-*-kubelet/_base/units/kubelet.service.yaml,
// PR #4287). Ignition relabels what it writes (setfiles -F,
// internal/exec/util/selinux.go).
func notRelabelled(st *model.State, mc map[string]bool) {
	for i := range st.Entries {
		if e := &st.Entries[i]; mc[e.Path] {
			e.NotRelabelled = true
		}
	}
}

// machineConfigPaths are the host paths the MachineConfigs among frags
// declare (nil without any).
func machineConfigPaths(frags []parsed.Fragment) map[string]bool {
	var mc map[string]bool
	for _, f := range frags {
		if !f.MachineConfig {
			continue
		}
		if mc == nil {
			mc = map[string]bool{}
		}
		s := f.Config.Storage
		for _, x := range s.Files {
			mc[x.Path] = true
		}
		for _, x := range s.Directories {
			mc[x.Path] = true
		}
		for _, x := range s.Links {
			mc[x.Path] = true
		}
		for _, u := range f.Config.Systemd.Units {
			mc[path.Join(parsed.UnitDir, u.Name)] = true
			for _, d := range u.Dropins {
				mc[path.Join(parsed.UnitDir, u.Name+".d", d.Name)] = true
			}
		}
	}
	return mc
}
