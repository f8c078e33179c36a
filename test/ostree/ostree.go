// Package ostree deploys throwaway ostree sysroots with the real ostree
// (Debian's package: apt-get install ostree), for tests that read what
// ostree writes: boot loader entries of deployments with kernel arguments,
// deployments and their origins and commits (Host), and an rpm database
// of dummy packages (InstallRPMs, with rpm and rpmbuild).
//
// It promises real entries, written by `ostree admin deploy` into a
// temporary directory; it does not boot them.
package ostree

import "testing"

// Sysroot initialises a sysroot for the OS "testos", commits a minimal tree
// (a kernel and an initramfs) and deploys it once per element of deploys,
// each with those `ostree admin deploy` options (--karg=..., --karg-append=,
// --karg-delete=...). The last deployment is the default. It returns the
// sysroot; its entries are in boot/loader/entries. Without ostree the test
// is skipped, or fails when CI=true.
func Sysroot(t testing.TB, deploys ...[]string) string {
	t.Helper()
	h := NewHost(t)
	h.Commit("testos/x86_64")
	for _, opts := range deploys {
		h.Deploy("testos/x86_64", opts...)
	}
	return h.Root
}
