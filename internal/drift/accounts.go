package drift

import (
	"crypto/sha256"
	"fmt"
	"strconv"
	"strings"

	"github.com/drift-monitor/drift-monitor/internal/accountdb"
	"github.com/drift-monitor/drift-monitor/internal/model"
)

// The kinds of an account's drift: one per field Ignition sets, plus
// Missing (the account does not exist) and Present (an account declared
// shouldExist false exists).
const (
	Present      Kind = "present"
	UID          Kind = "uid"
	GID          Kind = "gid"
	Gecos        Kind = "gecos"
	HomeDir      Kind = "home-dir"
	Shell        Kind = "shell"
	PrimaryGroup Kind = "primary-group"
	Groups       Kind = "groups"
	PasswordHash Kind = "password-hash"
)

// AccountKinds are the kinds only users and groups have.
var AccountKinds = []Kind{Present, UID, GID, Gecos, HomeDir, Shell, PrimaryGroup, Groups, PasswordHash}

// CompareAccount compares a user or group entry with a root's accounts.
// A password hash is a secret: its drift says that it differs, with keyed
// digests of either hash at most (none with the zero Key), never a hash.
func CompareAccount(e *model.Entry, db *accountdb.DB, key model.Key) []Drift {
	r := accountReport{e: e, noun: accountNoun(e), key: key}
	if e.Kind == model.KindGroup {
		g, exists := db.Groups[e.Account.Name]
		if !exists {
			return r.existence(false, accountdb.GroupFile)
		}
		if e.Account.Absent {
			return r.existence(true, g.Source)
		}
		return r.group(g, db)
	}
	u, exists := db.Users[e.Account.Name]
	if !exists {
		return r.existence(false, accountdb.PasswdFile)
	}
	if e.Account.Absent {
		return r.existence(true, u.Source)
	}
	return r.user(u, db)
}

// accountReport makes one account entry's drift.
type accountReport struct {
	e    *model.Entry
	noun string
	key  model.Key
	ds   []Drift
}

func (r *accountReport) add(k Kind, path, msg, want, got string) {
	r.ds = append(r.ds, Drift{Kind: k, Entry: r.e.Kind, Path: path, User: r.e.User, Group: groupName(r.e),
		Message: r.noun + ": " + msg, Want: want, Got: got, EntryID: r.e.ID()})
}

// existence is the drift of an account that exists (in source) or not:
// none when that is as declared.
func (r *accountReport) existence(exists bool, source string) []Drift {
	switch {
	case exists && r.e.Account.Absent:
		r.add(Present, source, "exists, but is declared shouldExist false", "", "")
	case !exists && !r.e.Account.Absent:
		r.add(Missing, source, "does not exist", "", "")
	}
	return r.ds
}

// group compares what groupadd and groupmod set: --gid, --password.
func (r *accountReport) group(g *accountdb.Group, db *accountdb.DB) []Drift {
	a := r.e.Account
	if a.ID != nil && g.GID != *a.ID {
		r.add(GID, g.Source, fmt.Sprintf("gid is %d, want %d", g.GID, *a.ID), strconv.Itoa(*a.ID), strconv.Itoa(g.GID))
	}
	if a.PasswordHash != nil {
		r.password(hashFile(g.HashFile, accountdb.GShadowFile), *a.PasswordHash, g.Hash, g.HasShadow, g.Source, db.GShadowErr)
	}
	return r.ds
}

// user compares what useradd and usermod set: --uid, --comment, --home,
// --shell, --gid, --groups, --password.
func (r *accountReport) user(u *accountdb.Passwd, db *accountdb.DB) []Drift {
	a := r.e.Account
	field := func(k Kind, name string, want *string, got string) {
		if want != nil && *want != got {
			r.add(k, u.Source, fmt.Sprintf("%s is %q, want %q", name, got, *want), *want, got)
		}
	}
	if a.ID != nil && u.UID != *a.ID {
		r.add(UID, u.Source, fmt.Sprintf("uid is %d, want %d", u.UID, *a.ID), strconv.Itoa(*a.ID), strconv.Itoa(u.UID))
	}
	field(Gecos, "gecos", a.Gecos, u.Gecos)
	field(HomeDir, "home directory", a.Home, u.Home)
	field(Shell, "shell", a.Shell, u.Shell)
	if a.PrimaryGroup != nil {
		got := strconv.Itoa(u.GID)
		if g, ok := db.GroupByID(u.GID); ok {
			got = g.Name
		}
		if g, ok := db.GroupOf(*a.PrimaryGroup); !ok {
			r.add(PrimaryGroup, u.Source, fmt.Sprintf("primary group %q does not exist (primary group is %q)", *a.PrimaryGroup, got), *a.PrimaryGroup, got)
		} else if g.GID != u.GID {
			r.add(PrimaryGroup, u.Source, fmt.Sprintf("primary group is %q (gid %d), want %q (gid %d)", got, u.GID, g.Name, g.GID), g.Name, got)
		}
	}
	if a.Groups != nil {
		if d, ok := groupsDrift(a.Groups, db, u.Name); ok {
			r.add(Groups, accountdb.GroupFile, d.msg, d.want, d.got)
		}
	}
	if a.PasswordHash != nil {
		r.password(hashFile(u.HashFile, accountdb.ShadowFile), *a.PasswordHash, u.Hash, u.HasShadow, u.Source, db.ShadowErr)
	}
	return r.ds
}

// hashFile is where an account's hash drift is: the file its hash was read
// from (/etc/passwd on a root without /etc/shadow, where reconcile repairs
// it too), else the shadow file, where its line is missing.
func hashFile(from, shadow string) string {
	if from != "" {
		return from
	}
	return shadow
}

type groupsDiff struct{ msg, want, got string }

// groupsDrift compares the supplementary groups usermod --groups set with
// those of /etc/group that list the user now: a group missing and an extra
// group are both drift (no --append: internal/exec/util/passwd.go).
func groupsDrift(declared []string, db *accountdb.DB, user string) (groupsDiff, bool) {
	var want []string
	wanted := map[string]bool{}
	var unknown []string
	for _, d := range declared {
		name := d
		if g, ok := db.GroupOf(d); ok {
			name = g.Name
		} else {
			unknown = append(unknown, d)
		}
		if !wanted[name] {
			wanted[name] = true
			want = append(want, name)
		}
	}
	got := db.MemberOf(user)
	has := map[string]bool{}
	for _, g := range got {
		has[g] = true
	}
	var missing, extra []string
	for _, w := range want {
		if !has[w] {
			missing = append(missing, w)
		}
	}
	for _, g := range got {
		if !wanted[g] {
			extra = append(extra, g)
		}
	}
	if len(missing) == 0 && len(extra) == 0 {
		return groupsDiff{}, false
	}
	var parts []string
	if len(missing) > 0 {
		parts = append(parts, "not a member of "+strings.Join(missing, ", "))
	}
	if len(extra) > 0 {
		parts = append(parts, "also a member of "+strings.Join(extra, ", "))
	}
	if len(unknown) > 0 {
		parts = append(parts, "no such group: "+strings.Join(unknown, ", "))
	}
	return groupsDiff{msg: "supplementary groups differ: " + strings.Join(parts, "; "),
		want: strings.Join(want, ","), got: strings.Join(got, ",")}, true
}

// password compares a declared hash with the shadow file's. Neither
// hash is ever shown: Want and Got are keyed digests (HMAC of the hash's
// SHA-256, as for secret content), left out without a key.
func (r *accountReport) password(file, want, got string, hasShadow bool, source string, readErr error) {
	switch {
	case readErr != nil:
		// Not seen is not clean: the check lacks the privileges to read it.
		r.add(Unreadable, file, fmt.Sprintf("password hash not checked: %v", readErr), "", "")
	case !hasShadow:
		why := "has no line in " + file
		if source != accountdb.PasswdFile && source != accountdb.GroupFile {
			why += " (it is in " + source + ")"
		}
		r.add(PasswordHash, file, "password hash differs: "+why, "", "")
	case want != got:
		g := digester{key: r.key}
		w, o := sha256.Sum256([]byte(want)), sha256.Sum256([]byte(got))
		r.add(PasswordHash, file, "password hash differs", g.name(w[:]), g.name(o[:]))
	}
}

// accountNoun names an account in messages: user "core", group "wheel".
func accountNoun(e *model.Entry) string {
	if e.Account == nil {
		return fmt.Sprintf("%s %q", e.Kind, e.User)
	}
	return fmt.Sprintf("%s %q", e.Kind, e.Account.Name)
}

func groupName(e *model.Entry) string {
	if e.Kind == model.KindGroup {
		return e.Account.Name
	}
	return ""
}
