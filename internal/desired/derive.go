package desired

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"net/url"
	"path"
	"sort"
	"strings"

	types "github.com/drift-monitor/drift-monitor/internal/ignspec"
	"github.com/drift-monitor/drift-monitor/internal/model"
	"github.com/vincent-petithory/dataurl"
)

// Ignition's defaults for nodes it creates without a declared mode
// (internal/exec/util/file.go: DefaultFilePermissions, DefaultDirectoryPermissions).
const (
	defaultFileMode = 0o644
	defaultDirMode  = 0o755
	unitDir         = "/etc/systemd/system"
	unitFileMode    = 0o644
	sshKeysFileMode = 0o600
)

// Accounts resolves user and group names the way the target root would: from
// its own /etc/passwd and /etc/group (not the host's NSS).
type Accounts interface {
	LookupUser(name string) (User, bool)
	LookupGroup(name string) (gid int, ok bool)
}

// User is a passwd entry.
type User struct {
	Name string
	UID  int
	GID  int
	Home string
}

// Derive turns a merged config into entries, sorted by path. It does not touch
// the disk except through acct.
func Derive(cfg types.Config, acct Accounts) (model.State, error) {
	return deriveReleasing(cfg, acct, false)
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
	c, err := fileContent(f)
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
// (specialbits.go).
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

// fileContent works out what a declared file must hold, following Ignition's
// file stage: contents (decoded, decompressed), then each append fragment.
func fileContent(f types.File) (*model.Content, error) {
	c := &model.Content{}
	base := f.Contents
	switch {
	case base.Source == nil:
		if f.Overwrite != nil && *f.Overwrite {
			c.Exact = []byte{} // Ignition truncates: an empty base
		} else if len(f.Append) == 0 {
			return nil, nil // existing content is kept: nothing declared
		}
	default:
		data, hash, why, err := resource(base)
		if err != nil {
			return nil, fmt.Errorf("contents: %w", err)
		}
		switch {
		case why != "":
			c.Unverifiable = why
			return c, nil
		case hash != nil:
			c.Hash = hash
		default:
			c.Exact = data
		}
	}
	var suffix []byte
	for i, a := range f.Append {
		data, _, why, err := resource(a)
		if err != nil {
			return nil, fmt.Errorf("append %d: %w", i, err)
		}
		if why != "" || data == nil {
			return &model.Content{Unverifiable: fmt.Sprintf("append %d: %s", i, orRemote(why))}, nil
		}
		suffix = append(suffix, data...)
	}
	if c.Exact != nil {
		c.Exact = append(c.Exact, suffix...)
	} else {
		c.Suffix = suffix
	}
	return c, nil
}

func orRemote(why string) string {
	if why != "" {
		return why
	}
	return "remote source: its length is unknown, so the content after it cannot be located"
}

// resource decodes an Ignition resource. It returns the bytes of a data URL
// (decompressed, and verified against its verification.hash), or the
// verification hash of a remote source, or why the source cannot be
// verified without fetching it (it is never fetched).
func resource(r types.Resource) (data []byte, hash *model.Hash, unverifiable string, err error) {
	if r.Source == nil || *r.Source == "" {
		// Ignition fetches nothing for an empty source ("" parses as a URL
		// without a scheme): the file it writes is empty.
		return []byte{}, nil, "", nil
	}
	src := *r.Source
	if data, ok := types.Base64DataURL(src); ok {
		data, err := decompressed(data, r.Compression)
		if err == nil {
			err = verifyHash(r.Verification, data)
		}
		return data, nil, "", err
	}
	u, err := url.Parse(src)
	if err != nil {
		return nil, nil, "", fmt.Errorf("invalid source URL: %w", err)
	}
	if u.Scheme != "data" {
		if r.Verification.Hash == nil {
			return nil, nil, fmt.Sprintf("remote %s source without verification.hash (never fetched)", u.Scheme), nil
		}
		// With compression, the hash describes the decompressed file (Ignition
		// verifies after decompressing): what the disk holds.
		algo, sum, ok := strings.Cut(*r.Verification.Hash, "-")
		if !ok {
			return nil, nil, "", fmt.Errorf("invalid verification.hash %q", *r.Verification.Hash)
		}
		return nil, &model.Hash{Algorithm: algo, Hex: strings.ToLower(sum)}, "", nil
	}
	du, err := dataurl.DecodeString(src)
	if err != nil {
		return nil, nil, "", fmt.Errorf("undecodable data URL: %w", err)
	}
	data, err = decompressed(du.Data, r.Compression)
	if err == nil {
		err = verifyHash(r.Verification, data)
	}
	return data, nil, "", err
}

// decompressed is data as the disk holds it: gunzipped for gzip.
func decompressed(data []byte, compression *string) ([]byte, error) {
	if compression != nil && *compression == "gzip" {
		zr, err := gzip.NewReader(bytes.NewReader(data))
		if err != nil {
			return nil, fmt.Errorf("gzip data URL: %w", err)
		}
		data, err = io.ReadAll(zr)
		if err != nil {
			return nil, fmt.Errorf("gzip data URL: %w", err)
		}
	}
	if data == nil {
		data = []byte{}
	}
	return data, nil
}

func deriveUnit(u types.Unit, add func(model.Entry)) {
	unitPath := path.Join(unitDir, u.Name)
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
		add(model.Entry{Kind: model.KindDropin, Path: path.Join(unitDir, u.Name+".d", d.Name), Unit: u.Name, Type: model.TypeRegular,
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
