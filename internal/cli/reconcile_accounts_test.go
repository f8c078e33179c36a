package cli

import (
	"testing"

	"github.com/drift-monitor/drift-monitor/internal/accountdb"
	"github.com/drift-monitor/drift-monitor/internal/drift"
	"github.com/drift-monitor/drift-monitor/internal/model"
	"github.com/google/go-cmp/cmp"
)

// TestSelectionOfAccounts: naming an account file selects the drift
// reported there; naming a user's entry path (/etc/passwd) selects all of
// that user's drift, wherever it is kept; neither names an undeclared path.
func TestSelectionOfAccounts(t *testing.T) {
	entries := []model.Entry{
		{Kind: model.KindUser, Path: accountdb.PasswdFile, User: "core", Account: &model.Account{Name: "core"}},
		{Kind: model.KindGroup, Path: accountdb.GroupFile, Account: &model.Account{Name: "docker"}},
		{Kind: model.KindFile, Path: "/etc/motd"},
	}
	core, docker := entries[0].ID(), entries[1].ID()
	ds := []drift.Drift{
		{Kind: drift.Shell, Path: accountdb.PasswdFile, EntryID: core},
		{Kind: drift.PasswordHash, Path: accountdb.ShadowFile, EntryID: core},
		{Kind: drift.Groups, Path: accountdb.GroupFile, EntryID: core},
		{Kind: drift.PasswordHash, Path: accountdb.GShadowFile, EntryID: docker},
		{Kind: drift.Content, Path: "/etc/motd", EntryID: entries[2].ID()},
	}
	kinds := func(ds []drift.Drift) []string {
		var out []string
		for _, d := range ds {
			out = append(out, d.EntryID+" "+string(d.Kind))
		}
		return out
	}
	tests := []struct {
		name string
		want []string
	}{
		{"/etc/passwd", []string{core + " shell", core + " password-hash", core + " groups"}},
		{"/etc/shadow", []string{core + " password-hash"}},
		{"/etc/group", []string{core + " groups", docker + " password-hash"}},
		{"/etc/gshadow", []string{docker + " password-hash"}},
	}
	for _, tt := range tests {
		s := selection{names: []string{tt.name}}
		if n := s.undeclared(entries); n != "" {
			t.Errorf("%s: undeclared %q", tt.name, n)
		}
		if diff := cmp.Diff(tt.want, kinds(s.drift(ds, entries))); diff != "" {
			t.Errorf("%s selects (-want +got):\n%s", tt.name, diff)
		}
	}
	if n := (selection{names: []string{"/etc/shadow"}}).undeclared(entries[2:]); n != "/etc/shadow" {
		t.Errorf("without accounts, /etc/shadow is declared (%q)", n)
	}
}
