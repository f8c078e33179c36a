// Package derive turns a merged Ignition config into the entries that must
// hold on disk (model.State), as Ignition's stages would have written
// them: modes and owners where Ignition creates a node, kept where it
// keeps one, contents decoded (package contents), units, drop-ins and
// masks, accounts and SSH keys, kernel arguments. It is pure: the target
// root's account databases come in as Accounts, read by the caller. It is
// apart from the readers so that what Ignition writes for a config is
// decided in one place whatever the config was written in, and can be
// tested without files.
package derive

import (
	"fmt"
	"path"
	"sort"
	"strings"

	"github.com/drift-monitor/drift-monitor/internal/desired/contents"
	"github.com/drift-monitor/drift-monitor/internal/desired/parsed"
	types "github.com/drift-monitor/drift-monitor/internal/ignspec"
	"github.com/drift-monitor/drift-monitor/internal/model"
)

// Ignition's defaults for nodes it creates without a declared mode
// (internal/exec/util/file.go: DefaultFilePermissions, DefaultDirectoryPermissions).
const (
	defaultFileMode = 0o644
	defaultDirMode  = 0o755
	unitFileMode    = 0o644
	sshKeysFileMode = 0o600
)

// Derive turns a merged config into entries, sorted by path. It does not touch
// the disk except through acct.
func Derive(cfg types.Config, acct Accounts) (model.State, error) {
	return deriveReleasing(cfg, acct, false)
}

// Releasing is Derive that lets each file's source go once its entry is
// derived (see deriveReleasing): the caller holds no other reference to
// cfg's files.
func Releasing(cfg types.Config, acct Accounts) (model.State, error) {
	return deriveReleasing(cfg, acct, true)
}

// deriveReleasing is Derive; with release, it zeroes each file of
// cfg.Storage.Files once its entry is derived, so that its contents' source
// (data URLs are most of a large config) can be collected while the decoded
// contents accumulate: the caller must hold no other reference to them.
func deriveReleasing(cfg types.Config, acct Accounts, release bool) (model.State, error) {
	var st model.State
	add := func(e model.Entry) { st.Entries = append(st.Entries, e) }

	for _, d := range cfg.Storage.Directories {
		// Without overwrite, an existing directory keeps its mode and owner
		// (Ignition's dirEntry.create only sets what is declared).
		fresh := d.Overwrite != nil && *d.Overwrite
		e := node(model.KindDirectory, d.Node, acct, fresh)
		e.Type = model.TypeDirectory
		e.Mode = mode(d.Mode, defaultDirMode, fresh)
		add(e)
	}
	for i, f := range cfg.Storage.Files {
		e, err := fileEntry(f, acct)
		if err != nil {
			return st, err
		}
		add(e)
		if release {
			cfg.Storage.Files[i], f = types.File{}, types.File{}
		}
	}
	for _, l := range cfg.Storage.Links {
		add(linkEntry(l, acct))
	}
	for _, u := range cfg.Systemd.Units {
		deriveUnit(u, add)
	}
	deriveAccounts(cfg.Passwd, add)
	for _, u := range cfg.Passwd.Users {
		// A user declared shouldExist false is deleted and gets no keys
		// (internal/exec/stages/files/passwd.go, ensureUsers: continue
		// before AuthorizeSSHKeys).
		if len(u.SSHAuthorizedKeys) == 0 || (u.ShouldExist != nil && !*u.ShouldExist) {
			continue
		}
		add(sshKeys(u, acct))
	}
	for _, a := range cfg.KernelArguments.ShouldExist {
		add(model.Entry{Kind: model.KindKernelArg, Path: "/proc/cmdline", Type: model.TypeNone, Arg: string(a), ArgPresent: true})
	}
	for _, a := range cfg.KernelArguments.ShouldNotExist {
		add(model.Entry{Kind: model.KindKernelArg, Path: "/proc/cmdline", Type: model.TypeNone, Arg: string(a), ArgPresent: false})
	}
	sort.SliceStable(st.Entries, func(i, j int) bool { return st.Entries[i].Path < st.Entries[j].Path })
	return st, nil
}

// fileEntry is the entry of a declared file.
func fileEntry(f types.File, acct Accounts) (model.Entry, error) {
	// Ignition writes a new inode (a renamed temporary file, mode 0644,
	// owned by root) when it removes the old node (overwrite) or fetches a
	// base (contents.source: an existing node then fails the stage). A
	// file with only append fragments, or nothing at all, is the existing
	// file when there is one: its mode and owner stay unless declared
	// (fileEntry.create, util.PerformFetch and util.SetPermissions, which
	// defaults the owner to the node's own; docs/configuration-v3_*.md,
	// "mode": "or the existing file's permissions if overwrite is false,
	// contents is unspecified, and a file already exists at the path").
	fresh := (f.Overwrite != nil && *f.Overwrite) || f.Contents.Source != nil
	e := node(model.KindFile, f.Node, acct, fresh)
	e.Type = model.TypeRegular
	e.Mode = mode(f.Mode, defaultFileMode, fresh)
	c, err := contents.Of(f)
	if err != nil {
		return e, fmt.Errorf("file %q: %w", f.Path, err)
	}
	e.Content = c
	return e, nil
}

// linkEntry is the entry of a declared link, symbolic or hard.
func linkEntry(l types.Link, acct Accounts) model.Entry {
	e := node(model.KindLink, l.Node, acct, true)
	e.Type = model.TypeSymlink
	if l.Target != nil {
		e.Target = *l.Target
	}
	if l.Hard != nil && *l.Hard {
		e.Kind, e.Type = model.KindHardLink, model.TypeHardLink
		e.Target = path.Clean(e.Target)
		// A hard link's owner is its target's: Ignition warns when one is given.
		e.UID, e.GID, e.OwnerProblem, e.GroupProblem = nil, nil, "", ""
	} else if l.User.ID == nil && l.User.Name == nil && l.Group.ID == nil && l.Group.Name == nil {
		// Ownership of a symlink is rarely meaningful; check it only when declared.
		e.UID, e.GID = nil, nil
	}
	return e
}

// node is an entry's path and owner. The owner Ignition gives a node it does
// not declare one for is the node's own (util.SetPermissions): root for a node
// it creates (fresh), and whatever was there for one it keeps — then no owner
// is desired.
func node(k model.Kind, n types.Node, acct Accounts, fresh bool) model.Entry {
	e := model.Entry{Kind: k, Path: path.Clean(n.Path)}
	zero := 0
	// An id of -1 reaches here only from a MachineConfig (Parse refuses a
	// negative id elsewhere). The MCD chowns only when neither id is -1
	// (machine-config-operator pkg/daemon/file_writers.go,
	// writeFileAtomically): the node keeps the owner and group it was
	// created with, so neither is desired.
	if unset := -1; (n.User.ID != nil && *n.User.ID == unset) || (n.Group.ID != nil && *n.Group.ID == unset) {
		return e
	}
	switch {
	case n.User.ID != nil:
		e.UID = n.User.ID
	case n.User.Name != nil && *n.User.Name != "":
		if u, ok := acct.LookupUser(*n.User.Name); ok {
			uid := u.UID
			e.UID = &uid
		} else {
			e.OwnerProblem = fmt.Sprintf("user %q does not exist in the target's passwd", *n.User.Name)
		}
	case fresh:
		e.UID = &zero
	}
	switch {
	case n.Group.ID != nil:
		e.GID = n.Group.ID
	case n.Group.Name != nil && *n.Group.Name != "":
		if gid, ok := acct.LookupGroup(*n.Group.Name); ok {
			e.GID = &gid
		} else {
			e.GroupProblem = fmt.Sprintf("group %q does not exist in the target's group file", *n.Group.Name)
		}
	case fresh:
		g := 0
		e.GID = &g
	}
	return e
}

// mode is the declared mode, or Ignition's default for a node it creates
// (fresh); nil for a kept node without a declared mode.
//
// Setuid, setgid and sticky bits are part of it: cfg is in spec 3.6.0, which
// applies them (Ignition's docs/migrating-configs.md, "Special mode bits
// supported"), and a config of an older spec reaches Derive with them
// masked already, as Ignition masks them when it translates one to 3.6.0
// (v2.27.0 config/v3_6/translate/translate.go, "& ^07000"; the older
// spec's validation warns of them). The loader marks those optional
// (the Ignition reader's specialbits.go).
func mode(m *int, def uint32, fresh bool) *uint32 {
	if m == nil && !fresh {
		return nil
	}
	v := def
	if m != nil {
		v = uint32(*m) & 0o7777
	}
	return &v
}

func deriveUnit(u types.Unit, add func(model.Entry)) {
	unitPath := path.Join(parsed.UnitDir, u.Name)
	masked := u.Mask != nil && *u.Mask
	root := 0
	fileMode := uint32(unitFileMode)
	switch {
	case masked:
		add(model.Entry{Kind: model.KindMask, Path: unitPath, Unit: u.Name, Type: model.TypeSymlink, Target: "/dev/null"})
	case u.Contents != nil && *u.Contents != "":
		// Ignition writes no unit file for empty contents (writeSystemdUnit in
		// internal/exec/stages/files/units.go: cutil.NilOrEmpty), while an
		// empty drop-in is written (only a nil one is skipped).
		add(model.Entry{Kind: model.KindUnit, Path: unitPath, Unit: u.Name, Type: model.TypeRegular,
			Mode: &fileMode, UID: &root, GID: &root, Content: &model.Content{Exact: []byte(*u.Contents)}})
	case u.Mask != nil:
		// mask: false — Ignition removes an existing mask.
		add(model.Entry{Kind: model.KindUnmask, Path: unitPath, Unit: u.Name, Type: model.TypeNotMasked})
	}
	for _, d := range u.Dropins {
		if d.Contents == nil {
			continue
		}
		add(model.Entry{Kind: model.KindDropin, Path: path.Join(parsed.UnitDir, u.Name+".d", d.Name), Unit: u.Name, Type: model.TypeRegular,
			Mode: &fileMode, UID: &root, GID: &root, Content: &model.Content{Exact: []byte(*d.Contents)}})
	}
	if u.Enabled != nil && !masked {
		en := *u.Enabled
		add(model.Entry{Kind: model.KindEnablement, Path: unitPath, Unit: u.Name, Type: model.TypeNone, Enabled: &en})
	}
}

// sshKeys is the fragment Ignition writes for a user's keys:
// ~USER/.ssh/authorized_keys.d/ignition, the keys joined by newlines and
// newline-terminated, mode 0600, owned by the user.
func sshKeys(u types.PasswdUser, acct Accounts) model.Entry {
	keys := make([]string, len(u.SSHAuthorizedKeys))
	for i, k := range u.SSHAuthorizedKeys {
		keys[i] = string(k)
	}
	ks := strings.Join(keys, "\n")
	if !strings.HasSuffix(ks, "\n") {
		ks += "\n"
	}
	m := uint32(sshKeysFileMode)
	e := model.Entry{Kind: model.KindSSHKeys, Type: model.TypeRegular, Mode: &m, User: u.Name, Content: &model.Content{Exact: []byte(ks)}}
	home := ""
	if u.HomeDir != nil && *u.HomeDir != "" {
		home = *u.HomeDir
	}
	if pw, ok := acct.LookupUser(u.Name); ok {
		if home == "" {
			home = pw.Home
		}
		uid, gid := pw.UID, pw.GID
		e.UID, e.GID = &uid, &gid
	} else {
		e.OwnerProblem = fmt.Sprintf("user %q does not exist in the target's passwd", u.Name)
	}
	if home == "" {
		home = path.Join("/home", u.Name) // useradd's default
	}
	e.Path = path.Join(home, ".ssh", "authorized_keys.d", "ignition")
	return e
}

// UnfetchedEntries are the notices' entries of a fragment's unfetched
// children: kind config, checked against nothing on disk.
func UnfetchedEntries(hostFile string, un []parsed.Unfetched) []model.Entry {
	var es []model.Entry
	for _, u := range un {
		es = append(es, model.Entry{Kind: model.KindConfig, Path: hostFile, Type: model.TypeNone,
			Target:  u.Ref + " (" + u.Source + ")",
			Content: &model.Content{Unverifiable: u.Unverifiable()}})
	}
	return es
}
