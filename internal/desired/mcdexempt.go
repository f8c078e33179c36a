package desired

import (
	"github.com/drift-monitor/drift-monitor/internal/model"
	"slices"
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

// mcdExemptions adds, for a MachineConfig's files at MCDCertificatePaths, a
// not-checked entry beside the file's own. The state keeps both, whatever
// the admin chose: ApplyMCDExemptions decides which one is checked, so that
// a cached state serves either choice.
func mcdExemptions(st *model.State, frags []Fragment) {
	if !slices.ContainsFunc(frags, func(f Fragment) bool { return f.machineConfig }) {
		return
	}
	for i := range st.Entries {
		e := &st.Entries[i]
		if e.Kind == model.KindFile && slices.Contains(MCDCertificatePaths, e.Path) {
			st.Entries = append(st.Entries, model.Entry{Kind: model.KindNotChecked, Path: e.Path, Type: model.TypeNone,
				Content: &model.Content{Unverifiable: mcdCertificateReason}})
		}
	}
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
