package audit

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/drift-monitor/drift-monitor/internal/model"
)

// TestPlanWatches: one rule per node, each a watch of that node (never a
// tree, whatever the node is), missing paths covered from the nearest
// existing ancestor; "/" none. A path that is not absolute is refused,
// never skipped.
func TestPlanWatches(t *testing.T) {
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "etc/ssh"), 0o755)
	os.WriteFile(filepath.Join(root, "etc/motd"), nil, 0o644)
	os.Symlink("motd", filepath.Join(root, "etc/link"))
	j := func(p string) string { return filepath.Join(root, p) }
	got, err := PlanWatches([]string{
		j("etc/motd"), j("etc/motd"), // once
		j("etc/link"),   // the link itself, not its target
		j("etc/ssh"),    // a directory: its own node, never the tree
		j("etc/notyet"), // missing, parent there
		j("etc/a/b/c"),  // missing down to etc/a
		j("etc/a/b/d"),  // the same cover
		"/",             // never
	}, Key, nil)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, r := range got {
		lines = append(lines, r.String())
	}
	want := []string{
		"-w " + j("etc/a") + " -p wa -k drift-monitor",
		"-w " + j("etc/link") + " -p wa -k drift-monitor",
		"-w " + j("etc/motd") + " -p wa -k drift-monitor",
		"-w " + j("etc/notyet") + " -p wa -k drift-monitor",
		"-w " + j("etc/ssh") + " -p wa -k drift-monitor",
	}
	if diff := cmp.Diff(want, lines); diff != "" {
		t.Errorf("rules (-want +got):\n%s", diff)
	}
	for _, r := range got {
		if _, dir, _, _ := r.Watch(); dir {
			t.Errorf("%s: a tree watch (AUDIT_DIR)", r)
		}
	}
	for _, rel := range []string{"relative", "etc/motd", "./x", ""} {
		if got, err := PlanWatches([]string{j("etc/motd"), rel}, Key, nil); err == nil || !strings.Contains(err.Error(), "not an absolute path") {
			t.Errorf("PlanWatches with %q: %v, %v; want it refused", rel, got, err)
		}
	}
}

// TestRuleFile: a watch is written for a rules file in the form auditctl
// loads as the same rule whatever the path is then (-F path= or dir=);
// -w would become a tree watch of a directory.
func TestRuleFile(t *testing.T) {
	for _, tt := range []struct {
		r    Rule
		want string
	}{
		{WatchRule("/etc/ssh", false, Key), "-a always,exit -F path=/etc/ssh -F perm=wa -F key=drift-monitor"},
		{WatchRule("/etc/ssh", true, Key), "-a always,exit -F dir=/etc/ssh -F perm=wa -F key=drift-monitor"},
	} {
		if got := tt.r.File(); got != tt.want {
			t.Errorf("File() = %q, want %q", got, tt.want)
		}
	}
}

// TestDeclaredPaths: what each kind's row lets an audit rule watch, and
// nothing under /proc or /sys whatever the kind.
func TestDeclaredPaths(t *testing.T) {
	entries := []model.Entry{
		{Kind: model.KindFile, Path: "/etc/motd"},
		{Kind: model.KindDirectory, Path: "/etc/app"},
		{Kind: model.KindHardLink, Path: "/etc/hl", Target: "/etc/motd"},
		{Kind: model.KindEnablement, Path: "/etc/systemd/system/a.service", Unit: "a.service"},
		{Kind: model.KindKernelArg, Path: "/proc/cmdline", Arg: "nosmt"},
		{Kind: model.KindOSImage, Path: model.OSImagePath},
		{Kind: model.KindKernelType, Path: model.KernelTypePath},
		{Kind: model.KindExtension, Path: model.ExtensionPath},
		{Kind: model.KindFIPS, Path: model.FIPSPath},
		{Kind: model.KindConfig, Path: "/etc/drift-monitor/desired.d/a.ign"},
		{Kind: model.KindNotChecked, Path: "/etc/kubernetes/kubelet-ca.crt"},
		{Kind: model.KindUser, Path: "/etc/passwd", User: "core"},
		{Kind: model.KindFile, Path: "/proc/sys/kernel/foo"},
		{Kind: model.KindFile, Path: "/sys/kernel/bar"},
		{Kind: model.KindFile, Path: "/sysroot/ok"},
	}
	want := []string{"/r/etc/motd", "/r/etc/app", "/r/etc/motd", "/r/etc/hl", "/r/etc/passwd", "/r/sysroot/ok"}
	if diff := cmp.Diff(want, DeclaredPaths("/r", entries, nil)); diff != "" {
		t.Errorf("DeclaredPaths (-want +got):\n%s", diff)
	}
}
