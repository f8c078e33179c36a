// Package ostree deploys throwaway ostree sysroots with the real ostree
// (Debian's package: apt-get install ostree), for tests that read what
// ostree writes: boot loader entries of deployments with kernel arguments,
// deployments and their origins and commits (Host), and an rpm database
// of dummy packages (InstallRPMs, with rpm and rpmbuild).
//
// It promises real entries, written by `ostree admin deploy` into a
// temporary directory; it does not boot them. BootableTree makes an image
// from the host's own packages that systemd-nspawn can boot once deployed
// (test/systemd boots it).
package ostree

import (
	"os"
	"path/filepath"
	"testing"
)

// Sysroot initialises a sysroot for the OS "testos", commits a minimal tree
// (a kernel and an initramfs) and deploys it once per element of deploys,
// each with those `ostree admin deploy` options (--karg=..., --karg-append=,
// --karg-delete=...). The last deployment is the default. It returns the
// sysroot; its entries are in boot/loader/entries. Without ostree the test
// is skipped, or fails when CI=true.
func Sysroot(t testing.TB, deploys ...[]string) string {
	t.Helper()
	return SysrootWith(t, nil, deploys...)
}

// File is a file the committed tree holds besides the minimal one.
type File struct {
	Content string
	Mode    os.FileMode
}

// SysrootWith is Sysroot with files added to the committed tree, by path
// in the tree (usr/etc/motd: the deployment's /etc/motd and its twin).
func SysrootWith(t testing.TB, files map[string]File, deploys ...[]string) string {
	t.Helper()
	h := NewHost(t)
	h.CommitFiles("testos/x86_64", files)
	for _, opts := range deploys {
		h.Deploy("testos/x86_64", opts...)
	}
	return h.Root
}

// Deployment is the directory of the sysroot's one deployment (Sysroot with one
// deploy): the tree a booted host has as /, with the /etc ostree checked out
// from its usr/etc.
func Deployment(t testing.TB, sysroot string) string {
	t.Helper()
	dirs, err := filepath.Glob(filepath.Join(sysroot, "ostree/deploy/testos/deploy/*.0"))
	if err != nil || len(dirs) != 1 {
		t.Fatalf("the deployment in %s: %v, %v", sysroot, dirs, err)
	}
	return dirs[0]
}
