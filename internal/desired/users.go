package desired

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"sort"
	"strconv"
	"strings"

	types "github.com/drift-monitor/drift-monitor/internal/ignspec"

	"github.com/drift-monitor/drift-monitor/internal/errpath"
)

// The kinds of the entries of passwd.users and passwd.groups.
const (
	KindUser  Kind = "user"
	KindGroup Kind = "group"
)

// Account is what a passwd.users or passwd.groups item declares, as
// Ignition applies it. Nil (or, for Groups, empty) fields are not checked.
//
// Ignition v2.14.0 and v2.27.0 alike (internal/exec/util/passwd.go,
// EnsureUser and SetPasswordHash, the same for users in both): a user that
// exists is usermod'ed with --uid, --comment, --gid, --groups, --shell,
// --home --move-home and --password for each declared field, a user that
// does not is useradd'ed with the same fields; --no-create-home, --no-user-group,
// --system and --no-log-init reach useradd only, so they shape a user at
// creation and are nothing to an account that already existed (as core on
// Fedora CoreOS does): they are not checked, since nothing on disk tells an
// account Ignition created from one it found. A groups item is groupadd'ed
// with --gid and --password, or (v2.27.0: EnsureGroup; up to v2.24.0 it
// only ever runs groupadd, which fails on an existing group) groupmod'ed
// with them; followed as v2.27.0, which go.mod pins, does it. Up to
// v2.24.0 a group created without a declared hash got --password "*", in
// v2.27.0 none: creation-only either way, and not checked.
type Account struct {
	Name string
	// Absent: shouldExist false (spec 3.2.0 and later). Ignition runs
	// `userdel --remove` or `groupdel` on an account that exists: it must
	// not exist, and nothing else is declared.
	Absent bool
	// ID is the declared uid (users) or gid (groups).
	ID *int
	// Gecos, Home, Shell and PrimaryGroup are declared only when non-empty
	// (appendIfStringSet: util.NotEmpty). PrimaryGroup is a name or a
	// number, as useradd --gid takes it.
	Gecos, Home, Shell, PrimaryGroup *string
	// Groups is the exact supplementary list (usermod --groups without
	// --append); nil when none is declared: Ignition passes --groups only
	// for a non-empty list.
	Groups []string
	// PasswordHash is the hash /etc/shadow (users) or /etc/gshadow
	// (groups) must hold. For a user, an empty declared hash is "*" (both
	// EnsureUser and SetPasswordHash); for a group, an empty one is not
	// applied (util.NotEmpty), so it is not declared.
	PasswordHash *string
	// Creation holds what reaches useradd and groupadd only: not checked,
	// but what a user or group put back is created with.
	Creation Creation
}

// Creation is the creation-only flags of an account: useradd's
// --no-create-home (else --create-home), --no-user-group, --system and
// --no-log-init; groupadd's --system.
type Creation struct {
	NoCreateHome, NoUserGroup, System, NoLogInit bool
}

// ID of an account entry: its kind and name.
func accountID(k Kind, name string) string { return string(k) + ":" + name }

// deriveAccounts adds an entry per passwd.groups and passwd.users item.
// Their paths are the databases they live in (/etc/group, /etc/passwd), for
// ordering and the daemon's index; they are judged by reading every account
// file (AccountFiles).
func deriveAccounts(p types.Passwd, add func(Entry)) {
	for _, g := range p.Groups {
		a := &Account{Name: g.Name, Absent: g.ShouldExist != nil && !*g.ShouldExist}
		if !a.Absent {
			a.ID = g.Gid
			a.Creation.System = isTrue(g.System)
			if g.PasswordHash != nil && *g.PasswordHash != "" {
				a.PasswordHash = g.PasswordHash
			}
		}
		add(Entry{Kind: KindGroup, Path: GroupFile, Type: TypeNone, Account: a})
	}
	for _, u := range p.Users {
		a := &Account{Name: u.Name, Absent: u.ShouldExist != nil && !*u.ShouldExist}
		if !a.Absent {
			a.ID = u.UID
			a.Gecos, a.Home, a.Shell, a.PrimaryGroup = nonEmpty(u.Gecos), nonEmpty(u.HomeDir), nonEmpty(u.Shell), nonEmpty(u.PrimaryGroup)
			a.Creation = Creation{NoCreateHome: isTrue(u.NoCreateHome), NoUserGroup: isTrue(u.NoUserGroup),
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
		add(Entry{Kind: KindUser, Path: PasswdFile, User: u.Name, Type: TypeNone, Account: a})
	}
}

// mcdPasswords gives the users a MachineConfig declares the password the
// machine-config daemon sets them: it runs `usermod -p HASH USER` for each
// of them on every update, with "*" when no hash (or an empty one) is
// declared (machine-config-operator pkg/daemon/update.go, SetPasswordHash:
// pwhash := "*"), where Ignition leaves an undeclared hash alone.
func mcdPasswords(st *State, frags []Fragment) {
	mc := map[string]bool{}
	for _, f := range frags {
		if f.machineConfig {
			for _, u := range f.Config.Passwd.Users {
				mc[u.Name] = true
			}
		}
	}
	for i := range st.Entries {
		e := &st.Entries[i]
		if e.Kind == KindUser && mc[e.User] && !e.Account.Absent && e.Account.PasswordHash == nil {
			star := "*"
			e.Account.PasswordHash = &star
		}
	}
}

func isTrue(b *bool) bool { return b != nil && *b }

func nonEmpty(s *string) *string {
	if s == nil || *s == "" {
		return nil
	}
	return s
}

// The account files: where shadow-utils (which Ignition runs with --root)
// keeps accounts, and where nss-altfiles keeps the image's own on
// rpm-ostree hosts (Fedora CoreOS, RHEL CoreOS: passwd: files altfiles).
// Records of nss-systemd (userdb, dynamic users) are not read: no tool
// Ignition runs writes them.
const (
	PasswdFile        = "/etc/passwd"
	ShadowFile        = "/etc/shadow"
	GroupFile         = "/etc/group"
	GShadowFile       = "/etc/gshadow"
	AltFilesPasswd    = "/usr/lib/passwd"
	AltFilesGroup     = "/usr/lib/group"
	accountFilesCount = 6
)

// AccountFiles lists every file an account entry is judged by.
var AccountFiles = [accountFilesCount]string{PasswdFile, ShadowFile, GroupFile, GShadowFile, AltFilesPasswd, AltFilesGroup}

// AccountLocks are the lock files shadow-utils holds while it rewrites the
// account files (lib/commonio.c, commonio_lock_nowait: FILE.lock, a link
// to a file holding the writer's pid), one per file, all held until every
// file is renamed into place.
var AccountLocks = [4]string{PasswdFile + ".lock", ShadowFile + ".lock", GroupFile + ".lock", GShadowFile + ".lock"}

// Passwd is an account-file line of a user: passwd's fields, and the hash
// of its shadow line.
type Passwd struct {
	Name, Gecos, Home, Shell string
	UID, GID                 int
	// Source is the file the line is in (/etc/passwd or /usr/lib/passwd).
	Source string
	// Hash is the shadow line's password field; HasShadow says there is one.
	Hash      string
	HasShadow bool
	// HashFile is the file Hash was read from: /etc/shadow, or /etc/passwd
	// when the root has no shadow file.
	HashFile string
}

// Group is a group line, with its gshadow line's hash.
type Group struct {
	Name    string
	GID     int
	Members []string
	Source  string
	// Hash is the gshadow line's password field; HasShadow says there is one.
	Hash      string
	HasShadow bool
	// HashFile is the file Hash was read from: /etc/gshadow, or /etc/group
	// when the root has no gshadow file.
	HashFile string
}

// AccountDB is a root's accounts as NSS with "files altfiles" sees them:
// the first line of a name wins, /etc before /usr/lib.
type AccountDB struct {
	Users  map[string]*Passwd
	Groups map[string]*Group
	// groupsByID holds the first group of each gid.
	groupsByID map[int]*Group
	// ShadowErr and GShadowErr say why /etc/shadow or /etc/gshadow could
	// not be read (it is not world-readable: a check without root's
	// privileges): the hashes are then unknown, not absent.
	ShadowErr, GShadowErr error
}

// ReadAccountDB reads AccountFiles inside root. A missing file is an empty
// database. An unreadable shadow file leaves its hashes unknown
// (AccountDB.ShadowErr, GShadowErr): the rest is still judged; any other
// unreadable file is an error naming its host path (never prefixed by the
// root).
func ReadAccountDB(root Host) (*AccountDB, error) {
	var raw [accountFilesCount][]byte
	var shadowErr [accountFilesCount]error
	for i, f := range AccountFiles {
		data, err := root.ReadFile(f)
		switch {
		case err == nil, errors.Is(err, fs.ErrNotExist):
		case f == ShadowFile || f == GShadowFile:
			shadowErr[i] = fmt.Errorf("reading %s: %w", f, errpath.Strip(err))
			data = []byte{} // there, unread: the hashes are not passwd's own fields
		default:
			return nil, fmt.Errorf("reading %s: %w", f, errpath.Strip(err))
		}
		raw[i] = data
	}
	db := ParseAccountDB(raw)
	db.ShadowErr, db.GShadowErr = shadowErr[1], shadowErr[3]
	return db, nil
}

// ParseAccountDB parses the contents of AccountFiles, in its order; a nil
// one is a file that does not exist.
func ParseAccountDB(raw [accountFilesCount][]byte) *AccountDB {
	db := &AccountDB{Users: map[string]*Passwd{}, Groups: map[string]*Group{}, groupsByID: map[int]*Group{}}
	for _, i := range [2]int{0, 4} {
		src := AccountFiles[i]
		colonLines(raw[i], func(f []string) {
			if len(f) < 6 {
				return
			}
			shell := ""
			if len(f) > 6 {
				shell = f[6]
			}
			uid, err1 := strconv.Atoi(f[2])
			gid, err2 := strconv.Atoi(f[3])
			if err1 != nil || err2 != nil {
				return
			}
			if _, dup := db.Users[f[0]]; !dup {
				u := &Passwd{Name: f[0], UID: uid, GID: gid, Gecos: f[4], Home: f[5], Shell: shell, Source: src}
				if raw[1] == nil && src == PasswdFile {
					// Without /etc/shadow, shadow-utils keeps the hash in
					// passwd's own field (lib/pwio.c: is_shadow_pwd is false).
					u.Hash, u.HasShadow, u.HashFile = f[1], true, PasswdFile
				}
				db.Users[f[0]] = u
			}
		})
	}
	for _, i := range [2]int{2, 5} {
		src := AccountFiles[i]
		colonLines(raw[i], func(f []string) {
			if len(f) < 3 {
				return
			}
			gid, err := strconv.Atoi(f[2])
			if err != nil {
				return
			}
			if _, dup := db.Groups[f[0]]; dup {
				return
			}
			g := &Group{Name: f[0], GID: gid, Source: src}
			if len(f) > 3 {
				g.Members = members(f[3])
			}
			if raw[3] == nil && src == GroupFile {
				// Without /etc/gshadow, in group's own field (is_shadow_grp).
				g.Hash, g.HasShadow, g.HashFile = f[1], true, GroupFile
			}
			db.Groups[f[0]] = g
			if _, dup := db.groupsByID[gid]; !dup {
				db.groupsByID[gid] = g
			}
		})
	}
	colonLines(raw[1], func(f []string) {
		if u := db.Users[f[0]]; len(f) >= 2 && u != nil && u.Source == PasswdFile && !u.HasShadow {
			u.Hash, u.HasShadow, u.HashFile = f[1], true, ShadowFile
		}
	})
	colonLines(raw[3], func(f []string) {
		if g := db.Groups[f[0]]; len(f) >= 2 && g != nil && g.Source == GroupFile && !g.HasShadow {
			g.Hash, g.HasShadow, g.HashFile = f[1], true, GShadowFile
		}
	})
	return db
}

func members(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

// GroupOf resolves a group as shadow-utils' --gid and --groups do
// (lib/getgr_nam_gid.c, getgr_nam_gid): a number is a gid, anything else
// a name; either must be a group that exists.
func (db *AccountDB) GroupOf(nameOrID string) (*Group, bool) {
	// A number that is no gid (negative, or beyond 32 bits) is a name:
	// getgr_nam_gid takes it as a gid only if gid_t holds it.
	if id, err := strconv.ParseInt(nameOrID, 10, 64); err == nil && id >= 0 && id <= math.MaxUint32 {
		g, ok := db.groupsByID[int(id)]
		return g, ok
	}
	g, ok := db.Groups[nameOrID]
	return g, ok
}

// GroupByID is the first group of gid.
func (db *AccountDB) GroupByID(gid int) (*Group, bool) {
	g, ok := db.groupsByID[gid]
	return g, ok
}

// MemberOf lists, sorted, the names of the groups of /etc/group whose
// member list names user: the list usermod --groups sets (it edits
// /etc/group and /etc/gshadow, never /usr/lib/group, so a membership there
// is the image's, not Ignition's, and is not counted).
func (db *AccountDB) MemberOf(user string) []string {
	var out []string
	for _, g := range db.Groups {
		if g.Source != GroupFile {
			continue
		}
		for _, m := range g.Members {
			if m == user {
				out = append(out, g.Name)
				break
			}
		}
	}
	sort.Strings(out)
	return out
}
