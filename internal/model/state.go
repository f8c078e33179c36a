// Package model is the plain data of a machine's desired state: the
// entries a config declares (Entry, of a Kind and a Type, with its Content,
// Account, first-boot Base), the whole State, and the keyed digest that
// stands for a content that must not be shown (Key). It is the leaf every
// other package shares: it imports only the standard library, so that
// whoever observes, compares, watches or reports entries (ondisk, drift,
// watch, audit, the daemon) links none of the loaders of configs (package
// desired, Ignition, Butane).
//
// Kinds is the one table of what each kind of entry means to every
// consumer (what it is compared with, what re-checks it, what an audit rule
// may watch, how it is repaired, how its drift is named and explained).
//
// It promises plain values: nothing in it reads a file. It does not promise that an Entry is valid: whoever makes
// entries (package desired) validates what it derives.
package model

import (
	"crypto/sha256"
	"fmt"
	"io/fs"
)

// Kind is the noun an entry is reported under.
type Kind string

// The kinds of entry. Units contribute several entries (unit file, drop-ins,
// mask, enablement), each checked and reported on its own.
const (
	KindFile       Kind = "file"
	KindDirectory  Kind = "directory"
	KindLink       Kind = "link"
	KindHardLink   Kind = "hardlink"
	KindUnit       Kind = "unit"
	KindDropin     Kind = "dropin"
	KindMask       Kind = "mask"
	KindUnmask     Kind = "unmask"
	KindEnablement Kind = "enablement"
	KindSSHKeys    Kind = "sshkeys"
	KindKernelArg  Kind = "kernel-argument"
	// KindConfig is a child config (ignition.config.merge or replace) that
	// is never fetched: it carries a notice, nothing on disk is checked.
	KindConfig Kind = "config"
)

// Type is what must stand at an entry's path.
type Type int

const (
	// TypeRegular: a regular file (not a symlink to one).
	TypeRegular Type = iota
	// TypeDirectory: a directory.
	TypeDirectory
	// TypeSymlink: a symbolic link whose target reads exactly Entry.Target.
	TypeSymlink
	// TypeHardLink: a non-directory sharing its inode with Entry.Target.
	TypeHardLink
	// TypeNotMasked: anything but a symlink to /dev/null (or nothing).
	TypeNotMasked
	// TypeNone: nothing on disk; the entry is checked through another
	// observation (enablement, kernel arguments).
	TypeNone
)

func (t Type) String() string {
	switch t {
	case TypeRegular:
		return "regular file"
	case TypeDirectory:
		return "directory"
	case TypeSymlink:
		return "symbolic link"
	case TypeHardLink:
		return "hard link"
	case TypeNotMasked:
		return "unmasked unit"
	}
	return "nothing"
}

// Entry is one declared thing. Fields that are nil or empty are not declared
// and therefore not checked.
type Entry struct {
	Kind Kind
	// Path is the absolute, cleaned host path (for enablement: the unit file's
	// path; for kernel arguments: /proc/cmdline).
	Path string
	// Unit names the systemd unit for unit, drop-in, mask and enablement entries.
	Unit string
	// User names the account whose SSH keys an sshkeys entry holds.
	User string
	Type Type

	// Mode holds the permission bits with setuid, setgid and sticky (07777).
	Mode *uint32
	// ModeOptional holds special bits (of 07000, never in Mode) that the
	// node may have or not: declared by a spec that Ignition does not
	// apply them for.
	ModeOptional uint32
	UID          *int
	GID          *int
	// OwnerProblem explains why a declared owner (user name) could not be
	// resolved in the target root, GroupProblem why a declared group could
	// not; they are reported as owner and group drift.
	OwnerProblem string
	GroupProblem string

	Content *Content

	// Target: for symlinks, the target exactly as written; for hard links, the
	// host path of the file the link must share an inode with; for config
	// entries, the child's reference and source (Path is the config file
	// that references it).
	Target string

	// Enabled is the declared enablement of Unit (enablement entries).
	Enabled *bool

	// MayBeAbsent: nothing at Path satisfies the entry too. The MCD deletes
	// a drop-in whose contents are empty instead of writing it
	// (machine-config-operator pkg/daemon/update.go, writeUnits).
	MayBeAbsent bool

	// NotRelabelled: the entry's writer does not set SELinux labels (the
	// MCD: see notRelabelled), so a label other than the policy's default
	// is a notice, not drift.
	NotRelabelled bool

	// Arg and ArgPresent declare a kernel argument that must (or must not) be
	// on the running kernel's command line. For a MachineConfig's fields
	// beyond Ignition (Source FromOS in Kinds), Arg is the declared value.
	Arg        string
	ArgPresent bool

	// Account declares a user (KindUser) or group (KindGroup).
	Account *Account
	// FirstBoot, when set, says which fields the first-boot record filled
	// (see FirstBoot).
	FirstBoot *FirstBoot
}

// Secret reports whether the entry's content must never be shown: its declared
// mode is not world-readable (or not declared at all for a file that holds
// content from a remote source).
func (e *Entry) Secret() bool {
	if e.Mode == nil {
		return true
	}
	return *e.Mode&0o004 == 0
}

// KeepsNode reports whether Ignition keeps the node it finds at the
// entry's path, metadata and all, rather than writing one: a file
// declared without contents, or with appended contents only (ignition
// internal/exec/stages/files/filesystemEntries.go, fileEntry.create: no
// contents, no rewrite). Its content is then its base, whatever that was,
// and its fragments.
func (e *Entry) KeepsNode() bool {
	if e.Kind != KindFile {
		return false
	}
	c := e.Content
	return c == nil || (c.Exact == nil && c.Stored == nil && c.Hash == nil && c.Unverifiable == "")
}

// ID identifies an entry within a state: two entries never share it.
func (e *Entry) ID() string {
	switch e.Kind {
	case KindEnablement:
		return string(e.Kind) + ":" + e.Unit
	case KindKernelArg, KindExtension:
		return string(e.Kind) + ":" + e.Arg
	case KindConfig:
		return string(e.Kind) + ":" + e.Path + ":" + e.Target
	case KindUser, KindGroup:
		if e.Account == nil {
			return accountID(e.Kind, e.User)
		}
		return accountID(e.Kind, e.Account.Name)
	}
	return string(e.Kind) + ":" + e.Path
}

// Content is what a regular file must hold.
//
// Exactly one of these shapes:
//   - Exact != nil: the file holds exactly these bytes;
//   - Stored != nil: the same, for a state that keeps only the bytes' size
//     and digest in memory (a daemon's state served from the cache; the
//     bytes are read back through State.Store);
//   - Hash != nil: the file holds a base whose digest is Hash, followed by Suffix;
//   - neither: the file ends with Suffix (its base is whatever was there, as
//     Ignition's overwrite=false leaves it); with Base, the base recorded at
//     the first boot followed by Suffix;
//   - Unverifiable != "": the content cannot be verified offline; only type,
//     mode and owner are checked.
type Content struct {
	Exact        []byte
	Stored       *Stored
	Hash         *Hash
	Suffix       []byte
	Unverifiable string
	// Base is the recorded base of a file only appended to (see Base).
	Base *Base
}

// ExactSize reports whether the file must hold exact bytes (Exact or Stored)
// and how many.
func (c *Content) ExactSize() (int64, bool) {
	switch {
	case c.Exact != nil:
		return int64(len(c.Exact)), true
	case c.Stored != nil:
		return c.Stored.Size, true
	}
	return 0, false
}

// Digest is the SHA-256 of the exact bytes. For Exact it is computed on every
// call: entries are shared by concurrent checks (a full check and an event's
// re-check), and it is only needed to describe a drift.
func (c *Content) Digest() [sha256.Size]byte {
	if c.Stored != nil {
		return c.Stored.Sum
	}
	return sha256.Sum256(c.Exact)
}

// Stored is exact content kept out of memory: its size and SHA-256, and
// where the store that served the state (State.Store) keeps the bytes. It
// is a plain value: it holds no file, and nothing reads through it.
type Stored struct {
	Size int64
	Sum  [sha256.Size]byte
	// Offset locates the bytes in the state's store; it means nothing to
	// anyone else.
	Offset int64
}

// ContentStore reads back the exact contents a state keeps as Stored: the
// bytes, checked against the digest, or an error (the store is damaged or
// gone). Whoever shows a declared content (a diff) reads it through here;
// nothing else needs the bytes.
type ContentStore interface {
	ReadStored(s *Stored) ([]byte, error)
}

// Hash is a verification hash from a config: algorithm "sha256" or "sha512"
// and the hex digest.
type Hash struct {
	Algorithm string
	Hex       string
}

func (h Hash) String() string { return h.Algorithm + "-" + h.Hex }

// State is the whole desired state of a machine.
type State struct {
	Entries []Entry
	// Files lists the config fragments the state came from, in merge order.
	Files []string
	// Warnings are Ignition's non-fatal findings, each prefixed with its
	// file (unused keys, deprecated fields).
	Warnings []string
	// Store reads back the entries' Stored contents: set by the cache that
	// made them Stored, nil otherwise. It holds the store open (a state
	// cache entry, readable even once removed from its directory) for as
	// long as it is referenced: whoever keeps the entries to check them
	// keeps it too.
	Store ContentStore
}

// FileMode converts declared bits to an fs.FileMode, for display.
func FileMode(bits uint32) fs.FileMode {
	m := fs.FileMode(bits & 0o777)
	if bits&0o4000 != 0 {
		m |= fs.ModeSetuid
	}
	if bits&0o2000 != 0 {
		m |= fs.ModeSetgid
	}
	if bits&0o1000 != 0 {
		m |= fs.ModeSticky
	}
	return m
}

// FormatMode prints mode bits the way chmod takes them: 0644, 04755.
func FormatMode(bits uint32) string {
	return fmt.Sprintf("%04o", bits&0o7777)
}
