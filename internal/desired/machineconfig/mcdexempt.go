package machineconfig

import (
	"path"
	"slices"

	"github.com/drift-monitor/drift-monitor/internal/desired/parsed"
	"github.com/drift-monitor/drift-monitor/internal/model"
)

// MCDCertificatePaths are the files of a MachineConfig that the
// machine-config daemon itself does not validate: its certificate writer
// rewrites them from the cluster's state (the kubelet's CA bundle, the
// cloud CA bundle, the internal registry's pull secret), so their content
// may legitimately differ from the MachineConfig's
// (machine-config-operator pkg/daemon/on_disk_validation.go,
// getFilesToIgnore and checkV3Files; the paths are caBundleFilePath and
// cloudCABundleFilePath in pkg/daemon/daemon.go and
// internalRegistryAuthFile in pkg/daemon/image_manager_helper.go, 7ff337a4).
var MCDCertificatePaths = []string{
	"/etc/kubernetes/kubelet-ca.crt",
	"/etc/kubernetes/static-pod-resources/configmaps/cloud-config/ca-bundle.pem",
	"/etc/mco/internal-registry-pull-secret.json",
}

// mcdCertificateReason is what a not-checked entry says.
const mcdCertificateReason = "the machine-config daemon's certificate writer owns it and rewrites it from the cluster " +
	"(the MCD skips it too: on_disk_validation.go, getFilesToIgnore); --check-mcd-certificates checks it"

// mcdExemptions adds, for the files at MCDCertificatePaths that a
// MachineConfig declares (certs: CertificateFiles), a not-checked entry
// beside the file's own. The state keeps both, whatever the admin chose:
// ApplyMCDExemptions decides which one is checked, so that a cached state
// serves either choice.
func mcdExemptions(st *model.State, certs map[string]bool) {
	if len(certs) == 0 {
		return
	}
	for i := range st.Entries {
		e := &st.Entries[i]
		if e.Kind == model.KindFile && certs[e.Path] {
			st.Entries = append(st.Entries, model.Entry{Kind: model.KindNotChecked, Path: e.Path, Type: model.TypeNone,
				Content: &model.Content{Unverifiable: mcdCertificateReason}})
		}
	}
}

// mcdCertificateFiles are the paths of MCDCertificatePaths whose file the
// merged config has from a MachineConfig: the last fragment to declare
// the path (merged in order, a later one over an earlier) is one. The
// MCD's certificate writer owns those it wrote from a MachineConfig; the
// same path declared by an Ignition config is the admin's, checked like
// any other. Call it before the fragments' storage is let go.
func mcdCertificateFiles(frags []parsed.Fragment) map[string]bool {
	last := map[string]bool{} // path → whether its last declarer is a MachineConfig
	for _, f := range frags {
		for _, x := range f.Config.Storage.Files {
			if p := path.Clean(x.Path); slices.Contains(MCDCertificatePaths, p) {
				last[p] = f.MachineConfig
			}
		}
	}
	var certs map[string]bool
	for p, mc := range last {
		if mc {
			if certs == nil {
				certs = map[string]bool{}
			}
			certs[p] = true
		}
	}
	return certs
}

// ApplyMCDExemptions returns the entries to check: with exempt, a file that
// has a not-checked entry is left out (the not-checked entry stays, as a
// notice); without, the not-checked entries are left out and the files are
// checked like any other. It filters entries in place.
func ApplyMCDExemptions(entries []model.Entry, exempt bool) []model.Entry {
	var exempted map[string]bool
	for i := range entries {
		if entries[i].Kind == model.KindNotChecked {
			if exempted == nil {
				exempted = map[string]bool{}
			}
			exempted[entries[i].Path] = true
		}
	}
	if exempted == nil {
		return entries
	}
	kept := entries[:0]
	for _, e := range entries {
		switch {
		case e.Kind == model.KindNotChecked && !exempt:
		case e.Kind == model.KindFile && exempt && exempted[e.Path]:
		default:
			kept = append(kept, e)
		}
	}
	return kept
}
