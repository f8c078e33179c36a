package enablement

import (
	"errors"
	"fmt"
	"path"
	"sort"
	"strings"

	"golang.org/x/sys/unix"
)

// Link is a symbolic link in /etc/systemd/system, both paths as seen inside
// the root.
type Link struct {
	Path   string
	Target string
}

// ErrMasked means that a unit cannot be enabled: it is masked.
var ErrMasked = errors.New("unit is masked")

// EnableLinks returns the symbolic links `systemctl --root=ROOT enable UNIT`
// of systemd 252 creates (src/shared/install.c, install_context_apply:
// install_info_symlink_alias and install_info_symlink_wants): for the unit
// and every unit its Also= names, one link per Alias= in
// /etc/systemd/system, one per WantedBy= in TARGET.wants/ and one per
// RequiredBy= in TARGET.requires/, each pointing at the unit file's path
// inside the root (an absolute path without the root, as systemctl writes
// it with --root). Specifiers are expanded as for State. An instance gives
// a template alias its instance (unit_file_verify_alias); an alias of the
// unit's own name makes no link. A template is linked under its
// DefaultInstance=; without one, only into template and instance targets
// (a WantedBy=foo@.target), and not at all elsewhere. An Also= unit that
// is masked or not found is skipped, as systemctl skips it.
//
// It returns links that exist already too: the caller writes those that are
// missing. A masked unit is an error wrapping ErrMasked; an alias that
// systemctl refuses is an error wrapping ErrBad.
func (t *Tree) EnableLinks(unit string) ([]Link, error) {
	unlock, err := t.lock(unit)
	if err != nil {
		return nil, err
	}
	defer unlock()
	return t.enableLinks(unit, false)
}

// enableLinks is EnableLinks; lenient skips the aliases systemctl refuses,
// as it goes on with the rest.
func (t *Tree) enableLinks(unit string, lenient bool) ([]Link, error) {
	c := &lookup{t: t, infos: map[string]*installInfo{}}
	var links []Link
	seen := map[string]bool{}
	todo := []string{unit}
	for len(todo) > 0 {
		name := todo[0]
		todo = todo[1:]
		if seen[name] {
			continue
		}
		seen[name] = true
		also := name != unit
		i, err := c.traverse(c.add(name))
		switch {
		case err != nil && also:
			continue // INSTALL_CHANGE_AUXILIARY_FAILED
		case err != nil:
			return nil, err
		case i.kind == kindMasked && also:
			continue // INSTALL_CHANGE_IS_MASKED
		case i.kind == kindMasked:
			return nil, fmt.Errorf("%s: %w", name, ErrMasked)
		}
		todo = append(todo, i.also...)
		al, err := t.aliasLinks(i)
		if err != nil && !lenient {
			return nil, err
		}
		links = append(links, al...)
		wl, err := t.wantsLinks(i)
		if err != nil {
			return nil, err
		}
		links = append(links, wl...)
	}
	return links, nil
}

// aliasLinks mirrors install_info_symlink_alias: the links of i's Alias=
// lines that systemd makes, and an error for the first it refuses.
func (t *Tree) aliasLinks(i *installInfo) ([]Link, error) {
	var links []Link
	var refused error
	for _, a := range i.aliases {
		dst, err := t.printf(i, a)
		if err != nil {
			return nil, fmt.Errorf("%s: Alias=%s: %w", i.path, a, err)
		}
		if !strings.Contains(dst, "/") {
			// unit_file_verify_alias: instance propagation, then the
			// rules of an alias (a self-alias is quietly skipped).
			if classifyName(dst) == nameTemplate && classifyName(i.name) == nameInstance {
				dst = replaceInstance(dst, nameInstanceOf(i.name))
			}
			if dst == i.name {
				continue
			}
			if err := validateAlias(path.Join(persistentConfig, dst), i.name); err != nil {
				if refused == nil {
					refused = fmt.Errorf("%s: Alias=%s: %w", i.path, a, err)
				}
				continue
			}
		}
		links = append(links, Link{Path: path.Join(persistentConfig, dst), Target: i.path})
	}
	return links, refused
}

// wantsLinks mirrors install_info_symlink_wants for WantedBy= and
// RequiredBy=.
func (t *Tree) wantsLinks(i *installInfo) ([]Link, error) {
	n, onlyTemplates := i.name, false
	if classifyName(n) == nameTemplate {
		if i.defaultInstance != "" {
			n = replaceInstance(n, i.defaultInstance)
		} else {
			// "We have a template, but no instance yet": only targets
			// that are templates or instances themselves.
			onlyTemplates = true
		}
	}
	var links []Link
	for _, dep := range []struct {
		targets []string
		suffix  string
	}{{i.wantedBy, ".wants"}, {i.requiredBy, ".requires"}} {
		for _, w := range dep.targets {
			dst, err := t.printf(i, w)
			if err != nil {
				return nil, fmt.Errorf("%s: %s%s: %w", i.path, w, dep.suffix, err)
			}
			if k := classifyName(dst); onlyTemplates && k != nameTemplate && k != nameInstance {
				continue // systemctl: "cannot be enabled without an instance"
			}
			links = append(links, Link{Path: path.Join(persistentConfig, dst+dep.suffix, n), Target: i.path})
		}
	}
	return links, nil
}

// DisableLinks returns the symbolic links in /etc/systemd/system (and its
// subdirectories) that `systemctl --root=ROOT disable UNIT` of systemd 252
// removes (install.c, install_context_mark_for_removal and
// remove_marked_symlinks_fd): the links named after the unit or a unit its
// Also= names (or after their template), and the links that lead, followed
// to their end, to a file of one of those names (an alias of the unit). A
// masked unit marks nothing. Paths are sorted.
func (t *Tree) DisableLinks(unit string) ([]string, error) {
	unlock, err := t.lock(unit)
	if err != nil {
		return nil, err
	}
	defer unlock()
	marked := t.markForRemoval(unit)
	d, err := t.dir(persistentConfig)
	if isMissing(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []string
	if err := t.marks(marked, d.fd, ".", persistentConfig, 0, &out); err != nil {
		return nil, err
	}
	sort.Strings(out)
	return out, nil
}

// markForRemoval mirrors install_context_mark_for_removal: the names of the
// unit and of the units its Also= names, even when they cannot be looked up
// (leftover links go too), but not a masked one.
func (t *Tree) markForRemoval(unit string) map[string]bool {
	c := &lookup{t: t, infos: map[string]*installInfo{}}
	marked, seen := map[string]bool{}, map[string]bool{}
	todo := []string{unit}
	for len(todo) > 0 {
		name := todo[0]
		todo = todo[1:]
		if seen[name] {
			continue
		}
		seen[name] = true
		i, err := c.traverse(c.add(name))
		switch {
		case err != nil:
			marked[name] = true
			continue
		case i.kind == kindMasked:
			continue
		}
		marked[name] = true
		todo = append(todo, i.also...)
	}
	return marked
}

// marks mirrors remove_marked_symlinks_fd over the directory name in fd
// (dir inside the root), depth levels down: it adds to out the links named
// after a marked unit or its template, or that lead to a file of a marked
// name.
func (t *Tree) marks(marked map[string]bool, fd int, name, dir string, depth int, out *[]string) error {
	ents, err := listAt(fd, name)
	if err != nil {
		if isMissing(err) {
			return nil
		}
		return ioError("reading", dir, err)
	}
	dfd, err := unix.Openat(fd, name, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return ioError("reading", dir, err)
	}
	defer unix.Close(dfd)
	for _, e := range ents {
		p := path.Join(dir, e.name)
		switch {
		case isDir(&e.st) && depth < 8:
			if err := t.marks(marked, dfd, e.name, p, depth+1, out); err != nil {
				return err
			}
		case isLink(&e.st) && classifyName(e.name) != nameInvalid:
			tmpl, _ := templateOf(e.name)
			found := marked[e.name] || marked[tmpl]
			if !found {
				dest, _, err := t.chase(p, true, true)
				if err != nil {
					continue
				}
				found = marked[path.Base(dest)]
			}
			if found {
				*out = append(*out, p)
			}
		}
	}
	return nil
}

// IsConfigSubdir reports whether dir is a directory below
// /etc/systemd/system that `systemctl disable` removes once its last link is
// gone (install.c: rmdir_parents up to the config directory).
func IsConfigSubdir(dir string) bool {
	return strings.HasPrefix(dir, persistentConfig+"/")
}
