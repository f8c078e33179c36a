package check_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/drift-monitor/drift-monitor/internal/check"
	"github.com/drift-monitor/drift-monitor/internal/drift"
	"github.com/drift-monitor/drift-monitor/internal/model"
	"github.com/drift-monitor/drift-monitor/test/ostree"
)

const (
	digestA = "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	digestB = "sha256:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
)

// mcHost is an ostree host booted into a deployment of an image whose
// manifest digest is digestA, on a default 4k kernel without FIPS.
type mcHost struct {
	*ostree.Host
	booted string
}

func newMCHost(t *testing.T) *mcHost {
	h := &mcHost{Host: ostree.NewHost(t)}
	h.Commit("testos/x86_64", "--add-metadata-string=ostree.manifest-digest="+digestA)
	h.booted = h.Deploy("testos/x86_64", "--karg=root=/dev/vda4")
	h.SetOrigin(h.booted, "[origin]\ncontainer-image-reference=ostree-unverified-registry:quay.io/o/os@"+digestA+"\n")
	h.Boot(h.booted)
	h.WriteFile("/proc/self/smaps", "00400000-00401000 r--p 00000000 fd:00 1 /usr/bin/x\nKernelPageSize:        4 kB\n")
	h.WriteFile("/proc/cmdline", "root=/dev/vda4\n")
	h.WriteFile("/proc/sys/crypto/fips_enabled", "0\n")
	return h
}

func mcEntry(k model.Kind, value string) model.Entry {
	paths := map[model.Kind]string{model.KindOSImage: model.OSImagePath, model.KindKernelType: model.KernelTypePath,
		model.KindExtension: model.ExtensionPath, model.KindFIPS: model.FIPSPath}
	return model.Entry{Kind: k, Path: paths[k], Type: model.TypeNone, Arg: value, ArgPresent: value == "true"}
}

// kinds runs a full check, and the one-entry check the daemon would run,
// and returns the kinds of drift and of notices found.
func mcCheck(t *testing.T, c *check.Checker, entries ...model.Entry) (drifts, notices []string) {
	t.Helper()
	res := c.All(context.Background(), entries)
	for _, d := range append(slices.Clone(res.Drift), res.Notices...) {
		if !slices.Contains(d.Entry.Means().Drift, string(d.Kind)) {
			t.Errorf("a %s entry reported %s, which its row of model.Kinds does not list", d.Entry, d.Kind)
		}
	}
	for _, d := range res.Drift {
		drifts = append(drifts, string(d.Kind)+": "+d.Message)
	}
	for _, n := range res.Notices {
		notices = append(notices, string(n.Kind)+": "+n.Message)
	}
	if one := oneByOne(c, entries); len(one) != len(res.Drift) {
		t.Errorf("entries checked one by one: %v; in a full check: %v", one, res.Drift)
	}
	want := len(entries)
	for _, n := range res.Notices {
		if n.Kind == drift.NotApplicable || n.Kind == drift.Unverifiable {
			want-- // not compared with the host: no match
		}
	}
	if res.Checked != want {
		t.Errorf("checked %d entries, want %d", res.Checked, want)
	}
	return drifts, notices
}

// expect asserts exactly one drift or notice (or none) whose kind is
// want, its message containing text.
func expect(t *testing.T, what string, got []string, want, text string) {
	t.Helper()
	if want == "" {
		if len(got) != 0 {
			t.Errorf("%s: %q, want none", what, got)
		}
		return
	}
	if len(got) != 1 || !strings.HasPrefix(got[0], want+": ") || !strings.Contains(got[0], text) {
		t.Errorf("%s: %q, want one %s saying %q", what, got, want, text)
	}
}

func TestOSImage(t *testing.T) {
	h := newMCHost(t)
	c := newChecker(t, h.Root)
	pinned := mcEntry(model.KindOSImage, "quay.io/o/os@"+digestA)
	d, n := mcCheck(t, c, pinned)
	expect(t, "the booted image", d, "", "")
	expect(t, "the booted image", n, "", "")

	// checkOS compares strings: a tag is not the digest it points to.
	d, _ = mcCheck(t, c, mcEntry(model.KindOSImage, "quay.io/o/os:4.16"))
	expect(t, "a tag", d, "os-image", `the booted image is quay.io/o/os@`+digestA)

	// Pinned by digest under another name (a mirror): the commit's
	// manifest digest says it is the same image.
	d, n = mcCheck(t, c, mcEntry(model.KindOSImage, "mirror.example.com/o/os@"+digestA))
	expect(t, "a mirror's name", d, "", "")
	expect(t, "a mirror's name", n, "same-image", "manifest "+digestA)
	d, _ = mcCheck(t, c, mcEntry(model.KindOSImage, "mirror.example.com/o/os@"+digestB))
	expect(t, "another digest", d, "os-image", "the booted image is")

	// The image staged for the next boot: reboot pending. A second deploy
	// also moves the boot links of the booted deployment.
	h.Commit("testos/x86_64", "--add-metadata-string=ostree.manifest-digest="+digestB)
	next := h.Deploy("testos/x86_64", "--karg=root=/dev/vda4")
	h.SetOrigin(next, "[origin]\ncontainer-image-reference=ostree-unverified-registry:quay.io/o/os@"+digestB+"\n")
	d, n = mcCheck(t, c, mcEntry(model.KindOSImage, "quay.io/o/os@"+digestB))
	expect(t, "the next boot's image", d, "", "")
	expect(t, "the next boot's image", n, "reboot-pending", "/boot/loader/entries/")
	d, n = mcCheck(t, c, pinned)
	expect(t, "the booted image after a deploy", d, "", "")
	expect(t, "the booted image after a deploy", n, "", "")
	h.Stage(next)
	_, n = mcCheck(t, c, mcEntry(model.KindOSImage, "quay.io/o/os@"+digestB))
	expect(t, "the staged image", n, "reboot-pending", "/run/ostree/staged-deployment")

	// A staged deployment that cannot be read: the drift says the next
	// boot is unknown.
	h.WriteFile("/run/ostree/staged-deployment", "not a GVariant")
	d, _ = mcCheck(t, c, mcEntry(model.KindOSImage, "quay.io/o/os@"+digestB))
	expect(t, "an unreadable staged deployment", d, "os-image", "whether the next boot has it is unknown: /run/ostree/staged-deployment")
	h.Stage(next)

	// A deployment of an ostree branch booted where an image is declared.
	h.SetOrigin(h.booted, "[origin]\nrefspec=fedora:fedora/x86_64/coreos/stable\n")
	d, _ = mcCheck(t, c, pinned)
	expect(t, "an ostree branch", d, "os-image", `ostree branch "fedora:fedora/x86_64/coreos/stable"`)
}

func TestKernelType(t *testing.T) {
	h := newMCHost(t)
	c := newChecker(t, h.Root)
	d, n := mcCheck(t, c, mcEntry(model.KindKernelType, "default"))
	expect(t, "a default kernel", d, "", "")
	expect(t, "a default kernel", n, "", "")
	d, _ = mcCheck(t, c, mcEntry(model.KindKernelType, "realtime"))
	expect(t, "realtime wanted", d, "kernel-type", "the running kernel is default")

	// The switch the MCD asks rpm-ostree for, deployed for the next boot.
	h.Commit("testos/x86_64")
	next := h.Deploy("testos/x86_64")
	h.SetOrigin(next, "[origin]\ncontainer-image-reference=ostree-unverified-registry:quay.io/o/os@"+digestA+"\n"+
		"[packages]\nrequested=kernel-rt-core;kernel-rt-modules;kernel-rt-modules-extra;\n"+
		"[overrides]\nremove=kernel;kernel-core;kernel-modules;kernel-modules-core;kernel-modules-extra;\n")
	d, n = mcCheck(t, c, mcEntry(model.KindKernelType, "realtime"))
	expect(t, "realtime configured", d, "", "")
	expect(t, "realtime configured", n, "reboot-pending", "the running kernel is default, not realtime")

	h.WriteFile("/sys/kernel/realtime", "1\n")
	d, n = mcCheck(t, c, mcEntry(model.KindKernelType, "realtime"))
	expect(t, "realtime running", d, "", "")
	expect(t, "realtime running", n, "", "")

	h.WriteFile("/sys/kernel/realtime", "0\n")
	h.WriteFile("/proc/self/smaps", "00400000-00410000 r--p 00000000 fd:00 1 /usr/bin/x\nKernelPageSize:       64 kB\n")
	d, _ = mcCheck(t, c, mcEntry(model.KindKernelType, "64k-pages"))
	expect(t, "64k running", d, "", "")
	d, _ = mcCheck(t, c, mcEntry(model.KindKernelType, "default"))
	expect(t, "64k running, default wanted", d, "kernel-type", "the running kernel is 64k-pages")
}

func TestExtensions(t *testing.T) {
	h := newMCHost(t)
	ostree.InstallRPMs(t, h.Root, "/usr/share/rpm", "usbguard", "NetworkManager-libreswan", "libreswan")
	c := newChecker(t, h.Root)
	d, n := mcCheck(t, c, mcEntry(model.KindExtension, "usbguard"))
	expect(t, "an installed extension", d, "", "")
	expect(t, "an installed extension", n, "", "")
	// The legacy set of ipsec, without openvswitch3.5-ipsec, is accepted
	// as the MCD accepts it.
	d, _ = mcCheck(t, c, mcEntry(model.KindExtension, "ipsec"))
	expect(t, "ipsec's legacy packages", d, "", "")

	d, _ = mcCheck(t, c, mcEntry(model.KindExtension, "kerberos"))
	expect(t, "a missing extension", d, "extension", "krb5-workstation, libkadm5 not in the rpm database")

	// Requested in the next deployment's origin: installed at the next boot.
	h.Commit("testos/x86_64")
	next := h.Deploy("testos/x86_64")
	h.SetOrigin(next, "[origin]\ncontainer-image-reference=ostree-unverified-registry:quay.io/o/os@"+digestA+"\n[packages]\nrequested=usbguard;krb5-workstation;libkadm5;\n")
	d, n = mcCheck(t, c, mcEntry(model.KindExtension, "kerberos"))
	expect(t, "a staged extension", d, "", "")
	expect(t, "a staged extension", n, "reboot-pending", "requests it")
}

func TestFIPS(t *testing.T) {
	h := newMCHost(t)
	c := newChecker(t, h.Root)
	d, n := mcCheck(t, c, mcEntry(model.KindFIPS, "false"))
	expect(t, "FIPS off as declared", d, "", "")
	expect(t, "FIPS off as declared", n, "", "")
	d, _ = mcCheck(t, c, mcEntry(model.KindFIPS, "true"))
	expect(t, "FIPS wanted", d, "fips", "fips_enabled=0")

	h.WriteFile("/proc/sys/crypto/fips_enabled", "1\n")
	d, _ = mcCheck(t, c, mcEntry(model.KindFIPS, "true"))
	expect(t, "FIPS without fips=1", d, "fips", "fips=1 is not on the kernel command line")
	h.WriteFile("/proc/cmdline", "root=/dev/vda4 fips=1\n")
	d, _ = mcCheck(t, c, mcEntry(model.KindFIPS, "true"))
	expect(t, "FIPS on as declared", d, "", "")
	d, _ = mcCheck(t, c, mcEntry(model.KindFIPS, "false"))
	expect(t, "FIPS on, off declared", d, "fips", "the kernel runs in FIPS mode")
}

// TestNotAnOstreeHost: every field is "not applicable", never drift.
func TestNotAnOstreeHost(t *testing.T) {
	c := newChecker(t, t.TempDir())
	for _, e := range []model.Entry{mcEntry(model.KindOSImage, "q/o@"+digestA), mcEntry(model.KindKernelType, "realtime"),
		mcEntry(model.KindExtension, "usbguard"), mcEntry(model.KindFIPS, "true")} {
		d, n := mcCheck(t, c, e)
		expect(t, string(e.Kind), d, "", "")
		expect(t, string(e.Kind), n, "not-applicable", "/run/ostree-booted")
		if res := c.All(context.Background(), []model.Entry{e}); res.Checked != 0 {
			t.Errorf("%s: %d entries checked, want none: it does not apply", e.Kind, res.Checked)
		}
	}
}

// TestFinalizationFailed: on the live host (Commands set), a failed
// finalization of the previous boot is a notice.
func TestFinalizationFailed(t *testing.T) {
	h := newMCHost(t)
	c := newChecker(t, h.Root)
	state, failed := "inactive", ""
	c.Commands = func(_ context.Context, prog string, args ...string) (string, error) {
		if prog == "systemctl" {
			return "LoadState=loaded\nActiveState=" + state + "\nInvocationID=0a1b\n", nil
		}
		if args[len(args)-1] == "ostree-boot-complete.service" {
			return `{"_BOOT_ID":"b","INVOCATION_ID":"0a1b","MESSAGE":"Starting"}` + "\n" + failed, nil
		}
		return "", errors.New("unexpected journalctl " + strings.Join(args, " "))
	}
	_, n := mcCheck(t, c, mcEntry(model.KindOSImage, "quay.io/o/os@"+digestA))
	expect(t, "a finalized boot", n, "", "")
	state, failed = "failed", `{"_BOOT_ID":"b","MESSAGE":"error: ostree-finalize-staged.service failed on previous boot: Bootloader write failed"}`
	_, n = mcCheck(t, c, mcEntry(model.KindOSImage, "quay.io/o/os@"+digestA))
	expect(t, "a failed finalization", n, string(drift.FinalizationFailed), "Bootloader write failed")
}

// TestOSCommandsBounded: the programs a check runs for a MachineConfig's
// fields (systemctl and journalctl for the finalization, rpm for the
// extensions) run on the daemon's event loop, which must answer the
// watchdog (drift-monitor.service: WatchdogSec=30s, pinged every 15 s):
// together they are bounded well below that, whatever each one's own
// bound, so a wedged systemd or journal makes a "not checked" notice, not
// a watchdog kill and a restart loop.
func TestOSCommandsBounded(t *testing.T) {
	h := newMCHost(t)
	c := newChecker(t, h.Root)
	var deadlines []time.Duration
	c.Commands = func(ctx context.Context, prog string, args ...string) (string, error) {
		d, ok := ctx.Deadline()
		if !ok {
			deadlines = append(deadlines, -1)
		} else {
			deadlines = append(deadlines, time.Until(d))
		}
		return "LoadState=loaded\nActiveState=inactive\nInvocationID=0a1b\n", nil
	}
	c.All(context.Background(), []model.Entry{mcEntry(model.KindOSImage, "quay.io/o/os@"+digestA)})
	if len(deadlines) == 0 {
		t.Fatal("no command run")
	}
	for i, d := range deadlines {
		if d < 0 || d > 15*time.Second {
			t.Errorf("command %d: deadline in %v (-1: none), want one within 15s", i, d)
		}
	}
}
