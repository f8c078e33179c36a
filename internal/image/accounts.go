package image

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/drift-monitor/drift-monitor/internal/accountdb"
	"github.com/drift-monitor/drift-monitor/internal/model"
	"github.com/drift-monitor/drift-monitor/internal/ondisk"
)

// The account files hold the lines of declared accounts among the others:
// useradd, usermod, groupadd and userdel (Ignition's: v2.27.0
// internal/exec/util/passwd.go, EnsureUser and EnsureGroup, run them with
// --root; or reconcile's putting a declared account back) rewrite a whole
// file to change one line, and append a new one at its end. The user and group entries report
// their own lines; a difference of the file from the image (or from the
// first boot's record) is undeclared only when another line differs.

// accountFile says how to read an account file's lines: which accounts
// name them (users, or groups: a user's own group has the user's name,
// useradd's USERGROUPS_ENAB) and which fields list users (a group's
// members; gshadow's administrators and members, shadow-utils'
// lib/sgroupio.c).
type accountFile struct {
	groups  bool
	members []int
}

var accountFiles = map[string]accountFile{
	accountdb.PasswdFile:  {},
	accountdb.ShadowFile:  {},
	accountdb.GroupFile:   {groups: true, members: []int{3}},
	accountdb.GShadowFile: {groups: true, members: []int{2, 3}},
	// useradd gives a new user its ranges here (shadow-utils
	// src/useradd.c, find_new_sub_uids).
	"/etc/subuid": {},
	"/etc/subgid": {},
}

// AccountLine is one account's line of an account file, as a record keeps
// it: the keyed digest of the line with its member lists emptied, and each
// member's (field number, name) keyed, sorted, so that a declared user's
// membership can be told apart without the line.
type AccountLine struct {
	Digest  model.Digest   `json:"digest"`
	Members []model.Digest `json:"members,omitempty"`
}

// accountLines reads an account file's lines by account name (a second
// line of the same name is "name#2", and so on). dg digests a text.
func accountLines(f accountFile, data []byte, dg func(string) model.Digest) map[string]AccountLine {
	out := map[string]AccountLine{}
	for _, line := range strings.Split(string(data), "\n") {
		if line == "" {
			continue
		}
		fields := strings.Split(line, ":")
		var l AccountLine
		for _, i := range f.members {
			if i >= len(fields) {
				continue
			}
			for _, m := range strings.Split(fields[i], ",") {
				if m != "" {
					l.Members = append(l.Members, dg(strconv.Itoa(i)+":"+m))
				}
			}
			fields[i] = ""
		}
		slices.SortFunc(l.Members, func(a, b model.Digest) int { return bytes.Compare(a[:], b[:]) })
		l.Digest = dg(strings.Join(fields, ":"))
		name := fields[0]
		for n := 2; ; n++ {
			if _, dup := out[name]; !dup {
				break
			}
			name = fields[0] + "#" + strconv.Itoa(n)
		}
		out[name] = l
	}
	return out
}

// sameButDeclared reports whether two versions of an account file's lines
// differ only in declared accounts: their own lines, and their membership
// of other groups.
func sameButDeclared(f accountFile, ref, live map[string]AccountLine, users, groups map[string]bool, dg func(string) model.Digest) bool {
	declared := func(name string) bool {
		name, _, _ = strings.Cut(name, "#")
		return users[name] || f.groups && groups[name]
	}
	var memberOf []model.Digest
	for u := range users {
		for _, i := range f.members {
			memberOf = append(memberOf, dg(strconv.Itoa(i)+":"+u))
		}
	}
	others := func(ms []model.Digest) []model.Digest {
		return slices.DeleteFunc(slices.Clone(ms), func(m model.Digest) bool { return slices.Contains(memberOf, m) })
	}
	for name, r := range ref {
		if declared(name) {
			continue
		}
		l, ok := live[name]
		if !ok || !l.Digest.Equal(r.Digest) || !slices.Equal(others(l.Members), others(r.Members)) {
			return false
		}
	}
	for name := range live {
		if _, ok := ref[name]; !ok && !declared(name) {
			return false
		}
	}
	return true
}

// digester digests texts with key, or plainly without one (then only for
// comparisons in memory, never recorded).
func digester(key model.Key) func(string) model.Digest {
	if key.Valid() {
		return func(s string) model.Digest { return key.Digest(sha256.Sum256([]byte(s))) }
	}
	return func(s string) model.Digest { return model.Digest(sha256.Sum256([]byte(s))) }
}

// declaredAccountLines: an account file added, or changed in content
// only, whose other lines are the first boot's record's (when it holds
// them), or else the image's (none for an added file). A file that cannot
// be read is no answer: the change stays undeclared.
func (c *Classifier) declaredAccountLines(ch *Change) bool {
	f, ok := accountFiles[ch.Path]
	if !ok || len(c.users)+len(c.groups) == 0 || c.Recorder == nil || ch.Err != "" || ch.Live == nil || ch.Live.Type != ondisk.Regular {
		return false
	}
	if ch.Op != Added && (ch.Op != Modified || ch.What&^WContent != 0) {
		return false
	}
	live, err := c.Recorder.Root.ReadFile(ch.Path)
	if err != nil {
		return false
	}
	if n := c.Record.lookup(ch.Path); n != nil && n.Lines != nil {
		if c.Record.KeyID != c.Recorder.keyID() || !c.Recorder.Key.Valid() {
			return false
		}
		dg := digester(c.Recorder.Key)
		return sameButDeclared(f, n.Lines, accountLines(f, live, dg), c.users, c.groups, dg)
	}
	var ref []byte
	if ch.Op == Modified {
		if c.base == nil {
			return false
		}
		if ref, err = c.base(ch.Path); err != nil {
			return false
		}
	}
	dg := digester(model.Key{})
	return sameButDeclared(f, accountLines(f, ref, dg), accountLines(f, live, dg), c.users, c.groups, dg)
}

// readBase reads the image's version of host path p of the live /etc.
func (t *Tree) readBase(p string) ([]byte, error) {
	rel, ok := relUnder(p, t.Live)
	if !ok {
		return nil, fmt.Errorf("%s is not under %s", p, t.Live)
	}
	r := t.BaseRoot
	if r == nil {
		r = t.Root
	}
	return r.ReadFile(path.Join(t.Base, rel))
}
