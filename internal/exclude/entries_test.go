package exclude

import (
	"testing"

	"github.com/drift-monitor/drift-monitor/internal/desired"
	"github.com/drift-monitor/drift-monitor/internal/drift"
	"github.com/google/go-cmp/cmp"
)

// TestTheFileThatHoldsAValue: what is left alone is decided by the file
// that holds a value, the drift's path as reported: /etc/shadow leaves a
// user's password hash alone and nothing else of it; /etc/passwd what
// /etc/passwd holds, not the hash; a user is left alone entirely only when
// every file that holds one of its values is.
func TestTheFileThatHoldsAValue(t *testing.T) {
	user := desired.Entry{Kind: desired.KindUser, Path: desired.PasswdFile, User: "core", Account: &desired.Account{Name: "core"}}
	group := desired.Entry{Kind: desired.KindGroup, Path: desired.GroupFile, Account: &desired.Account{Name: "docker"}}
	file := desired.Entry{Kind: desired.KindFile, Path: "/etc/a.conf"}
	reported := func(r *Rules, k drift.Kind, p string) bool { return !r.Unreported(string(k), p) }

	shadow := mustParse(t, "/etc/shadow\n")
	if !reported(shadow, drift.Shell, desired.PasswdFile) || reported(shadow, drift.PasswordHash, desired.ShadowFile) ||
		!reported(shadow, drift.Groups, desired.GroupFile) {
		t.Errorf("/etc/shadow: the hash must be unreported, the shell and groups reported")
	}
	if shadow.LeavesEntryOf(&user) || !shadow.Forbids(desired.ShadowFile) || shadow.Forbids(desired.PasswdFile) {
		t.Errorf("/etc/shadow: the user must be checked, only /etc/shadow's repair forbidden")
	}

	passwd := mustParse(t, "/etc/passwd\n")
	if reported(passwd, drift.Shell, desired.PasswdFile) || reported(passwd, drift.Missing, desired.PasswdFile) ||
		!reported(passwd, drift.PasswordHash, desired.ShadowFile) || passwd.LeavesEntryOf(&user) {
		t.Errorf("/etc/passwd: what it holds must be unreported, the hash still checked")
	}

	all := mustParse(t, "/etc/passwd\n/etc/shadow\n/etc/group\n/etc/gshadow\n/usr/lib/passwd\n/usr/lib/group\n/etc/a.conf\n")
	kept, left := all.Split([]desired.Entry{user, file, group, {Kind: desired.KindFile, Path: "/etc/b.conf"}})
	if len(kept) != 1 || kept[0].Path != "/etc/b.conf" || len(left) != 3 {
		t.Errorf("every file of the accounts excluded: kept %v, left %v", kept, left)
	}
	want := []Left{
		{Entry: desired.KindUser, Path: "/etc/passwd", User: "core", ExcludedBy: "/etc/passwd (exclude.conf:1)"},
		{Entry: desired.KindFile, Path: "/etc/a.conf", ExcludedBy: "/etc/a.conf (exclude.conf:7)"},
		{Entry: desired.KindGroup, Path: "/etc/group", Group: "docker", ExcludedBy: "/etc/group (exclude.conf:3)"},
	}
	got := all.Report(left)
	// The noun is compared through String, below.
	if diff := cmp.Diff(want, got, cmp.Comparer(func(a, b Left) bool {
		a.noun, b.noun = "", ""
		return a == b
	})); diff != "" {
		t.Errorf("report (-want +got):\n%s", diff)
	}
	if s := got[1].String(); s != `file "/etc/a.conf": excluded by /etc/a.conf (exclude.conf:7)` {
		t.Errorf("a left entry reads %q", s)
	}
	if LeftPaths(left) != 3 || LeftPaths(append(left, left...)) != 3 {
		t.Errorf("LeftPaths counts entries, not paths")
	}

	if kept, left := (*Rules)(nil).Split([]desired.Entry{file}); len(kept) != 1 || left != nil {
		t.Errorf("no rules: kept %v, left %v", kept, left)
	}
}
