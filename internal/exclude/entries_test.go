package exclude

import (
	"testing"

	"github.com/drift-monitor/drift-monitor/internal/accountdb"
	"github.com/drift-monitor/drift-monitor/internal/drift"
	"github.com/drift-monitor/drift-monitor/internal/model"
	"github.com/google/go-cmp/cmp"
)

// TestTheFileThatHoldsAValue: what is left alone is decided by the file
// that holds a value, the drift's path as reported: /etc/shadow leaves a
// user's password hash alone and nothing else of it; /etc/passwd what
// /etc/passwd holds, not the hash; a user is left alone entirely only when
// every file that holds one of its values is.
func TestTheFileThatHoldsAValue(t *testing.T) {
	user := model.Entry{Kind: model.KindUser, Path: accountdb.PasswdFile, User: "core", Account: &model.Account{Name: "core"}}
	group := model.Entry{Kind: model.KindGroup, Path: accountdb.GroupFile, Account: &model.Account{Name: "docker"}}
	file := model.Entry{Kind: model.KindFile, Path: "/etc/a.conf"}
	reported := func(r *Rules, k drift.Kind, p string) bool { return !r.Unreported(string(k), p) }

	shadow := mustParse(t, "/etc/shadow\n")
	if !reported(shadow, drift.Shell, accountdb.PasswdFile) || reported(shadow, drift.PasswordHash, accountdb.ShadowFile) ||
		!reported(shadow, drift.Groups, accountdb.GroupFile) {
		t.Errorf("/etc/shadow: the hash must be unreported, the shell and groups reported")
	}
	if shadow.LeavesEntryOf(&user) || !shadow.Forbids(accountdb.ShadowFile) || shadow.Forbids(accountdb.PasswdFile) {
		t.Errorf("/etc/shadow: the user must be checked, only /etc/shadow's repair forbidden")
	}

	passwd := mustParse(t, "/etc/passwd\n")
	if reported(passwd, drift.Shell, accountdb.PasswdFile) || reported(passwd, drift.Missing, accountdb.PasswdFile) ||
		!reported(passwd, drift.PasswordHash, accountdb.ShadowFile) || passwd.LeavesEntryOf(&user) {
		t.Errorf("/etc/passwd: what it holds must be unreported, the hash still checked")
	}

	all := mustParse(t, "/etc/passwd\n/etc/shadow\n/etc/group\n/etc/gshadow\n/usr/lib/passwd\n/usr/lib/group\n/etc/a.conf\n")
	kept, left := all.Split([]model.Entry{user, file, group, {Kind: model.KindFile, Path: "/etc/b.conf"}})
	if len(kept) != 1 || kept[0].Path != "/etc/b.conf" || len(left) != 3 {
		t.Errorf("every file of the accounts excluded: kept %v, left %v", kept, left)
	}
	want := []Left{
		{Entry: model.KindUser, Path: "/etc/passwd", User: "core", ExcludedBy: "/etc/passwd (exclude.conf:1)"},
		{Entry: model.KindFile, Path: "/etc/a.conf", ExcludedBy: "/etc/a.conf (exclude.conf:7)"},
		{Entry: model.KindGroup, Path: "/etc/group", Group: "docker", ExcludedBy: "/etc/group (exclude.conf:3)"},
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

	if kept, left := (*Rules)(nil).Split([]model.Entry{file}); len(kept) != 1 || left != nil {
		t.Errorf("no rules: kept %v, left %v", kept, left)
	}
}
