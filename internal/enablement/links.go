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
// it with --root). Specifiers are expanded as for State. A template without
// an instance is linked under its DefaultInstance=, or not at all.
//
// It returns links that exist already too: the caller writes those that are
// missing. A masked unit is an error wrapping ErrMasked.
func (t *Tree) EnableLinks(unit string) ([]Link, error) {
	if classifyName(unit) == nameInvalid {
		return nil, fmt.Errorf("%w: %q", ErrInvalidName, unit)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
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
		i, err := c.traverse(c.add(name))
		if err != nil {
			return nil, err
		}
		if i.kind == kindMasked {
			return nil, fmt.Errorf("%s: %w", name, ErrMasked)
		}
		todo = append(todo, i.also...)
		for _, a := range i.aliases {
			dst, err := t.printf(i, a)
			if err != nil {
				return nil, fmt.Errorf("%s: Alias=%s: %w", i.path, a, err)
			}
			links = append(links, Link{Path: path.Join(persistentConfig, dst), Target: i.path})
		}
		n := i.name
		if classifyName(n) == nameTemplate {
			if i.defaultInstance == "" {
				continue // systemctl: "a template ... cannot be enabled without an instance"
			}
			n = replaceInstance(n, i.defaultInstance)
		}
		for _, dep := range []struct {
			targets []string
			suffix  string
		}{{i.wantedBy, ".wants"}, {i.requiredBy, ".requires"}} {
			for _, w := range dep.targets {
				dst, err := t.printf(i, w)
				if err != nil {
					return nil, fmt.Errorf("%s: %s%s: %w", i.path, w, dep.suffix, err)
				}
				links = append(links, Link{Path: path.Join(persistentConfig, dst+dep.suffix, n), Target: i.path})
			}
		}
	}
	return links, nil
}

// DisableLinks returns the symbolic links in /etc/systemd/system (and its
// subdirectories) that `systemctl --root=ROOT disable UNIT` of systemd 252
// removes (install.c, unit_file_disable and remove_marked_symlinks_fd): the
// links named after the unit, its aliases or the units its Also= names, and
// the links that point at one of them. Masks (links to /dev/null) and the
// unit files themselves are not links it removes. Paths are sorted.
func (t *Tree) DisableLinks(unit string) ([]string, error) {
	if classifyName(unit) == nameInvalid {
		return nil, fmt.Errorf("%w: %q", ErrInvalidName, unit)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	c := &lookup{t: t, infos: map[string]*installInfo{}}
	marked := map[string]bool{}
	todo := []string{unit}
	for len(todo) > 0 {
		name := todo[0]
		todo = todo[1:]
		if marked[name] {
			continue
		}
		marked[name] = true
		i, err := c.traverse(c.add(name))
		if errors.Is(err, ErrNotFound) {
			continue // nothing to learn of its [Install]; its name is marked
		}
		if err != nil {
			return nil, err
		}
		if i.kind == kindMasked {
			continue
		}
		marked[i.path] = true
		todo = append(todo, i.also...)
		for _, a := range i.aliases {
			if dst, err := t.printf(i, a); err == nil {
				marked[dst] = true
			}
		}
	}
	var out []string
	var walk func(fd int, name, dir string, depth int) error
	walk = func(fd int, name, dir string, depth int) error {
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
				if err := walk(dfd, e.name, p, depth+1); err != nil {
					return err
				}
			case isLink(&e.st):
				dest, err := readlinkAt(dfd, e.name)
				if err != nil || dest == "/dev/null" {
					continue
				}
				if marked[e.name] || marked[dest] || marked[path.Base(dest)] {
					out = append(out, p)
				}
			}
		}
		return nil
	}
	d, err := t.dir(persistentConfig)
	if isMissing(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if err := walk(d.fd, ".", persistentConfig, 0); err != nil {
		return nil, err
	}
	sort.Strings(out)
	return out, nil
}

// IsConfigSubdir reports whether dir is a directory below
// /etc/systemd/system that `systemctl disable` removes once its last link is
// gone (install.c: rmdir_parents up to the config directory).
func IsConfigSubdir(dir string) bool {
	return strings.HasPrefix(dir, persistentConfig+"/")
}

// CannotEnable says why `systemctl enable UNIT` of systemd 252 can create no
// symbolic link that makes `systemctl is-enabled UNIT` say "enabled" (a
// clause that starts "cannot be enabled"), or "" when it can (or when the unit is masked or not found: that is for its
// state to say). Ignition enables a unit through a preset line
// (internal/exec/stages/files/units.go, createSystemdPresetFile, v2.27.0:
// "enable foo@.service" for a template, "enable foo@.service bar" for an
// instance), and the first boot's preset makes the links enable makes
// (install.c, preset_prepare_one → install_context_apply), so such a unit is
// never enabled on a freshly provisioned host. The two cases (install.c,
// install_info_symlink_alias, install_info_symlink_wants and
// find_symlinks_in_directory):
//
//   - a template without DefaultInstance= and without Alias=: WantedBy= and
//     RequiredBy= make links only for an instance, "If this is a template,
//     and we have no instance, don't do anything";
//   - an instance that is read from its template's file, whose [Install]
//     has Alias= but no WantedBy= nor RequiredBy=: the alias links are made
//     under the instance's name of the alias and point to the template's
//     file, and is-enabled counts neither (it looks for links named after
//     the instance, or pointing to a file of that name).
func (t *Tree) CannotEnable(unit string) (string, error) {
	if classifyName(unit) == nameInvalid {
		return "", fmt.Errorf("%w: %q", ErrInvalidName, unit)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	c := &lookup{t: t, infos: map[string]*installInfo{}}
	i, err := c.traverse(c.add(unit))
	if errors.Is(err, ErrNotFound) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	if i.kind != kindRegular {
		return "", nil
	}
	switch classifyName(i.name) {
	case nameTemplate:
		if i.defaultInstance == "" && len(i.aliases) == 0 && len(i.wantedBy)+len(i.requiredBy) > 0 {
			return "cannot be enabled without an instance: it is a template without DefaultInstance= or Alias=, for which enabling (and Ignition's preset) makes no link", nil
		}
	case nameInstance:
		if baseName(i.path) != i.name && len(i.aliases) > 0 && len(i.wantedBy)+len(i.requiredBy) == 0 {
			return "cannot be enabled: its template's [Install] has Alias= but no WantedBy= or RequiredBy=, and no alias link of an instance counts", nil
		}
	}
	return "", nil
}
