package reconcile

import (
	"github.com/drift-monitor/drift-monitor/internal/accountdb"
	"github.com/drift-monitor/drift-monitor/internal/enablement"
)

// leaves refuses a plan that would write a host path r.Leave names, whatever
// the entry whose repair reaches it: a user's repair by useradd writes
// /etc/shadow although its drift was reported at /etc/passwd, an enable
// writes links in .wants directories although its drift is the unit's. A
// path left alone is never written.
func (r *Reconciler) leaves(steps []Step) error {
	if r.Leave == nil {
		return nil
	}
	for i := range steps {
		for _, p := range r.writes(&steps[i]) {
			if r.Leave(p) {
				return refuse("it would write %s, which is excluded: left alone (reconcile never writes an excluded path)", p)
			}
		}
	}
	return nil
}

// writes are the host paths a step writes: its own, the files a tool
// rewrites, or the links systemd makes or removes for an enable or
// disable, as systemctl --root computes them. Where the links cannot be
// computed offline (a unit only systemd knows), systemd answers for what it
// writes.
func (r *Reconciler) writes(s *Step) []string {
	switch s.Op {
	case OpRun:
		return s.cmd.writes
	case OpEnable, OpDisable:
		t, err := enablement.New(r.Root)
		if err != nil {
			return nil
		}
		defer t.Close()
		if s.Op == OpDisable {
			links, _ := t.DisableLinks(s.Unit)
			return links
		}
		links, _ := t.EnableLinks(s.Unit)
		var out []string
		for _, l := range links {
			out = append(out, l.Path)
		}
		return out
	}
	if s.Path == "" {
		return nil
	}
	return []string{s.Path}
}

// The files the shadow-utils tools rewrite. Each opens the account files
// it may change and rewrites only those it changed (lib/commonio.c,
// commonio_close: nothing is written unless db->changed).
var (
	// useradd and userdel add or remove the user's lines everywhere: its
	// passwd and shadow lines, its user group and memberships.
	userFiles = []string{accountdb.PasswdFile, accountdb.ShadowFile, accountdb.GroupFile, accountdb.GShadowFile}
	// usermod rewrites passwd for --uid, --comment, --home, --gid and
	// --shell; shadow only for --expiredate, --inactive, --password,
	// --lock, --unlock and a rename, none of which a repair passes
	// (src/usermod.c, usr_update); group and gshadow for --groups
	// (grp_update).
	usermodFiles       = []string{accountdb.PasswdFile}
	usermodGroupsFiles = []string{accountdb.GroupFile, accountdb.GShadowFile}
	// chpasswd -e writes the hash to the shadow line, and to passwd's own
	// field when there is no shadow line or passwd holds a hash
	// (src/chpasswd.c).
	chpasswdFiles = []string{accountdb.ShadowFile, accountdb.PasswdFile}
	// groupadd, groupdel and chgpasswd: the group's lines; groupmod
	// --gid reads gshadow only for --password, --new-name and --users
	// (src/groupmod.c, grp_update): /etc/group only.
	groupFiles    = []string{accountdb.GroupFile, accountdb.GShadowFile}
	groupmodFiles = []string{accountdb.GroupFile}
)
