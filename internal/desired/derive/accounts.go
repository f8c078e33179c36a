package derive

import "github.com/drift-monitor/drift-monitor/internal/accountdb"

// Accounts resolves user and group names the way the target root would: from
// its own /etc/passwd and /etc/group (not the host's NSS).
type Accounts interface {
	LookupUser(name string) (User, bool)
	LookupGroup(name string) (gid int, ok bool)
}

// User is a passwd entry.
type User struct {
	Name string
	UID  int
	GID  int
	Home string
}

// RootAccounts reads a root's account databases: /etc/passwd and /etc/group,
// then /usr/lib/passwd and /usr/lib/group (nss-altfiles, where Fedora CoreOS
// keeps its system users, including core). The first match wins, as in
// nsswitch's "files altfiles" order.
type RootAccounts struct {
	users  map[string]User
	groups map[string]int
}

// ParseAccounts parses the contents of /etc/passwd, /usr/lib/passwd,
// /etc/group and /usr/lib/group, in that order (nil: missing), as
// accountdb.Parse parses them.
func ParseAccounts(raw [4][]byte) *RootAccounts {
	db := accountdb.Parse([len(accountdb.Files)][]byte{raw[0], nil, raw[2], nil, raw[1], raw[3]})
	a := &RootAccounts{users: make(map[string]User, len(db.Users)), groups: make(map[string]int, len(db.Groups))}
	for name, u := range db.Users {
		a.users[name] = User{Name: name, UID: u.UID, GID: u.GID, Home: u.Home}
	}
	for name, g := range db.Groups {
		a.groups[name] = g.GID
	}
	return a
}

// LookupUser implements Accounts.
func (a *RootAccounts) LookupUser(name string) (User, bool) {
	u, ok := a.users[name]
	return u, ok
}

// LookupGroup implements Accounts.
func (a *RootAccounts) LookupGroup(name string) (int, bool) {
	g, ok := a.groups[name]
	return g, ok
}
