package machineconfig

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/drift-monitor/drift-monitor/internal/desired/configerr"
	"github.com/drift-monitor/drift-monitor/internal/desired/parsed"
	"github.com/drift-monitor/drift-monitor/internal/model"
)

// fields validates the MachineConfig's fields beyond Ignition as the
// machine-config operator does before it renders a config
// (pkg/controller/common/helpers.go, ValidateMachineConfig and
// validateExtensions): an unknown kernel type or extension is refused.
func (mc *Object) fields(file string) (parsed.MCFields, error) {
	s := &mc.Spec
	f := parsed.MCFields{Extensions: s.Extensions, FIPS: s.FIPS}
	if s.OSImageURL != nil {
		f.OSImageURL = *s.OSImageURL
	}
	if s.KernelType != nil {
		switch *s.KernelType {
		case "", model.KernelDefault, model.KernelRealtime, model.Kernel64kPages:
		default:
			return f, &configerr.LoadError{File: file, Context: "spec.kernelType", Err: fmt.Errorf("kernelType %q is not one the machine-config operator accepts (%s, %s, %s)",
				*s.KernelType, model.KernelDefault, model.KernelRealtime, model.Kernel64kPages)}
		}
		k := *s.KernelType
		f.KernelType = &k
	}
	for i, e := range s.Extensions {
		if model.ExtensionPackages(e) == nil {
			return f, &configerr.LoadError{File: file, Context: fmt.Sprintf("spec.extensions.%d", i), Err: fmt.Errorf("extension %q is not one the machine-config operator supports (%v)", e, model.Extensions())}
		}
	}
	return f, nil
}

// machineConfigEntries are the entries of the fragments' MachineConfig
// fields, merged as the machine-config operator renders a pool's
// MachineConfigs into one (pkg/controller/common/helpers.go,
// MergeMachineConfigs): FIPS is on if any fragment turns it on; a
// realtime or 64k-pages kernel type in any fragment wins over the
// default (the last one among them); extensions add up; the last
// non-empty osImageURL wins. A field no fragment declares has no entry:
// nothing is checked for it (a rendered config, the MCD's currentconfig,
// always declares fips, kernelType and osImageURL).
func machineConfigEntries(frags []parsed.Fragment) []model.Entry {
	var (
		image    string
		kernel   *string
		fips     *bool
		exts     []string
		declared bool
	)
	for _, f := range frags {
		m := f.MCFields
		if m == nil {
			continue
		}
		declared = true
		if m.OSImageURL != "" {
			image = m.OSImageURL
		}
		if m.KernelType != nil {
			k := *m.KernelType
			if k == "" {
				k = model.KernelDefault // helpers.CanonicalizeKernelType
			}
			if kernel == nil || k != model.KernelDefault {
				kernel = &k
			}
		}
		if m.FIPS != nil && (fips == nil || *m.FIPS) {
			v := *m.FIPS
			fips = &v
		}
		for _, e := range m.Extensions {
			if !slices.Contains(exts, e) {
				exts = append(exts, e)
			}
		}
	}
	if !declared {
		return nil
	}
	var es []model.Entry
	if image != "" {
		es = append(es, model.Entry{Kind: model.KindOSImage, Path: model.OSImagePath, Type: model.TypeNone, Arg: image})
	}
	if kernel != nil {
		es = append(es, model.Entry{Kind: model.KindKernelType, Path: model.KernelTypePath, Type: model.TypeNone, Arg: *kernel})
	}
	for _, e := range exts {
		es = append(es, model.Entry{Kind: model.KindExtension, Path: model.ExtensionPath, Type: model.TypeNone, Arg: e})
	}
	if fips != nil {
		es = append(es, model.Entry{Kind: model.KindFIPS, Path: model.FIPSPath, Type: model.TypeNone, Arg: strconv.FormatBool(*fips), ArgPresent: *fips})
	}
	return es
}
