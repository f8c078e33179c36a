package statecache

import (
	"encoding/binary"

	"github.com/drift-monitor/drift-monitor/internal/model"
)

// The fields of an account, after its flags: the name, then each field
// whose flag is set, in this order; Groups as a count and the names.
const (
	acctAbsent = 1 << iota
	acctID
	acctGecos
	acctHome
	acctShell
	acctPrimaryGroup
	acctGroups
	acctPassword
	acctNoCreateHome
	acctNoUserGroup
	acctSystem
	acctNoLogInit
)

func appendAccount(b []byte, a *model.Account) []byte {
	var flags uint64
	set := func(f uint64, on bool) {
		if on {
			flags |= f
		}
	}
	set(acctAbsent, a.Absent)
	set(acctID, a.ID != nil)
	strs := [...]*string{a.Gecos, a.Home, a.Shell, a.PrimaryGroup}
	for i, s := range strs {
		set(acctGecos<<i, s != nil)
	}
	set(acctGroups, a.Groups != nil)
	set(acctPassword, a.PasswordHash != nil)
	set(acctNoCreateHome, a.Creation.NoCreateHome)
	set(acctNoUserGroup, a.Creation.NoUserGroup)
	set(acctSystem, a.Creation.System)
	set(acctNoLogInit, a.Creation.NoLogInit)
	b = binary.AppendUvarint(b, flags)
	b = appendString(b, a.Name)
	if a.ID != nil {
		b = binary.AppendVarint(b, int64(*a.ID))
	}
	for _, s := range strs {
		if s != nil {
			b = appendString(b, *s)
		}
	}
	if a.Groups != nil {
		b = appendStrings(b, a.Groups)
	}
	if a.PasswordHash != nil {
		b = appendString(b, *a.PasswordHash)
	}
	return b
}

func (r *reader) account() *model.Account {
	flags := r.uvarint()
	a := &model.Account{Name: r.string(), Absent: flags&acctAbsent != 0, Creation: model.Creation{
		NoCreateHome: flags&acctNoCreateHome != 0, NoUserGroup: flags&acctNoUserGroup != 0,
		System: flags&acctSystem != 0, NoLogInit: flags&acctNoLogInit != 0}}
	if flags&acctID != 0 {
		id := int(r.varint())
		a.ID = &id
	}
	for i, p := range [...]**string{&a.Gecos, &a.Home, &a.Shell, &a.PrimaryGroup} {
		if flags&(acctGecos<<i) != 0 {
			s := r.string()
			*p = &s
		}
	}
	if flags&acctGroups != 0 {
		a.Groups = r.strings()
		if a.Groups == nil {
			a.Groups = []string{}
		}
	}
	if flags&acctPassword != 0 {
		s := r.string()
		a.PasswordHash = &s
	}
	return a
}
