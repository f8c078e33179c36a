package enablement

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"
	"syscall"
)

// The states State returns, spelled as systemctl prints them.
const (
	StateEnabled        = "enabled"
	StateEnabledRuntime = "enabled-runtime"
	StateLinked         = "linked"
	StateLinkedRuntime  = "linked-runtime"
	StateAlias          = "alias"
	StateMasked         = "masked"
	StateMaskedRuntime  = "masked-runtime"
	StateStatic         = "static"
	StateIndirect       = "indirect"
	StateDisabled       = "disabled"
	StateGenerated      = "generated"
	StateTransient      = "transient"
	StateBad            = "bad"
	StateNotFound       = "not-found"
)

var (
	// ErrNotFound means that no unit file of that name (nor, for an
	// instance, of its template) is in the search path.
	ErrNotFound = errors.New("unit file not found")
	// ErrBad means that systemctl would fail to compute a state: a unit
	// file or drop-in it cannot parse, an invalid alias symlink, an alias of
	// a missing unit, a symlink loop. `systemctl list-unit-files` shows
	// such units as "bad".
	ErrBad = errors.New("bad unit file")
	// ErrInvalidName means that the string asked about is not a unit name.
	ErrInvalidName = errors.New("invalid unit name")
)

// Unit search path of the system scope, in systemd's order (see the package
// documentation). Paths are as seen inside the root.
var searchPath = []string{
	"/etc/systemd/system.control",
	"/run/systemd/system.control",
	"/run/systemd/transient",
	"/run/systemd/generator.early",
	"/etc/systemd/system",
	"/etc/systemd/system.attached",
	"/run/systemd/system",
	"/run/systemd/system.attached",
	"/run/systemd/generator",
	"/usr/local/lib/systemd/system",
	"/lib/systemd/system",
	"/usr/lib/systemd/system",
	"/run/systemd/generator.late",
}

const (
	persistentConfig = "/etc/systemd/system"
	transientDir     = "/run/systemd/transient"
)

func isGeneratorDir(dir string) bool {
	switch dir {
	case "/run/systemd/generator", "/run/systemd/generator.early", "/run/systemd/generator.late":
		return true
	}
	return false
}

// isRuntime mirrors install.c's path_is_runtime(): everything below /run.
func isRuntime(p string) bool {
	return p == "/run" || strings.HasPrefix(p, "/run/")
}

// below reports whether p is dir or inside it.
func below(p, dir string) bool {
	return p == dir || strings.HasPrefix(p, dir+"/")
}

// State returns the enablement state of unit, a full unit name such as
// "foo.service", "foo@.service" or "foo@bar.service" (names are not
// mangled: "foo" is refused with ErrInvalidName). Its cases:
//
//   - (state, nil) with one of the State* constants other than StateBad
//     and StateNotFound;
//   - ("not-found", err) with errors.Is(err, ErrNotFound) when no unit file
//     is found (systemctl 252 prints "No such file or directory" there;
//     later versions print "not-found");
//   - ("bad", err) with errors.Is(err, ErrBad) when systemctl would fail;
//   - ("", err) with errors.Is(err, ErrInvalidName) for a string that is not
//     a unit name, or an I/O error that prevented the lookup.
//
// It diverges from systemctl 252 --root on purpose where systemctl reads
// outside of the root (a symlink in a directory of the path, such as an
// absolute /lib -> /usr/lib, is resolved inside the root, not on the host)
// and where a drop-in is a symlink to /dev/null (systemctl --root looks for
// ROOT/dev/null and fails; here it is an empty drop-in, as for systemd on
// the booted host).
func (t *Tree) State(unit string) (string, error) {
	unlock, err := t.lock(unit)
	if err != nil {
		return "", err
	}
	defer unlock()
	st, err := t.state(unit)
	switch {
	case err == nil:
		return st, nil
	case errors.Is(err, ErrNotFound):
		return StateNotFound, err
	case errors.Is(err, fs.ErrNotExist):
		// A linked unit file or a drop-in that is missing: systemd gives up
		// with ENOENT, which systemctl reports as not found.
		return StateNotFound, fmt.Errorf("%s: %w: %w", unit, ErrNotFound, err)
	case errors.Is(err, ErrBad):
		return StateBad, err
	case errors.Is(err, syscall.ELOOP):
		return StateBad, fmt.Errorf("%w: %w", ErrBad, err)
	}
	return "", err
}

// infoKind is install.c's InstallInfoType.
type infoKind int

const (
	kindUnknown infoKind = iota
	kindRegular
	kindMasked
	kindSymlink // an alias: a symlink to a unit inside the search path
	kindLinked  // a symlink to a file outside of the search path
)

// installInfo is install.c's InstallInfo: one unit name and what was found
// for it.
type installInfo struct {
	name   string
	path   string // inside the root; where the unit was found
	kind   infoKind
	target string // for kindSymlink and kindLinked: the resolved target

	aliases, wantedBy, requiredBy, also []string
	defaultInstance                     string
}

func (i *installInfo) hasRules() bool {
	return len(i.aliases)+len(i.wantedBy)+len(i.requiredBy) > 0
}

// knownName mirrors is_symlink_with_known_name(): name is one that
// `systemctl enable` would create for the unit. Aliases are compared as
// written, specifiers unexpanded, as systemd 252 does.
func (i *installInfo) knownName(name string) bool {
	if name == i.name {
		return true
	}
	for _, a := range i.aliases {
		if a == name {
			return true
		}
	}
	return i.defaultInstance != "" && classifyName(i.name) == nameTemplate &&
		replaceInstance(i.name, i.defaultInstance) == name
}

// lookup is install.c's InstallContext for one query.
type lookup struct {
	t     *Tree
	infos map[string]*installInfo
}

func (t *Tree) state(unit string) (string, error) {
	c := &lookup{t: t, infos: map[string]*installInfo{}}
	info, err := c.traverse(c.add(unit))
	if err != nil {
		return "", err
	}
	switch info.kind {
	case kindMasked:
		if isRuntime(info.path) {
			return StateMaskedRuntime, nil
		}
		return StateMasked, nil
	case kindRegular:
	default:
		return "", fmt.Errorf("%w: %s: unexpected lookup result", ErrBad, unit)
	}
	// Asked under another name than the file's (and not as an instance of
	// a template): an alias.
	if unit != baseName(info.path) && classifyName(info.name) != nameInstance {
		return StateAlias, nil
	}
	dir := path.Dir(info.path)
	if isGeneratorDir(dir) {
		return StateGenerated, nil
	}
	if dir == transientDir {
		return StateTransient, nil
	}
	// Symlinks with the names `systemctl enable` creates...
	st, found, err := t.findInScope(info, true)
	if err != nil || found {
		return st, err
	}
	// ...or any other symlink to the unit: it may be in use.
	if _, found, err := t.findInScope(info, false); err != nil || found {
		return StateIndirect, err
	}
	switch {
	case info.hasRules():
		return StateDisabled, nil
	case len(info.also) > 0:
		return StateIndirect, nil
	}
	return StateStatic, nil
}

// add mirrors install_info_add(): one installInfo per name and query.
func (c *lookup) add(name string) *installInfo {
	if i, ok := c.infos[name]; ok {
		return i
	}
	i := &installInfo{name: name}
	c.infos[name] = i
	return i
}

// traverse mirrors install_info_traverse(): it looks the unit up and follows
// alias and linked symlinks to the unit file that holds its [Install].
func (c *lookup) traverse(start *installInfo) (*installInfo, error) {
	if err := c.search(start); err != nil {
		return nil, err
	}
	i := start
	for hops := 0; i.kind == kindSymlink || i.kind == kindLinked; hops++ {
		if hops >= 64 { // UNIT_FILE_FOLLOW_SYMLINK_MAX
			return nil, fmt.Errorf("%w: %s: too many levels of symbolic links", ErrBad, start.name)
		}
		// A linked unit file keeps the name of its symlink.
		if i.kind == kindLinked || baseName(i.target) == i.name {
			if err := c.follow(i); err != nil {
				return nil, err
			}
			continue
		}
		// An alias: go on with the unit it names.
		bn := baseName(i.target)
		if classifyName(i.name) == nameInstance && classifyName(bn) == nameTemplate {
			inst := replaceInstance(bn, nameInstanceOf(i.name))
			if inst == i.name {
				// foo@bar.service -> foo@.service: the template itself.
				if err := c.follow(i); err != nil {
					return nil, err
				}
				continue
			}
			bn = inst
		}
		from := i.path
		if classifyName(bn) == nameInvalid {
			return nil, fmt.Errorf("%w: %s points to %q, which is not a unit name", ErrBad, from, bn)
		}
		i = c.add(bn)
		if err := c.search(i); err != nil {
			if errors.Is(err, ErrNotFound) {
				return nil, fmt.Errorf("%w: %s is an alias of %s, which is not found (link severed)", ErrBad, from, bn)
			}
			return nil, err
		}
	}
	return i, nil
}

// follow mirrors install_info_follow(): the unit file is where the symlink
// points.
func (c *lookup) follow(i *installInfo) error {
	i.path, i.target, i.kind = i.target, "", kindUnknown
	return c.loadOrReadlink(i, i.path)
}

// search mirrors unit_file_search(): the first directory of the search path
// that has the unit (or, for an instance, its template) wins; then the
// [Install] settings of its drop-ins are added.
func (c *lookup) search(i *installInfo) error {
	if i.kind != kindUnknown {
		return nil // already looked up
	}
	names := []string{i.name}
	if classifyName(i.name) == nameInstance {
		tmpl, _ := templateOf(i.name)
		names = append(names, tmpl)
	}
	found := false
	for _, name := range names {
		for _, dir := range searchPath {
			p := path.Join(dir, name)
			err := c.loadOrReadlink(i, p)
			if err == nil {
				i.path, found = p, true
				break
			}
			if !isMissing(err) {
				return err
			}
		}
		if found {
			break
		}
	}
	if !found {
		return fmt.Errorf("%w: %s", ErrNotFound, i.name)
	}
	if i.kind == kindMasked {
		return nil
	}
	for _, p := range c.dropins(names) {
		if err := c.loadDropin(i, p); err != nil {
			return err
		}
	}
	return nil
}

// dropins mirrors conf_files_list_strv() over NAME.d/ (then TEMPLATE.d/) in
// every directory of the search path: *.conf entries of any type (install.c
// asks for no type; a directory named so then fails to load), the first of
// each file name winning, sorted by file name.
func (c *lookup) dropins(names []string) []string {
	byName := map[string]string{}
	for _, name := range names {
		for _, dir := range searchPath {
			d := path.Join(dir, name+".d")
			ents, _, err := c.t.readDir(d)
			var names []string
			if err == nil { // systemd ignores directories it cannot open
				for _, e := range ents {
					names = append(names, e.name)
				}
			}
			for _, n := range c.t.plannedDropins(d, names) {
				if _, seen := byName[n]; !seen && strings.HasSuffix(n, ".conf") {
					byName[n] = path.Join(d, n)
				}
			}
		}
	}
	keys := make([]string, 0, len(byName))
	for n := range byName {
		keys = append(keys, n)
	}
	sort.Strings(keys)
	files := make([]string, len(keys))
	for k, n := range keys {
		files[k] = byName[n]
	}
	return files
}

// errSymlink says that a unit file is a symlink, to be read with readlink.
var errSymlink = errors.New("is a symlink")

// loadOrReadlink mirrors unit_file_load_or_readlink(): a unit file is read,
// a symlink is classified as a mask, an alias or a linked unit file.
func (c *lookup) loadOrReadlink(i *installInfo, p string) error {
	err := c.load(i, p)
	if !errors.Is(err, errSymlink) {
		return err
	}
	target, linked, err := c.resolveSymlink(p)
	if err != nil {
		return err
	}
	masked, err := c.t.maskedLink(target)
	if err != nil {
		return err
	}
	switch {
	case masked:
		i.kind = kindMasked
	case linked:
		i.kind, i.target = kindLinked, target
	default:
		i.kind, i.target = kindSymlink, target
	}
	return nil
}

// load mirrors unit_file_load() for a unit file (not a drop-in).
func (c *lookup) load(i *installInfo, p string) error {
	if classifyName(i.name) != namePlain && !mayTemplate(unitType(i.name)) {
		return fmt.Errorf("%w: %s: unit type %s cannot be templated", ErrBad, p, unitType(i.name))
	}
	if f, ok := c.t.planned[p]; ok {
		return c.loadPlanned(i, p, f)
	}
	d, err := c.t.dir(path.Dir(p))
	if err != nil {
		return err
	}
	st, err := lstatAt(d, path.Base(p))
	switch {
	case err != nil:
		return ioError("reading", p, err)
	case isLink(&st):
		return errSymlink
	case isNullOrEmpty(&st):
		i.kind = kindMasked
		return nil
	case !isReg(&st):
		return fmt.Errorf("%w: %s is not a regular file (%s)", ErrBad, p, fileType(&st))
	}
	data, err := readAt(d, path.Base(p), p)
	if err != nil {
		return err
	}
	if err := c.t.parseInstall(i, p, data); err != nil {
		return err
	}
	i.kind = kindRegular
	return nil
}

// loadDropin mirrors unit_file_load() for a drop-in: symlinks are followed
// (inside the root), and an empty file or /dev/null adds nothing.
func (c *lookup) loadDropin(i *installInfo, p string) error {
	if f, ok := c.t.planned[p]; ok && !f.Removed {
		if f.Masked {
			return nil // a link to /dev/null: empty
		}
		return c.t.parseInstall(i, p, f.Content)
	}
	r, st, err := c.t.chase(p, true, true)
	if err != nil {
		return err
	}
	if r == "/dev/null" {
		// Even when the root has no /dev/null: a drop-in is commonly masked
		// that way, and systemd on the booted host reads it as empty.
		return nil
	}
	switch {
	case st == nil:
		return ioError("reading", p, fs.ErrNotExist)
	case isNullOrEmpty(st):
		return nil
	case !isReg(st):
		return fmt.Errorf("%w: %s is not a regular file (%s)", ErrBad, p, fileType(st))
	}
	d, err := c.t.dir(path.Dir(r))
	if err != nil {
		return err
	}
	data, err := readAt(d, path.Base(r), p)
	if err != nil {
		return err
	}
	return c.t.parseInstall(i, p, data)
}

// resolveSymlink mirrors unit_file_resolve_symlink() with
// resolve_destination_target: it returns where the symlink at p points,
// resolved inside the root (but its last component not followed), and
// whether that is outside of the search path (a linked unit file). A target
// inside the search path must be a valid alias of the symlink's name.
func (c *lookup) resolveSymlink(p string) (target string, linked bool, err error) {
	d, err := c.t.dir(path.Dir(p))
	if err != nil {
		return "", false, err
	}
	dest, err := readlinkAt(d.fd, path.Base(p))
	if err != nil {
		return "", false, ioError("reading", p, err)
	}
	if !path.IsAbs(dest) {
		dest = path.Dir(p) + "/" + dest
	}
	target, _, err = c.t.chase(dest, false, true)
	if err != nil {
		return "", false, err
	}
	for _, dir := range searchPath {
		if below(target, dir) && target != dir {
			if err := validateAlias(p, target); err != nil {
				return "", false, err
			}
			return target, false, nil
		}
	}
	return target, true, nil
}

// validateAlias mirrors unit_validate_alias_symlink_or_warn(): the symlink
// at p may point to target inside the search path only if the names are
// alike: same type, template to template, instance to the same instance or
// to a template, and not to itself.
func validateAlias(p, target string) error {
	src, dst := baseName(p), baseName(target)
	srcKind := classifyName(src)
	switch {
	case srcKind == nameInvalid:
		return fmt.Errorf("%w: %s: %q is not a valid unit name", ErrBad, p, src)
	case !mayAlias(unitType(src)):
		return fmt.Errorf("%w: %s: symlinks are not allowed for %s units", ErrBad, p, unitType(src))
	case srcKind != namePlain && !mayTemplate(unitType(src)):
		return fmt.Errorf("%w: %s: templates are not allowed for %s units", ErrBad, p, unitType(src))
	case src == dst:
		return fmt.Errorf("%w: %s: symlink to itself (%s)", ErrBad, p, target)
	}
	dstKind := classifyName(dst)
	switch {
	case dstKind == nameInvalid:
		return fmt.Errorf("%w: %s points to %q, which is not a valid unit name", ErrBad, p, dst)
	case unitType(src) != unitType(dst):
		return fmt.Errorf("%w: %s: symlink target %q has another unit type", ErrBad, p, dst)
	case srcKind != dstKind && !(srcKind == nameInstance && dstKind == nameTemplate):
		return fmt.Errorf("%w: %s: symlink target %q is not the same kind of name", ErrBad, p, dst)
	case srcKind == nameInstance && dstKind == nameInstance && nameInstanceOf(src) != nameInstanceOf(dst):
		return fmt.Errorf("%w: %s: symlink target %q has another instance", ErrBad, p, dst)
	}
	return nil
}

// maskedLink mirrors the mask test of unit_file_load_or_readlink() in
// systemd 252 (src/shared/install.c): null_or_empty_path_with_root() of the
// link's resolved target (src/basic/stat-util.c). A target that is
// "/dev/null" masks, even when the root has no /dev/null. For any other
// target the two roots differ:
//
//   - With a root directory (systemctl --root=DIR), the target systemd
//     passes is already prefixed with DIR, and null_or_empty_path_with_root
//     prefixes it again (CHASE_PREFIX_ROOT): it looks for DIR/DIR/target,
//     which is not there, and the ENOENT means "not a mask". The link is
//     then an alias or a linked unit file like any other, and the lookup
//     goes on to the unit it names: a link to an empty file, or to a vendor
//     file that is itself a link to /dev/null, is masked only if what it
//     resolves to is (in the directory where that is found), and a link to
//     a name that /etc shadows is that unit's alias.
//   - On the running system (root "/", no root directory for systemd), the
//     target is followed and stat'ed: an empty file or a character device
//     at the end masks at the link.
func (t *Tree) maskedLink(target string) (bool, error) {
	if target == "/dev/null" {
		return true, nil
	}
	if !t.host {
		return false, nil
	}
	return t.nullOrEmpty(target)
}

// nullOrEmpty mirrors null_or_empty_path_with_root() without a root
// directory: the target, followed, must be an empty file or a character
// device. A missing target is not a mask.
func (t *Tree) nullOrEmpty(target string) (bool, error) {
	_, st, err := t.chase(target, true, false)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return false, nil
		}
		return false, err
	}
	return isNullOrEmpty(st), nil
}
