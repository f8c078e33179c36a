package desired

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
)

// The kinds of entry a MachineConfig declares beyond Ignition: the OS image,
// the kernel type, each extension and FIPS. They are checked against the
// booted ostree deployment and the running kernel (package check), not
// against a node at Path: Path only names where the observation comes from,
// and Arg holds the declared value.
const (
	// KindOSImage: spec.osImageURL, the image the host must have booted.
	KindOSImage Kind = "os-image"
	// KindKernelType: spec.kernelType (default, realtime, 64k-pages), the
	// kernel that must be running.
	KindKernelType Kind = "kernel-type"
	// KindExtension: one of spec.extensions, whose packages must be in the
	// root's rpm database.
	KindExtension Kind = "extension"
	// KindFIPS: spec.fips, whether the kernel must run in FIPS mode (Arg
	// "true" or "false", ArgPresent the same as a bool).
	KindFIPS Kind = "fips"
)

// Where the MachineConfig fields' observations come from (Entry.Path): what
// DRIFT_PATH says of them.
const (
	OSImagePath    = "/ostree/deploy"
	KernelTypePath = "/sys/kernel/realtime"
	ExtensionPath  = "/var/lib/rpm"
	FIPSPath       = "/proc/sys/crypto/fips_enabled"
)

// The kernel types the machine-config operator accepts
// (machine-config-operator pkg/controller/common/constants.go, 7ff337a4).
const (
	KernelDefault  = "default"
	KernelRealtime = "realtime"
	Kernel64kPages = "64k-pages"
)

// IsMachineConfigField reports whether entries of kind k are a
// MachineConfig's non-Ignition fields: nothing at their Path is watched or
// written.
func IsMachineConfigField(k Kind) bool {
	switch k {
	case KindOSImage, KindKernelType, KindExtension, KindFIPS:
		return true
	}
	return false
}

// extensionPackages is the machine-config operator's table of extensions:
// the packages each needs, current set first, then the legacy set that is
// also accepted (machine-config-operator pkg/controller/common/helpers.go,
// SupportedExtensions, LegacyExtensionPackages and
// GetAllValidPackageSetsForExtension, 7ff337a4; the MCD's
// verifyExtensionPackages, pkg/daemon/update.go, accepts an extension when
// every package of one set is installed). Update it with the MCO.
var extensionPackages = map[string][][]string{
	"two-node-ha":          {{"pacemaker", "pcs", "fence-agents-all"}},
	"ipsec":                {{"NetworkManager-libreswan", "libreswan", "openvswitch3.5-ipsec"}, {"NetworkManager-libreswan", "libreswan"}},
	"usbguard":             {{"usbguard"}},
	"kerberos":             {{"krb5-workstation", "libkadm5"}},
	"kernel-devel":         {{"kernel-devel", "kernel-headers"}},
	"sandboxed-containers": {{"kata-containers"}},
	"sysstat":              {{"sysstat"}},
}

// ExtensionPackages returns the package sets that make an extension
// installed: any one of them, all of its packages (nil for an unknown name).
func ExtensionPackages(name string) [][]string { return extensionPackages[name] }

// mcFields are a MachineConfig's fields beyond Ignition, as declared: nil
// or empty is not declared.
type mcFields struct {
	OSImageURL string
	KernelType *string
	Extensions []string
	FIPS       *bool
}

// fields validates the MachineConfig's fields beyond Ignition as the
// machine-config operator does before it renders a config
// (pkg/controller/common/helpers.go, ValidateMachineConfig and
// validateExtensions): an unknown kernel type or extension is refused.
func (mc *machineConfig) fields(file string) (mcFields, error) {
	s := &mc.Spec
	f := mcFields{Extensions: s.Extensions, FIPS: s.FIPS}
	if s.OSImageURL != nil {
		f.OSImageURL = *s.OSImageURL
	}
	if s.KernelType != nil {
		switch *s.KernelType {
		case "", KernelDefault, KernelRealtime, Kernel64kPages:
		default:
			return f, &LoadError{File: file, Context: "spec.kernelType", Err: fmt.Errorf("kernelType %q is not one the machine-config operator accepts (%s, %s, %s)",
				*s.KernelType, KernelDefault, KernelRealtime, Kernel64kPages)}
		}
		k := *s.KernelType
		f.KernelType = &k
	}
	for i, e := range s.Extensions {
		if extensionPackages[e] == nil {
			names := make([]string, 0, len(extensionPackages))
			for n := range extensionPackages {
				names = append(names, n)
			}
			sort.Strings(names)
			return f, &LoadError{File: file, Context: fmt.Sprintf("spec.extensions.%d", i), Err: fmt.Errorf("extension %q is not one the machine-config operator supports (%v)", e, names)}
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
func machineConfigEntries(frags []Fragment) []Entry {
	var (
		image    string
		kernel   *string
		fips     *bool
		exts     []string
		declared bool
	)
	for _, f := range frags {
		m := f.mcFields
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
				k = KernelDefault // helpers.CanonicalizeKernelType
			}
			if kernel == nil || k != KernelDefault {
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
	var es []Entry
	if image != "" {
		es = append(es, Entry{Kind: KindOSImage, Path: OSImagePath, Type: TypeNone, Arg: image})
	}
	if kernel != nil {
		es = append(es, Entry{Kind: KindKernelType, Path: KernelTypePath, Type: TypeNone, Arg: *kernel})
	}
	for _, e := range exts {
		es = append(es, Entry{Kind: KindExtension, Path: ExtensionPath, Type: TypeNone, Arg: e})
	}
	if fips != nil {
		es = append(es, Entry{Kind: KindFIPS, Path: FIPSPath, Type: TypeNone, Arg: strconv.FormatBool(*fips), ArgPresent: *fips})
	}
	return es
}
