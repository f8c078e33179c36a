package model

import "sort"

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

// Extensions lists the names of the extensions the machine-config
// operator supports, sorted.
func Extensions() []string {
	names := make([]string, 0, len(extensionPackages))
	for n := range extensionPackages {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// KindNotChecked is a declared file that is deliberately not checked: the
// machine-config daemon's certificate writer owns it (see
// machineconfig.MCDCertificatePaths). Its entry carries the reason
// (Content.Unverifiable) and stands for nothing on disk.
const KindNotChecked Kind = "not-checked"
