package desired

import (
	"bufio"
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// RootAccounts reads a root's account databases: /etc/passwd and /etc/group,
// then /usr/lib/passwd and /usr/lib/group (nss-altfiles, where Fedora CoreOS
// keeps its system users, including core). The first match wins, as in
// nsswitch's "files altfiles" order.
type RootAccounts struct {
	users  map[string]User
	groups map[string]int
}

// ReadAccounts reads the account databases under root. Missing files are
// empty databases; an unreadable one is an error.
func ReadAccounts(root string) (*RootAccounts, error) {
	a := &RootAccounts{users: map[string]User{}, groups: map[string]int{}}
	for _, f := range []string{"/etc/passwd", "/usr/lib/passwd"} {
		if err := readColonFile(filepath.Join(root, f), func(fields []string) {
			if len(fields) < 6 {
				return
			}
			uid, err1 := strconv.Atoi(fields[2])
			gid, err2 := strconv.Atoi(fields[3])
			if err1 != nil || err2 != nil {
				return
			}
			if _, dup := a.users[fields[0]]; !dup {
				a.users[fields[0]] = User{Name: fields[0], UID: uid, GID: gid, Home: fields[5]}
			}
		}); err != nil {
			return nil, err
		}
	}
	for _, f := range []string{"/etc/group", "/usr/lib/group"} {
		if err := readColonFile(filepath.Join(root, f), func(fields []string) {
			if len(fields) < 3 {
				return
			}
			gid, err := strconv.Atoi(fields[2])
			if err != nil {
				return
			}
			if _, dup := a.groups[fields[0]]; !dup {
				a.groups[fields[0]] = gid
			}
		}); err != nil {
			return nil, err
		}
	}
	return a, nil
}

func readColonFile(file string, line func([]string)) error {
	data, err := os.ReadFile(file)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		t := sc.Text()
		if t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		line(strings.Split(t, ":"))
	}
	return sc.Err()
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
