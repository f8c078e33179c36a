package enablement

import (
	"errors"
	"path"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
)

// scan holds the symlinks of one directory of the search path, as
// install.c's find_symlinks() looks at them.
type scan struct {
	err   error    // listing the directory failed (not just missing)
	top   []link   // symlinks directly in the directory
	wants []string // names of the symlinks in its *.wants/ and *.requires/
}

type link struct {
	name string
	dest string // the symlink's target as written
	err  error  // reading the target failed
}

// scanDir lists the symlinks of a directory of the search path, once per
// Tree. Subdirectories count only if they are real directories whose names
// end in .wants or .requires (systemd 252 does not look at .upholds).
func (t *Tree) scanDir(p string) *scan {
	if s, ok := t.scans[p]; ok {
		return s
	}
	s := &scan{}
	t.scans[p] = s
	ents, d, err := t.readDir(p)
	if err != nil {
		if !isMissing(err) {
			s.err = err
		}
		return s
	}
	for _, e := range ents {
		name := e.name
		switch {
		case isDir(&e.st):
			dot := strings.LastIndexByte(name, '.')
			if dot < 0 || (name[dot:] != ".wants" && name[dot:] != ".requires") {
				continue
			}
			sub, err := listAt(d.fd, name)
			if err != nil {
				continue // systemd logs and ignores such a directory
			}
			for _, se := range sub {
				if isLink(&se.st) {
					s.wants = append(s.wants, se.name)
				}
			}
		case isLink(&e.st):
			dest, err := readlinkAt(d.fd, name)
			if err != nil {
				if errors.Is(err, unix.ENOENT) {
					continue // gone since the listing
				}
				err = ioError("reading", path.Join(p, name), err)
			}
			s.top = append(s.top, link{name: name, dest: dest, err: err})
		}
	}
	return s
}

// with returns s with the links in it that it does not have yet, as
// enabling would create them (see Tree.Enabling): links directly in
// /etc/systemd/system, and in its .wants/ and .requires/ subdirectories.
// With replace, a link directly in the directory takes the place of the
// one that holds its name, as if that one were not there.
func (s *scan) with(links []Link, replace bool) *scan {
	more := &scan{err: s.err, top: slices.Clone(s.top), wants: slices.Clone(s.wants)}
	have := map[string]int{}
	for k, l := range s.top {
		have[l.name] = k
	}
	for _, l := range links {
		dir, name := path.Split(l.Path)
		dir = strings.TrimSuffix(dir, "/")
		k, taken := have[name]
		switch {
		case dir == persistentConfig && taken && replace:
			more.top[k] = link{name: name, dest: l.Target}
		case dir == persistentConfig && !taken:
			more.top = append(more.top, link{name: name, dest: l.Target})
			have[name] = len(more.top) - 1
		case path.Dir(dir) == persistentConfig && (strings.HasSuffix(dir, ".wants") || strings.HasSuffix(dir, ".requires")):
			more.wants = append(more.wants, name)
		}
	}
	return more
}

// findSymlinks mirrors install.c's find_symlinks() for one directory of the
// search path. In .wants/ and .requires/ only the symlink's name counts (an
// instance of a template counts for the template); directly in the
// directory, a symlink counts if its name or its target's file name is the
// unit's. With matchName, only the names `systemctl enable` would create
// count. sameName reports a symlink of the unit's own name to a file of
// that name (a linked unit file) in this directory; ignoreSameName skips
// such names in directories below the unit file's.
func (s *scan) findSymlinks(i *installInfo, matchName, ignoreSameName bool) (found, sameName bool, err error) {
	for _, n := range s.wants {
		ok := n == i.name
		if !ok {
			tmpl, isTmpl := templateOf(n)
			ok = isTmpl && tmpl == i.name
		}
		if ok && (!matchName || i.knownName(n)) {
			return true, false, nil
		}
	}
	for _, l := range s.top {
		if l.err != nil {
			if err == nil {
				err = l.err
			}
			continue
		}
		foundPath := !ignoreSameName && l.name == i.name
		foundDest := baseName(l.dest) == i.name
		if foundPath && foundDest {
			sameName = true
			continue
		}
		if (foundPath || foundDest) && (!matchName || i.knownName(l.name)) {
			return true, false, nil
		}
	}
	if s.err != nil {
		return false, false, s.err
	}
	return false, sameName, err
}

// findInScope mirrors install.c's find_symlinks_in_scope(): where, in the
// search path, symlinks to the unit make it enabled. Symlinks in
// /etc/systemd/system make it "enabled"; in /run, "enabled-runtime"; an
// instance symlinked elsewhere (/usr/lib...) is "static". Failing those, a
// same-name symlink makes the unit "linked" or "linked-runtime".
func (t *Tree) findInScope(i *installInfo, matchName bool) (state string, found bool, err error) {
	var sameRuntime, sameConfig, enabledRuntime, enabledElsewhere, ignoreSameName bool
	for _, dir := range searchPath {
		s := t.scanDir(dir)
		if dir == persistentConfig && t.enabled != nil {
			s = s.with(t.enabled, t.replaceHeld)
		}
		f, same, err := s.findSymlinks(i, matchName, ignoreSameName)
		if err != nil {
			return "", false, err
		}
		switch {
		case f && dir == persistentConfig:
			return StateEnabled, true, nil
		case f && isRuntime(dir):
			enabledRuntime = true
		case f:
			enabledElsewhere = true
		case same && dir == persistentConfig:
			sameConfig = true
		case same && isRuntime(dir):
			sameRuntime = true
		}
		// Same-name symlinks in directories below the unit file's are
		// overridden by it.
		if below(i.path, dir) {
			ignoreSameName = true
		}
	}
	switch {
	case enabledRuntime:
		return StateEnabledRuntime, true, nil
	case enabledElsewhere && classifyName(i.name) == nameInstance:
		return StateStatic, true, nil
	case sameRuntime:
		return StateLinkedRuntime, true, nil
	case sameConfig:
		return StateLinked, true, nil
	}
	return "", false, nil
}
