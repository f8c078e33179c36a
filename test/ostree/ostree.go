// Package ostree deploys throwaway ostree sysroots with the real ostree
// (Debian's package: apt-get install ostree), for tests that read what
// ostree writes: boot loader entries of deployments with kernel arguments.
//
// It promises real entries, written by `ostree admin deploy` into a
// temporary directory; it does not boot them.
package ostree

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/drift-monitor/drift-monitor/test/harness"
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
	harness.RequireTools(t, "ostree")
	dir := t.TempDir()
	sysroot, tree := filepath.Join(dir, "sysroot"), filepath.Join(dir, "tree")
	all := map[string]File{
		"usr/lib/modules/6.1.0/vmlinuz":       {"kernel", 0o644},
		"usr/lib/modules/6.1.0/initramfs.img": {"initramfs", 0o644},
		"usr/lib/os-release":                  {"ID=testos\nVERSION_ID=1\n", 0o644},
	}
	for p, f := range files {
		all[p] = f
	}
	for p, f := range all {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(tree, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(tree, p), []byte(f.Content), f.Mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(filepath.Join(tree, p), f.Mode); err != nil {
			t.Fatal(err)
		}
	}
	// ostree reads the deployment's os-release from its /etc (usr/etc).
	if err := os.MkdirAll(filepath.Join(tree, "usr/etc"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../usr/lib/os-release", filepath.Join(tree, "usr/etc/os-release")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(sysroot, 0o755); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) {
		t.Helper()
		cmd := exec.Command("ostree", args...)
		// Deployments are made immutable (chattr +i) unless told otherwise:
		// the test's clean-up could not remove them.
		cmd.Env = append(os.Environ(), "OSTREE_SYSROOT_DEBUG=mutable-deployments")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("ostree %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	run("admin", "init-fs", sysroot)
	run("admin", "os-init", "--sysroot="+sysroot, "testos")
	run("--repo="+filepath.Join(sysroot, "ostree/repo"), "commit", "--branch=testos/x86_64", "--tree=dir="+tree, "-s", "test")
	for _, opts := range deploys {
		args := append([]string{"admin", "deploy", "--sysroot=" + sysroot, "--os=testos"}, opts...)
		run(append(args, "testos/x86_64")...)
	}
	return sysroot
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
