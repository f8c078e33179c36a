package ondisk

import (
	"path"
	"strings"

	"github.com/drift-monitor/drift-monitor/internal/accountdb"
	"github.com/drift-monitor/drift-monitor/internal/model"
	"golang.org/x/sys/unix"
)

// LabelPath is the path whose default label the node of an entry wants:
// the path Ignition had setfiles label it at (setfiles -r ROOT looks up the
// path it is given, links on the way not resolved: v2.27.0
// internal/exec/util/selinux.go, RelabelFiles).
//
//   - A node Ignition writes is relabelled at its joined path, the links
//     among its parents followed (internal/exec/stages/files/
//     filesystemEntries.go, createEntries: relabelPath of JoinPath's
//     result): where the observation found it (Observation.Resolved).
//   - SSH keys are relabelled with the user's home, recursively, at the
//     home as passwd names it, or where it points when the home itself is a
//     link, as on ostree hosts' /root -> var/roothome
//     (internal/exec/stages/files/passwd.go, createPasswd: ResolveSymlink
//     of the home, then relabel): /home/core/.ssh/... is labelled as
//     /home/core/.ssh/... even where /home is a link to var/home.
//
// Without a resolution (a parent that could not be located), the declared
// path.
func (r *Root) LabelPath(e *model.Entry, ob *Observation) string {
	if r != nil && e.Kind == model.KindSSHKeys {
		if i := strings.LastIndex(e.Path, "/.ssh/"); i > 0 {
			return r.HomeAsRelabelled(e.Path[:i]) + e.Path[i:]
		}
	}
	if ob.Resolved != "" {
		return ob.Resolved
	}
	return e.Path
}

// HomeAsRelabelled is a home, or, when it is a symbolic link, its target,
// joined to the home's directory when relative (Ignition's
// Util.ResolveSymlink, internal/exec/util/util.go).
func (r *Root) HomeAsRelabelled(home string) string {
	fd, err := r.openDir(path.Dir(home))
	if err != nil {
		return home
	}
	defer unix.Close(fd)
	target, err := readlinkat(fd, path.Base(home))
	if err != nil {
		return home // not a link (EINVAL), or not there
	}
	if !path.IsAbs(target) {
		target = path.Join(path.Dir(home), target)
	}
	return path.Clean(target)
}

// RelabelledHome is a user's home that Ignition relabels, recursively: the
// directory resolved at Where, labelled as the path At.
type RelabelledHome struct{ Where, At string }

// RelabelledHomes are the homes Ignition relabels: those of the declared
// users that must exist and get a home made (internal/exec/stages/files/
// passwd.go, createPasswd: every user but noCreateHome and shouldExist
// false, its home as passwd names it, or where it points when it is a
// link). A node under one is labelled twice, at its own joined path and
// as part of the home, in no set order (setfiles takes the paths in a Go
// map's order): either label is Ignition's.
func (r *Root) RelabelledHomes(entries []model.Entry) []RelabelledHome {
	var db *accountdb.DB
	var homes []RelabelledHome
	for i := range entries {
		e := &entries[i]
		if e.Kind != model.KindUser || e.Account == nil || e.Account.Absent || e.Account.Creation.NoCreateHome {
			continue
		}
		home := ""
		if e.Account.Home != nil {
			home = *e.Account.Home
		} else {
			if db == nil {
				var err error
				if db, err = accountdb.Read(r); err != nil {
					return homes
				}
			}
			if u, ok := db.Users[e.Account.Name]; ok {
				home = u.Home
			}
		}
		if !path.IsAbs(home) || home == "/" {
			continue
		}
		where := r.ResolvePath(path.Join(home, "x"), nil)
		if where == "" {
			continue
		}
		homes = append(homes, RelabelledHome{Where: path.Dir(where), At: r.HomeAsRelabelled(path.Clean(home))})
	}
	return homes
}

// AsPartOfHome is the path a node found at resolved is labelled at as part
// of one of homes, and false when it is under none.
func AsPartOfHome(resolved string, homes []RelabelledHome) (string, bool) {
	for _, h := range homes {
		if rest, ok := strings.CutPrefix(resolved, h.Where+"/"); ok {
			return path.Join(h.At, rest), true
		}
	}
	return "", false
}
