package osstate

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/drift-monitor/drift-monitor/internal/ondisk"
	"github.com/drift-monitor/drift-monitor/test/harness"
	"github.com/drift-monitor/drift-monitor/test/ostree"
	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"
)

func read(t *testing.T, dir string) *State {
	t.Helper()
	r, err := ondisk.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	return Read(r)
}

// kernelFixtures writes the /proc and /sys files every State reads.
func kernelFixtures(h *ostree.Host) {
	h.WriteFile("/proc/self/smaps", "55d0c0a00000-55d0c0a02000 r--p 00000000 fd:00 1 /usr/bin/x\nSize: 8 kB\nKernelPageSize: 4 kB\n")
	h.WriteFile("/proc/cmdline", "root=/dev/vda4 ostree=/ostree/boot.1/testos/x/0\n")
}

const digestA = "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"

// TestBootedDeployment: the booted deployment is the one whose directory
// is the root's (here through backing-root-device-inode), whatever the
// boot loader entries say after a later deploy moved them.
func TestBootedDeployment(t *testing.T) {
	h := ostree.NewHost(t)
	kernelFixtures(h)
	c1 := h.Commit("testos/x86_64", "--add-metadata-string=ostree.manifest-digest="+digestA)
	a := h.Deploy("testos/x86_64", "--karg=root=/dev/vda4")
	h.SetOrigin(a, "[origin]\ncontainer-image-reference=ostree-unverified-registry:quay.io/o/os@"+digestA+"\n\n[packages]\nrequested=usbguard;\n")
	h.Boot(a)

	s := read(t, h.Root)
	if s.BootedErr != nil || s.Booted == nil {
		t.Fatalf("booted: %v", s.BootedErr)
	}
	want := &Deployment{OSName: "testos", Name: a, Image: "quay.io/o/os@" + digestA, ManifestDigest: digestA, Requested: []string{"usbguard"}}
	if diff := cmp.Diff(want, s.Booted); diff != "" {
		t.Errorf("booted deployment (-want +got):\n%s", diff)
	}
	if s.Next != nil || s.NextErr != nil {
		t.Errorf("next boot %+v (%v): want the booted one, so none", s.Next, s.NextErr)
	}
	if !strings.HasPrefix(a, c1) {
		t.Errorf("deployment %s is not of commit %s", a, c1)
	}

	// A second deploy swaps the boot links: the first deployment's
	// bootlink moves, the booted one is still found by its identity, and
	// the new one is the next boot's.
	h.Commit("testos/x86_64")
	b := h.Deploy("testos/x86_64", "--karg=root=/dev/vda4")
	s = read(t, h.Root)
	if s.Booted == nil || s.Booted.Name != a {
		t.Fatalf("booted %+v (%v): want %s", s.Booted, s.BootedErr, a)
	}
	if s.Next == nil || s.Next.Name != b || !strings.HasPrefix(s.NextSource, "/boot/loader/entries/") {
		t.Fatalf("next %+v from %q (%v): want %s from a boot loader entry", s.Next, s.NextSource, s.NextErr, b)
	}
	if s.Next.Refspec != "testos/x86_64" || s.Next.Image != "" || s.Next.ManifestDigest != "" {
		t.Errorf("next deployment %+v: want the plain ostree branch, without an image", s.Next)
	}

	// A staged deployment is the next boot's, whatever the entries say.
	h.Stage(a)
	if s = read(t, h.Root); s.Next != nil || s.NextErr != nil {
		t.Errorf("staged the booted deployment: next %+v (%v), want none", s.Next, s.NextErr)
	}
}

// TestBootedByRootIdentity: with an empty /run/ostree-booted (ostree
// 2022.7 writes it so), the booted deployment is the one whose directory
// is the root itself: here a bind mount of the deployment at the root, as
// ostree-prepare-root mounts it.
func TestBootedByRootIdentity(t *testing.T) {
	harness.RequireRoot(t, "bind-mounts a deployment at the root")
	h := ostree.NewHost(t)
	h.Commit("testos/x86_64")
	a := h.Deploy("testos/x86_64")
	root := t.TempDir()
	if err := unix.Mount(filepath.Join(h.DeployDir(), a), root, "", unix.MS_BIND, ""); err != nil {
		harness.Unavailable(t, "bind mount: %v", err)
	}
	t.Cleanup(func() { unix.Unmount(root, unix.MNT_DETACH) })
	// The deployment's /sysroot is the physical sysroot, /ostree a link
	// into it, as on a booted host.
	if err := unix.Mount(h.Root, filepath.Join(root, "sysroot"), "", unix.MS_BIND, ""); err != nil {
		if err := os.Mkdir(filepath.Join(root, "sysroot"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := unix.Mount(h.Root, filepath.Join(root, "sysroot"), "", unix.MS_BIND, ""); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { unix.Unmount(filepath.Join(root, "sysroot"), unix.MNT_DETACH) })
	if _, err := os.Lstat(filepath.Join(root, "ostree")); errors.Is(err, os.ErrNotExist) {
		if err := os.Symlink("sysroot/ostree", filepath.Join(root, "ostree")); err != nil {
			t.Fatal(err)
		}
	}
	for p, c := range map[string]string{"run/ostree-booted": "", "proc/self/smaps": "KernelPageSize: 4 kB\n", "proc/cmdline": ""} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(root, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, p), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s := read(t, root)
	if s.Booted == nil || s.Booted.Name != a {
		t.Fatalf("booted %+v (%v): want %s", s.Booted, s.BootedErr, a)
	}
}

// TestLayeredCommitDigest: a commit rpm-ostree layered packages on has
// its base's manifest digest; a plain later commit has none of its own.
func TestLayeredCommitDigest(t *testing.T) {
	h := ostree.NewHost(t)
	kernelFixtures(h)
	// The base keeps a ref of its own, as ostree-ext's image refs keep it:
	// a deploy prunes the commits no ref or deployment holds.
	base := h.Commit("testos/base", "--add-metadata-string=ostree.manifest-digest="+digestA)
	h.Commit("testos/x86_64", "--parent="+base, "--add-metadata=rpmostree.clientlayer=true")
	layered := h.Deploy("testos/x86_64")
	h.Commit("testos/x86_64")
	plain := h.Deploy("testos/x86_64")
	for dep, want := range map[string]string{layered: digestA, plain: ""} {
		h.Boot(dep)
		s := read(t, h.Root)
		if s.Booted == nil || s.Booted.ManifestDigest != want {
			t.Errorf("deployment %s: %+v (%v), want manifest digest %q", dep, s.Booted, s.BootedErr, want)
		}
	}
}

func TestNotOstree(t *testing.T) {
	s := read(t, t.TempDir())
	if s.Ostree || s.Booted != nil {
		t.Errorf("state %+v: want no ostree host", s)
	}
}

func TestNoBootedDeployment(t *testing.T) {
	h := ostree.NewHost(t)
	kernelFixtures(h)
	h.Commit("testos/x86_64")
	h.Deploy("testos/x86_64")
	h.WriteFile("/run/ostree-booted", "") // the root is the sysroot, no deployment
	s := read(t, h.Root)
	if !s.Ostree || s.BootedErr == nil || !strings.Contains(s.BootedErr.Error(), "no deployment") {
		t.Errorf("booted %+v, error %v: want no deployment found", s.Booted, s.BootedErr)
	}
	// Messages name the host's paths, never the root's directory.
	if msg := s.BootedErr.Error(); !strings.Contains(msg, "/ostree/deploy") || strings.Contains(msg, h.Root) {
		t.Errorf("message %q: want the host path /ostree/deploy, without %s", msg, h.Root)
	}
	os.Remove(filepath.Join(h.Root, "proc/self/smaps"))
	if s = read(t, h.Root); s.KernelErr == nil || strings.Contains(s.KernelErr.Error(), h.Root) || !strings.Contains(s.KernelErr.Error(), "/proc/self/smaps") {
		t.Errorf("kernel error %v: want one naming /proc/self/smaps as the host's", s.KernelErr)
	}
}

func TestKernelAndFIPS(t *testing.T) {
	dir := t.TempDir()
	put := func(p, c string) {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, p), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	put("run/ostree-booted", "")
	put("proc/self/smaps", "00400000-00401000 r--p 0 0:0 0\nKernelPageSize:       64 kB\n")
	put("proc/cmdline", "fips=1 quiet\n")
	put("proc/sys/crypto/fips_enabled", "1\n")
	s := read(t, dir)
	if s.KernelErr != nil || s.RunningKernelType() != "64k-pages" || s.FIPSEnabled != "1" || s.FIPSMissing || !cmp.Equal(s.Cmdline, []string{"fips=1", "quiet"}) {
		t.Errorf("state %+v: want a 64k kernel in FIPS mode", s)
	}
	put("sys/kernel/realtime", "1\n")
	if s = read(t, dir); s.RunningKernelType() != "realtime" {
		t.Errorf("kernel %q: want realtime", s.RunningKernelType())
	}
	os.Remove(filepath.Join(dir, "proc/sys/crypto/fips_enabled"))
	if s = read(t, dir); !s.FIPSMissing {
		t.Errorf("FIPS %+v: want no fips_enabled", s)
	}
}

func TestImageOf(t *testing.T) {
	for ref, want := range map[string]string{
		"ostree-unverified-registry:quay.io/o/os@sha256:ab":  "quay.io/o/os@sha256:ab",
		"ostree-remote-registry:fedora:quay.io/o/os:latest":  "quay.io/o/os:latest",
		"ostree-image-signed:docker://quay.io/o/os:4.16":     "quay.io/o/os:4.16",
		"ostree-unverified-image:registry:quay.io/o/os:4.16": "quay.io/o/os:4.16",
		"ostree-remote-image:rhel:oci-archive:/tmp/os.ociar": "/tmp/os.ociar",
	} {
		got, err := ImageOf(ref)
		if err != nil || got != want {
			t.Errorf("ImageOf(%q) = %q, %v; want %q", ref, got, err, want)
		}
	}
	for _, bad := range []string{"quay.io/o/os", "docker://quay.io/o/os", "ostree-image-signed:docker:quay.io/o/os"} {
		if got, err := ImageOf(bad); err == nil {
			t.Errorf("ImageOf(%q) = %q: want an error", bad, got)
		}
	}
}

func TestOriginLists(t *testing.T) {
	o, err := parseOrigin([]byte("# c\n[packages]\nrequested=a;b\\;c;d\\sx;\n[overrides]\nremove=kernel;kernel-core\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := o.list("packages", "requested"); !cmp.Equal(got, []string{"a", "b;c", "d x"}) {
		t.Errorf("requested %q", got)
	}
	if got := o.list("overrides", "remove"); !cmp.Equal(got, []string{"kernel", "kernel-core"}) {
		t.Errorf("remove %q", got)
	}
	if _, err := parseOrigin([]byte("refspec=x\n")); err == nil {
		t.Error("a key outside any group: want an error")
	}
}

// fakeHost answers systemctl show for ostree-boot-complete.service with
// props, and journalctl with journal[the match it asks for].
func fakeHost(props string, journal map[string]string) Commands {
	return func(_ context.Context, prog string, args ...string) (string, error) {
		if prog == "systemctl" {
			return props, nil
		}
		for _, a := range args {
			if out, ok := journal[a]; ok {
				return out, nil
			}
		}
		return "", errors.New("journalctl: no such boot")
	}
}

// rec is a journal record of ostree-boot-complete.service: its boot, the
// INVOCATION_ID systemd's own records carry, its message.
type rec struct{ boot, invocation, message string }

// journalJSON is records as journalctl -o json prints them.
func journalJSON(recs ...rec) string {
	var b strings.Builder
	for _, r := range recs {
		m := map[string]string{"_BOOT_ID": r.boot, "MESSAGE": r.message}
		if r.invocation != "" {
			m["INVOCATION_ID"] = r.invocation
		}
		j, _ := json.Marshal(m)
		b.Write(j)
		b.WriteByte('\n')
	}
	return b.String()
}

func TestFinalizationFailure(t *testing.T) {
	const failedLine = "error: ostree-finalize-staged.service failed on previous boot: Bootloader write failed"
	long := "error: ostree-finalize-staged.service failed on previous boot: " + strings.Repeat("x", 3000)
	failed := "LoadState=loaded\nActiveState=failed\nInvocationID=0123abcd\n"
	for _, tt := range []struct {
		name    string
		run     Commands
		want    string
		wantErr bool
	}{
		{"not failed this boot", fakeHost("LoadState=loaded\nActiveState=inactive\nInvocationID=\n", nil), "", false},
		{"failed: the error line of its invocation's boot", fakeHost(failed, map[string]string{bootComplete: journalJSON(
			rec{"b1", "", "error: an older boot's"}, rec{"b2", "", "Starting…"}, rec{"b2", "", failedLine}, rec{"b2", "0123abcd", "Failed with result 'exit-code'."})}),
			failedLine, false},
		{"failed without an error line", fakeHost(failed, map[string]string{bootComplete: journalJSON(rec{"b2", "0123abcd", "Starting…"})}),
			"ostree-boot-complete.service failed (its journal has no error line)", false},
		{"truncated as the MCD does", fakeHost(failed, map[string]string{bootComplete: journalJSON(rec{"b2", "0123abcd", long})}), long[:2000], false},
		{"older ostree: the MCD's query", fakeHost("LoadState=not-found\nActiveState=inactive\n", map[string]string{
			"ostree-finalize-staged.service": "Finalizing staged deployment\nerror: Installing kernel: No space left on device\n"}),
			"error: Installing kernel: No space left on device", false},
		{"older ostree, no previous boot in the journal", fakeHost("LoadState=not-found\n", nil), "", true},
		{"no systemd", func(context.Context, string, ...string) (string, error) { return "", errors.New("no bus") }, "", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := FinalizationFailure(context.Background(), tt.run)
			if got != tt.want || (err != nil) != tt.wantErr {
				t.Errorf("got %q, %v; want %q, error %v", got, err, tt.want, tt.wantErr)
			}
		})
	}
}
