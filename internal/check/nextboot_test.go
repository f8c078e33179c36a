package check_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/drift-monitor/drift-monitor/internal/check"
	"github.com/drift-monitor/drift-monitor/internal/drift"
	"github.com/drift-monitor/drift-monitor/internal/model"
	"github.com/drift-monitor/drift-monitor/test/ostree"
)

func TestBootLoaderEntriesOfOstree(t *testing.T) {
	sysroot := ostree.Sysroot(t, []string{"--karg=root=/dev/vda4", "--karg=old=1"},
		[]string{"--karg-delete=old=1", "--karg-append=hugepages=4", "--karg-append=hugepages=8"})
	cmdline, source, ok, err := check.BootLoaderEntries(filepath.Join(sysroot, "boot/loader/entries"))()
	if err != nil || !ok {
		t.Fatalf("BootLoaderEntries = %q, %q, %v, %v; want the default deployment's", cmdline, source, ok, err)
	}
	args := model.SplitKernelArguments(cmdline)
	for _, want := range []string{"root=/dev/vda4", "hugepages=4", "hugepages=8"} {
		if !contains(args, want) {
			t.Errorf("next boot %q (from %s) lacks %s", cmdline, source, want)
		}
	}
	if contains(args, "old=1") {
		t.Errorf("next boot %q (from %s) is the older deployment's", cmdline, source)
	}

	// A host booted into the older deployment: the next boot applies the
	// declared arguments (notices), and lacks one (drift).
	arg := func(a string, present bool) model.Entry {
		return model.Entry{Kind: model.KindKernelArg, Path: "/proc/cmdline", Type: model.TypeNone, Arg: a, ArgPresent: present}
	}
	c := newChecker(t, t.TempDir())
	c.Cmdline = func() (string, error) { return "root=/dev/vda4 old=1", nil }
	c.NextBoot = check.BootLoaderEntries(filepath.Join(sysroot, "boot/loader/entries"))
	res := c.All(t.Context(), []model.Entry{arg("hugepages=8", true), arg("old=1", false), arg("nosmt", true)})
	var notices, drifts []string
	for _, n := range res.Notices {
		notices = append(notices, string(n.Kind)+" "+n.EntryID)
	}
	for _, d := range res.Drift {
		drifts = append(drifts, string(d.Kind)+" "+d.EntryID)
		if !strings.Contains(d.Message, source) {
			t.Errorf("drift %q does not name the entry %s", d.Message, source)
		}
	}
	if diff := cmp.Diff([]string{"reboot-pending kernel-argument:hugepages=8", "reboot-pending kernel-argument:old=1"}, notices); diff != "" {
		t.Errorf("notices (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"kernel-argument kernel-argument:nosmt"}, drifts); diff != "" {
		t.Errorf("drift (-want +got):\n%s", diff)
	}
}

func TestBootLoaderEntriesWithoutOstree(t *testing.T) {
	dir := t.TempDir()
	// grubby's entry: its default is grubenv's saved_entry, not read here.
	if err := os.WriteFile(filepath.Join(dir, "abc-6.1.0.conf"), []byte("title Fedora\nversion 6.1.0\noptions root=/dev/sda1 ro\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{dir, filepath.Join(dir, "missing")} {
		if _, _, ok, err := check.BootLoaderEntries(d)(); ok || err != nil {
			t.Errorf("BootLoaderEntries(%s) = %v, %v; want not ok", d, ok, err)
		}
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

func TestKernelArgsOfTheNextBoot(t *testing.T) {
	arg := func(a string, present bool) model.Entry {
		return model.Entry{Kind: model.KindKernelArg, Path: "/proc/cmdline", Type: model.TypeNone, Arg: a, ArgPresent: present}
	}
	entries := []model.Entry{arg("nosmt", true), arg("quiet", false), arg("mitigations=off", true), arg("rhgb", false)}
	const src = "/boot/loader/entries/ostree-2-rhcos.conf"
	type got struct {
		Drift   []string
		Notices []string
	}
	tests := []struct {
		name          string
		running, next string
		nextOK        bool
		want          got
	}{
		{name: "no boot loader entries: /proc/cmdline", running: "nosmt quiet", want: got{
			Drift: []string{"/proc/cmdline kernel-argument kernel-argument:quiet", "/proc/cmdline kernel-argument kernel-argument:mitigations=off"}}},
		{name: "next boot as declared, running kernel not: reboot pending", running: "quiet rhgb", next: "nosmt mitigations=off", nextOK: true, want: got{
			Notices: []string{"kernel-argument:nosmt", "kernel-argument:quiet", "kernel-argument:mitigations=off", "kernel-argument:rhgb"}}},
		{name: "next boot lacks one the running kernel has: drift", running: "nosmt mitigations=off", next: "mitigations=off rhgb", nextOK: true, want: got{
			Drift: []string{"/proc/cmdline kernel-argument kernel-argument:nosmt", "/proc/cmdline kernel-argument kernel-argument:rhgb"}}},
		{name: "both as declared", running: "nosmt mitigations=off", next: "nosmt mitigations=off", nextOK: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newChecker(t, t.TempDir())
			c.Cmdline = func() (string, error) { return tt.running, nil }
			c.NextBoot = func() (string, string, bool, error) { return tt.next, src, tt.nextOK, nil }
			res := c.All(t.Context(), entries)
			var g got
			for _, d := range res.Drift {
				g.Drift = append(g.Drift, d.Path+" "+string(d.Kind)+" "+d.EntryID)
				if tt.nextOK && !strings.Contains(d.Message, src) {
					t.Errorf("drift %q does not name %s", d.Message, src)
				}
			}
			for _, n := range res.Notices {
				g.Notices = append(g.Notices, n.EntryID)
				if n.Kind != drift.RebootPending || !strings.HasPrefix(n.Message, "reboot pending: ") {
					t.Errorf("notice %+v, want a reboot-pending one", n)
				}
			}
			if diff := cmp.Diff(tt.want, g); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			// The daemon's re-check of one entry agrees on drift.
			if diff := cmp.Diff(res.Drift, oneByOne(c, entries)); diff != "" {
				t.Errorf("Entry disagrees with All (-All +Entry):\n%s", diff)
			}
		})
	}
}
