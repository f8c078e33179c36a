package ostree

import (
	"bytes"
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/drift-monitor/drift-monitor/test/harness"
	"golang.org/x/sys/unix"
)

// Host is a throwaway ostree host for readers that take a root: a sysroot
// made by the real ostree (init-fs, os-init, commit, deploy) whose own
// directory stands for the host's /, with /ostree and /boot where a booted
// host has them (through /sysroot). Which deployment is booted is said the
// way ostree-prepare-root says it with composefs: /run/ostree-booted, an
// a{sv} whose backing-root-device-inode is the deployment directory's
// device and inode (Boot). Nothing is mounted or booted.
type Host struct {
	t testing.TB
	// Root is the host's /.
	Root string
	// OS is the osname deployments are made for.
	OS   string
	tree string
	n    int
}

// NewHost makes a sysroot for the OS "testos" with nothing deployed.
// Without ostree the test is skipped, or fails when CI=true.
func NewHost(t testing.TB) *Host {
	t.Helper()
	harness.RequireTools(t, "ostree")
	dir := t.TempDir()
	h := &Host{t: t, Root: filepath.Join(dir, "root"), OS: "testos", tree: filepath.Join(dir, "tree")}
	if err := os.Mkdir(h.Root, 0o755); err != nil {
		t.Fatal(err)
	}
	h.run("admin", "init-fs", h.Root)
	h.run("admin", "os-init", "--sysroot="+h.Root, h.OS)
	return h
}

func (h *Host) run(args ...string) string {
	h.t.Helper()
	cmd := exec.Command("ostree", args...)
	// Deployments are made immutable (chattr +i) unless told otherwise:
	// the test's clean-up could not remove them.
	cmd.Env = append(os.Environ(), "OSTREE_SYSROOT_DEBUG=mutable-deployments")
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		h.t.Fatalf("ostree %s: %v\n%s", strings.Join(args, " "), err, stderr)
	}
	return strings.TrimSpace(string(out))
}

// Commit commits a minimal tree (a kernel, an initramfs, os-release; each
// commit's content differs) to branch with more `ostree commit` options
// (--add-metadata-string=ostree.manifest-digest=sha256:…) and returns its
// checksum.
func (h *Host) Commit(branch string, opts ...string) string {
	h.t.Helper()
	return h.CommitFiles(branch, nil, opts...)
}

// CommitFiles is Commit with files added to the tree, by path in the tree
// (usr/etc/motd: the deployment's /etc/motd and its twin).
func (h *Host) CommitFiles(branch string, files map[string]File, opts ...string) string {
	h.t.Helper()
	h.n++
	os.RemoveAll(h.tree)
	all := map[string]File{
		"usr/lib/modules/6.1.0/vmlinuz":       {"kernel", 0o644},
		"usr/lib/modules/6.1.0/initramfs.img": {"initramfs", 0o644},
		"usr/lib/os-release":                  {"ID=testos\nVERSION_ID=" + strconv.Itoa(h.n) + "\n", 0o644},
	}
	for p, f := range files {
		all[p] = f
	}
	for p, f := range all {
		full := filepath.Join(h.tree, p)
		mkdir(h.t, filepath.Dir(full))
		if err := os.WriteFile(full, []byte(f.Content), f.Mode); err != nil {
			h.t.Fatal(err)
		}
		if err := os.Chmod(full, f.Mode); err != nil { // beyond the umask
			h.t.Fatal(err)
		}
	}
	// ostree reads the deployment's os-release from its /etc (usr/etc).
	mkdir(h.t, filepath.Join(h.tree, "usr/etc"))
	if _, err := os.Lstat(filepath.Join(h.tree, "usr/etc/os-release")); os.IsNotExist(err) {
		if err := os.Symlink("../usr/lib/os-release", filepath.Join(h.tree, "usr/etc/os-release")); err != nil {
			h.t.Fatal(err)
		}
	}
	args := []string{"--repo=" + filepath.Join(h.Root, "ostree/repo"), "commit", "--branch=" + branch, "--tree=dir=" + h.tree, "-s", "test"}
	return h.run(append(args, opts...)...)
}

// Deploy deploys ref with `ostree admin deploy` (which makes it the
// default and swaps the boot links) and returns the new deployment's
// directory name, CHECKSUM.SERIAL.
func (h *Host) Deploy(ref string, opts ...string) string {
	h.t.Helper()
	before := h.Deployments()
	h.run(append([]string{"admin", "deploy", "--sysroot=" + h.Root, "--os=" + h.OS}, append(opts, ref)...)...)
	for _, d := range h.Deployments() {
		if !contains(before, d) {
			return d
		}
	}
	h.t.Fatalf("ostree admin deploy %s made no deployment", ref)
	return ""
}

// Deployments lists the deployment directories' names.
func (h *Host) Deployments() []string {
	ents, _ := os.ReadDir(h.DeployDir())
	var ds []string
	for _, e := range ents {
		if e.IsDir() {
			ds = append(ds, e.Name())
		}
	}
	sort.Strings(ds)
	return ds
}

// DeployDir is where the deployments are.
func (h *Host) DeployDir() string { return filepath.Join(h.Root, "ostree/deploy", h.OS, "deploy") }

// SetOrigin replaces a deployment's origin file.
func (h *Host) SetOrigin(dep, origin string) {
	write(h.t, filepath.Join(h.DeployDir(), dep+".origin"), origin)
}

// Boot says dep is booted: /run/ostree-booted with its directory's device
// and inode as backing-root-device-inode.
func (h *Host) Boot(dep string) {
	h.t.Helper()
	var st unix.Stat_t
	if err := unix.Stat(filepath.Join(h.DeployDir(), dep), &st); err != nil {
		h.t.Fatal(err)
	}
	var devino [16]byte
	binary.LittleEndian.PutUint64(devino[:], st.Dev)
	binary.LittleEndian.PutUint64(devino[8:], st.Ino)
	write(h.t, filepath.Join(h.Root, "run/ostree-booted"), string(Dict(
		Entry{"backing-root-device-inode", "(tt)", devino[:]},
		Entry{"composefs", "b", []byte{1}},
	)))
}

// Stage says dep is staged for the next boot, as
// /run/ostree/staged-deployment says it.
func (h *Host) Stage(dep string) { h.StageIn(h.Root, dep) }

// StageIn is Stage for a host whose / is root (a deployment's directory
// taken for the booted host).
func (h *Host) StageIn(root, dep string) {
	target := Dict(Entry{"name", "s", append([]byte(dep), 0)}, Entry{"osname", "s", append([]byte(h.OS), 0)},
		Entry{"bootcsum", "s", []byte("0\x00")})
	write(h.t, filepath.Join(root, "run/ostree/staged-deployment"), string(Dict(Entry{"target", "a{sv}", target})))
}

// WriteFile writes a file of the host (a /proc or /sys fixture).
func (h *Host) WriteFile(hostPath, content string) {
	write(h.t, filepath.Join(h.Root, hostPath), content)
}

// Entry is one key of an a{sv} and its value: the value's GVariant type
// and its serialised bytes.
type Entry struct {
	Key, Type string
	Data      []byte
}

// Dict serialises an a{sv} in GVariant's normal form, little-endian
// (GLib's gvariant-serialiser.c): for the test's fixtures of ostree's
// state files.
func Dict(entries ...Entry) []byte {
	var body []byte
	var ends []int
	for _, e := range entries {
		for len(body)%8 != 0 {
			body = append(body, 0)
		}
		var el []byte
		el = append(el, e.Key...)
		el = append(el, 0)
		keyEnd := len(el)
		for len(el)%8 != 0 {
			el = append(el, 0)
		}
		el = append(el, e.Data...)
		el = append(el, 0)
		el = append(el, e.Type...)
		el = appendOffsets(el, []int{keyEnd})
		body = append(body, el...)
		ends = append(ends, len(body))
	}
	return appendOffsets(body, ends)
}

// appendOffsets frames b with offsets, each of the size the whole needs.
func appendOffsets(b []byte, offsets []int) []byte {
	if len(offsets) == 0 {
		return b
	}
	for _, size := range []int{1, 2, 4, 8} {
		total := len(b) + size*len(offsets)
		if size < 8 && total > 1<<(8*size)-1 {
			continue
		}
		var out bytes.Buffer
		out.Write(b)
		for _, o := range offsets {
			var w [8]byte
			binary.LittleEndian.PutUint64(w[:], uint64(o))
			out.Write(w[:size])
		}
		return out.Bytes()
	}
	panic("unreachable")
}

func write(t testing.TB, p, content string) {
	t.Helper()
	mkdir(t, filepath.Dir(p))
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func mkdir(t testing.TB, p string) {
	t.Helper()
	if err := os.MkdirAll(p, 0o755); err != nil {
		t.Fatal(err)
	}
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}
