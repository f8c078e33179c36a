// Package accountdb reads a root's account databases as the tools that
// write them and the NSS modules that read them do: /etc/passwd, /etc/shadow,
// /etc/group and /etc/gshadow (shadow-utils, which Ignition runs with
// --root), then /usr/lib/passwd and /usr/lib/group (nss-altfiles, where
// rpm-ostree hosts keep the image's own accounts). The loader (package
// desired: user and group names in a config), the observer (ondisk), the
// comparison (drift) and the repair (reconcile) all read accounts through
// it, so that they agree on which line of a name counts.
//
// It is a leaf apart from package model on purpose: the model is what a
// config declares; this is how a host's files are read, and it knows
// nothing of entries.
//
// It does not promise to see accounts from anywhere else (LDAP, userdb,
// systemd's dynamic users): no tool Ignition runs writes them.
package accountdb

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/drift-monitor/drift-monitor/internal/errpath"
)

// Reader reads a host path inside a root whole (*ondisk.Root does); a
// missing file is an error matching fs.ErrNotExist.
type Reader interface {
	ReadFile(hostPath string) ([]byte, error)
}

// The account files: where shadow-utils (which Ignition runs with --root)
// keeps accounts, and where nss-altfiles keeps the image's own on
// rpm-ostree hosts (Fedora CoreOS, RHEL CoreOS: passwd: files altfiles).
// Records of nss-systemd (userdb, dynamic users) are not read: no tool
// Ignition runs writes them.
const (
	PasswdFile     = "/etc/passwd"
	ShadowFile     = "/etc/shadow"
	GroupFile      = "/etc/group"
	GShadowFile    = "/etc/gshadow"
	AltFilesPasswd = "/usr/lib/passwd"
	AltFilesGroup  = "/usr/lib/group"
	filesCount     = 6
)

// Files lists every file an account entry is judged by.
var Files = [filesCount]string{PasswdFile, ShadowFile, GroupFile, GShadowFile, AltFilesPasswd, AltFilesGroup}

// Locks are the lock files shadow-utils holds while it rewrites the
// account files (lib/commonio.c, commonio_lock_nowait: FILE.lock, a link
// to a file holding the writer's pid), one per file, all held until every
// file is renamed into place.
var Locks = [4]string{PasswdFile + ".lock", ShadowFile + ".lock", GroupFile + ".lock", GShadowFile + ".lock"}

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

// DB is a root's accounts as NSS with "files altfiles" sees them:
// the first line of a name wins, /etc before /usr/lib.
type DB struct {
	Users  map[string]*Passwd
	Groups map[string]*Group
	// groupsByID holds the first group of each gid.
	groupsByID map[int]*Group
	// ShadowErr and GShadowErr say why /etc/shadow or /etc/gshadow could
	// not be read (it is not world-readable: a check without root's
	// privileges): the hashes are then unknown, not absent.
	ShadowErr, GShadowErr error
}

// Read reads Files inside root. A missing file is an empty
// database. An unreadable shadow file leaves its hashes unknown
// (DB.ShadowErr, GShadowErr): the rest is still judged; any other
// unreadable file is an error naming its host path (never prefixed by the
// root).
func Read(root Reader) (*DB, error) {
	var raw [filesCount][]byte
	var shadowErr [filesCount]error
	for i, f := range Files {
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
	db := Parse(raw)
	db.ShadowErr, db.GShadowErr = shadowErr[1], shadowErr[3]
	return db, nil
}

// Parse parses the contents of Files, in its order; a nil
// one is a file that does not exist.
func Parse(raw [filesCount][]byte) *DB {
	db := &DB{Users: map[string]*Passwd{}, Groups: map[string]*Group{}, groupsByID: map[int]*Group{}}
	for _, i := range [2]int{0, 4} {
		src := Files[i]
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
		src := Files[i]
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
func (db *DB) GroupOf(nameOrID string) (*Group, bool) {
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
func (db *DB) GroupByID(gid int) (*Group, bool) {
	g, ok := db.groupsByID[gid]
	return g, ok
}

// MemberOf lists, sorted, the names of the groups of /etc/group whose
// member list names user: the list usermod --groups sets (it edits
// /etc/group and /etc/gshadow, never /usr/lib/group, so a membership there
// is the image's, not Ignition's, and is not counted).
func (db *DB) MemberOf(user string) []string {
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

// colonLines calls line with the fields of each line of data that is neither
// empty nor a comment.
func colonLines(data []byte, line func([]string)) {
	for len(data) > 0 {
		var t []byte
		t, data, _ = bytes.Cut(data, []byte("\n"))
		if len(t) == 0 || t[0] == '#' {
			continue
		}
		line(strings.Split(string(t), ":"))
	}
}
