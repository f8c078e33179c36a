package derive

import (
	types "github.com/drift-monitor/drift-monitor/internal/ignspec"

	"github.com/drift-monitor/drift-monitor/internal/accountdb"
	"github.com/drift-monitor/drift-monitor/internal/model"
)

// deriveAccounts adds an entry per passwd.groups and passwd.users item.
// Their paths are the databases they live in (/etc/group, /etc/passwd), for
// ordering and the daemon's index; they are judged by reading every account
// file (accountdb.Files).
func deriveAccounts(p types.Passwd, add func(model.Entry)) {
	for _, g := range p.Groups {
		a := &model.Account{Name: g.Name, Absent: g.ShouldExist != nil && !*g.ShouldExist}
		if !a.Absent {
			a.ID = g.Gid
			a.Creation.System = isTrue(g.System)
			if g.PasswordHash != nil && *g.PasswordHash != "" {
				a.PasswordHash = g.PasswordHash
			}
		}
		add(model.Entry{Kind: model.KindGroup, Path: accountdb.GroupFile, Type: model.TypeNone, Account: a})
	}
	for _, u := range p.Users {
		a := &model.Account{Name: u.Name, Absent: u.ShouldExist != nil && !*u.ShouldExist}
		if !a.Absent {
			a.ID = u.UID
			a.Gecos, a.Home, a.Shell, a.PrimaryGroup = nonEmpty(u.Gecos), nonEmpty(u.HomeDir), nonEmpty(u.Shell), nonEmpty(u.PrimaryGroup)
			a.Creation = model.Creation{NoCreateHome: isTrue(u.NoCreateHome), NoUserGroup: isTrue(u.NoUserGroup),
				System: isTrue(u.System), NoLogInit: isTrue(u.NoLogInit)}
			for _, g := range u.Groups {
				a.Groups = append(a.Groups, string(g))
			}
			if u.PasswordHash != nil {
				h := *u.PasswordHash
				if h == "" {
					h = "*"
				}
				a.PasswordHash = &h
			}
		}
		add(model.Entry{Kind: model.KindUser, Path: accountdb.PasswdFile, User: u.Name, Type: model.TypeNone, Account: a})
	}
}

func isTrue(b *bool) bool { return b != nil && *b }

func nonEmpty(s *string) *string {
	if s == nil || *s == "" {
		return nil
	}
	return s
}
