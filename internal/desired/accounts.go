package desired

import (
	"errors"
	"io/fs"

	"github.com/drift-monitor/drift-monitor/internal/accountdb"
)

// RootAccounts reads a root's account databases: /etc/passwd and /etc/group,
// then /usr/lib/passwd and /usr/lib/group (nss-altfiles, where Fedora CoreOS
// keeps its system users, including core). The first match wins, as in
// nsswitch's "files altfiles" order.
type RootAccounts struct {
	users  map[string]User
	groups map[string]int
}

// accountFiles are the account databases readAccounts reads, in lookup order:
// users from the first two, groups from the last two.
var accountFiles = [4]string{"/etc/passwd", "/usr/lib/passwd", "/etc/group", "/usr/lib/group"}

// readAccounts reads the account databases inside root. Missing files are
// empty databases; an unreadable one is an error.
func readAccounts(root Host) (*RootAccounts, error) {
	raw, err := readAccountFiles(root)
	if err != nil {
		return nil, err
	}
	return parseAccounts(raw), nil
}

// readAccountFiles reads accountFiles inside root; a missing file is nil.
func readAccountFiles(root Host) ([4][]byte, error) {
	var raw [4][]byte
	for i, f := range accountFiles {
		data, err := root.ReadFile(f)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return raw, err
		}
		raw[i] = data
	}
	return raw, nil
}

// parseAccounts parses the contents of accountFiles, as accountdb.Parse
// parses them.
func parseAccounts(raw [4][]byte) *RootAccounts {
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
