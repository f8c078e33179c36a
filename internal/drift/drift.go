// Package drift compares a declared entry with an observation of the disk and
// describes every difference as a Drift: a plain value that the command line,
// the journal and the bus all print.
//
// Compare is pure: it never touches the disk, nor anything else; all it
// looks at is its arguments. A declared content kept out of memory
// (model.Stored) is described by its size and digest: a diff of it needs
// its bytes, which only the caller can read back (model.State.Store) and
// then passes as the entry's Exact, when Diffable says a diff is shown.
//
// It promises that content is
// shown (as a unified diff) only when the entry's declared mode is
// world-readable, any user could read the file where it was found, that
// place is its declared location (a path that left it through a symlink is
// a type drift, and its content was never read), and both sides are text.
// Otherwise only sizes and digests appear: plain SHA-256 ("sha256:HEX")
// where the content could have been shown, and for the rest only digests
// keyed with the host's Key ("hmac-sha256:HEX"), or none without one. It
// does not decide what is worth reporting twice: that is the daemon's job.
package drift

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/drift-monitor/drift-monitor/internal/escape"
	"github.com/drift-monitor/drift-monitor/internal/model"
)

// Kind is what differs.
type Kind string

const (
	Missing    Kind = "missing"
	Type       Kind = "type"
	Content    Kind = "content"
	Mode       Kind = "mode"
	Owner      Kind = "owner"
	Group      Kind = "group"
	Target     Kind = "target"
	HardLink   Kind = "hardlink"
	Unmasked   Kind = "unmasked"
	Masked     Kind = "masked"
	Enablement Kind = "enablement"
	KernelArg  Kind = "kernel-argument"
	Unreadable Kind = "unreadable"
	// Unverifiable is a notice, not drift: the content of a file from a remote
	// source without a verification hash cannot be checked without fetching it.
	Unverifiable Kind = "unverifiable"
	// RebootPending is a notice, not drift: the next boot's kernel command
	// line has a declared argument as declared, the running kernel's not.
	RebootPending Kind = "reboot-pending"
	// CannotEnable is a notice, not drift: a unit declared enabled that
	// enabling would leave disabled (a template without DefaultInstance=,
	// enablement.Tree.CannotEnable): Ignition's preset line for it makes no
	// link that counts, so "disabled" is what a freshly provisioned host has.
	CannotEnable Kind = "cannot-enable"
)

// Kinds is every Kind, the notices included, for whoever counts kinds (the
// metrics show a series for each). TestKindsListed fails on a Kind
// constant of this package missing from it: a file that declares kinds
// lists them in a var of its own, added here.
var Kinds = slices.Concat([]Kind{
	Missing, Type, Content, Mode, Owner, Group, Target, HardLink, Unmasked, Masked,
	Enablement, KernelArg, Unreadable, Unverifiable, RebootPending, CannotEnable,
	ACL, Xattr, FileAttr, Label, KeptMetadata,
}, MachineConfigKinds, AccountKinds, ImageKinds)

// Notices are the kinds that are counted and shown but are not drift: a
// check that finds only these is clean, and ConfigDriftDetected (the
// Prometheus rule in packaging/prometheus) leaves them out.
// TestNoticesAreTheRulesExclusions ties that rule's regex to this list.
var Notices = []Kind{
	Unverifiable, RebootPending, CannotEnable, KeptMetadata,
	NotChecked, NotApplicable, SameImage, FinalizationFailed, Undeclared, MergeLoss,
}

// Drift is one difference between an entry and the disk.
type Drift struct {
	Kind  Kind       `json:"kind"`
	Entry model.Kind `json:"entry"`
	Path  string     `json:"path"`
	Unit  string     `json:"unit,omitempty"`
	User  string     `json:"user,omitempty"`
	// Group names the group of a group entry's drift.
	Group   string `json:"group,omitempty"`
	Message string `json:"message"`
	Want    string `json:"want,omitempty"`
	Got     string `json:"got,omitempty"`
	// Diff is a unified diff (-want +got) of a non-secret text file.
	Diff string `json:"diff,omitempty"`
	// Attribute names the metadata of an acl, xattr, fileattr or label drift:
	// the xattrs concerned (system.posix_acl_access, user.foo), or the
	// flags (immutable, append-only). Journald has it as the kind's own
	// field (journal.Attribute).
	Attribute string `json:"attribute,omitempty"`
	// EntryID identifies the entry the drift belongs to (see model.Entry.ID).
	EntryID string `json:"-"`
}

// Key identifies a drift across checks: the same entry differing in the same
// way has the same key, whatever the details.
func (d *Drift) Key() string { return d.EntryID + "|" + string(d.Kind) }

// Cmp is the order drift is listed in, wherever it is listed (a check's
// report, the daemon's status, journal and bus): by path, then entry, then
// kind. It leaves ties (kernel arguments, all at /proc/cmdline) to the
// lister: Sort keeps them in the order they come in.
func Cmp(a, b *Drift) int {
	if c := strings.Compare(a.Path, b.Path); c != 0 {
		return c
	}
	if c := strings.Compare(string(a.Entry), string(b.Entry)); c != 0 {
		return c
	}
	return strings.Compare(string(a.Kind), string(b.Kind))
}

// Sort orders ds by Cmp, stably: ties keep their order (the entries'
// declaration order, and an entry's drift in the order Compare found it).
func Sort(ds []Drift) {
	sort.SliceStable(ds, func(i, j int) bool { return Cmp(&ds[i], &ds[j]) < 0 })
}

// Subject is the short name of what drifted, for status lines: the unit for
// unit-level drift, else the escaped path.
func (d *Drift) Subject() string {
	switch d.Entry {
	case model.KindEnablement, model.KindMask, model.KindUnmask:
		return escape.Name(d.Unit)
	case model.KindKernelArg:
		return "kernel argument " + escape.Name(d.Want)
	case model.KindOSImage:
		return "osImageURL"
	case model.KindKernelType:
		return "kernelType"
	case model.KindExtension:
		return "extension " + escape.Name(strings.TrimPrefix(d.EntryID, string(model.KindExtension)+":"))
	case model.KindFIPS:
		return "fips"
	case model.KindUser:
		return "user " + escape.Name(d.User)
	case model.KindGroup:
		return "group " + escape.Name(d.Group)
	}
	return escape.Name(d.Path)
}

// Noun names an entry in messages, in the seed's style: file "/etc/x".
func Noun(e *model.Entry) string {
	switch e.Kind {
	case model.KindFile:
		return fmt.Sprintf("file %q", e.Path)
	case model.KindDirectory:
		return fmt.Sprintf("directory %q", e.Path)
	case model.KindLink:
		return fmt.Sprintf("link %q", e.Path)
	case model.KindHardLink:
		return fmt.Sprintf("hard link %q", e.Path)
	case model.KindUnit:
		return fmt.Sprintf("unit %q (%q)", e.Unit, e.Path)
	case model.KindMask, model.KindUnmask, model.KindEnablement:
		return fmt.Sprintf("unit %q", e.Unit)
	case model.KindDropin:
		return fmt.Sprintf("drop-in %q", e.Path)
	case model.KindSSHKeys:
		return fmt.Sprintf("SSH keys of user %q (%q)", e.User, e.Path)
	case model.KindKernelArg:
		return fmt.Sprintf("kernel argument %q", e.Arg)
	case model.KindConfig:
		return fmt.Sprintf("%s of config %q", escape.Name(e.Target), e.Path)
	case model.KindOSImage:
		return fmt.Sprintf("osImageURL %q", e.Arg)
	case model.KindKernelType:
		return fmt.Sprintf("kernelType %q", e.Arg)
	case model.KindExtension:
		return fmt.Sprintf("extension %q", e.Arg)
	case model.KindFIPS:
		return "fips: " + e.Arg
	case model.KindNotChecked:
		return fmt.Sprintf("file %q", e.Path)
	case model.KindUser, model.KindGroup:
		return accountNoun(e)
	}
	return fmt.Sprintf("%q", e.Path)
}
