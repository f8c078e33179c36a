package image

import (
	"fmt"
	"sort"
	"strings"

	"github.com/drift-monitor/drift-monitor/internal/model"
	"github.com/drift-monitor/drift-monitor/internal/ondisk"
)

// Op is how a path differs from the baseline, in `ostree admin
// config-diff`'s letters.
type Op byte

const (
	// Modified: the path is in both, and differs (What says how).
	Modified Op = 'M'
	// Removed: the baseline has it, the live /etc does not. A removed
	// directory is one change: its children are not listed.
	Removed Op = 'D'
	// Added: the live /etc has it, the baseline does not; every node under
	// an added directory is a change of its own, as config-diff lists them.
	Added Op = 'A'
)

func (o Op) String() string {
	switch o {
	case Modified:
		return "modified"
	case Removed:
		return "removed"
	case Added:
		return "added"
	}
	return "?"
}

// What is the set of attributes in which a modified path differs.
type What uint16

const (
	WType What = 1 << iota
	WMode
	WOwner
	WGroup
	WTarget
	WContent
	// WDevice and WCaps are rpm -V's D and P: a device's numbers, a
	// file's capabilities (ostree's comparison has neither).
	WDevice
	WCaps
)

var whatNames = []struct {
	w    What
	name string
}{
	{WType, "type"}, {WMode, "mode"}, {WOwner, "owner"}, {WGroup, "group"},
	{WTarget, "target"}, {WContent, "content"}, {WDevice, "device"}, {WCaps, "capabilities"},
}

// Names lists the attributes, in a fixed order.
func (w What) Names() []string {
	var ns []string
	for _, n := range whatNames {
		if w&n.w != 0 {
			ns = append(ns, n.name)
		}
	}
	return ns
}

func (w What) String() string { return strings.Join(w.Names(), ",") }

// Node is what stands at a path, as far as a comparison looks at it.
type Node struct {
	Type ondisk.FileType
	// Mode is the permission bits with setuid, setgid and sticky (07777);
	// Fmt is the whole type of a special file (S_IFMT: a FIFO, a socket, a
	// device), which two Other nodes may differ in.
	Mode uint32
	Fmt  uint32
	UID  uint32
	GID  uint32
	// Target is a symbolic link's target.
	Target string
	Size   int64
}

// Change is one difference between the baseline and the live /etc.
type Change struct {
	// Path is the host path in the live /etc.
	Path string
	Op   Op
	// What is set for Modified.
	What What
	// Base is the baseline's node (nil for Added, and on rpm hosts the
	// package's), Live the live one (nil for Removed).
	Base, Live *Node
	// Err says why the path could not be compared (the change is then
	// Modified, with What empty): it is reported, never taken as equal.
	Err string
	// Owner names what the baseline's node came from: the packages on rpm
	// hosts ("" on ostree hosts, whose baseline is one tree).
	Owner string
	// RPM is what `rpm -V` would print for the path on rpm hosts: its
	// attribute letters (SM5DLUGTP, T never set) or "missing".
	RPM string
}

// Describe says how the path differs, in words: "content, mode (0644 →
// 0600)". Names and link targets are escaped by the caller's printer.
func (c *Change) Describe() string {
	switch {
	case c.Err != "":
		return "could not be compared: " + c.Err
	case c.Op == Removed:
		return "removed (the image has a " + c.Base.Type.String() + ")"
	case c.Op == Added:
		if c.Live == nil {
			return "added"
		}
		return "added (a " + c.Live.Type.String() + " the image does not have)"
	}
	var parts []string
	for _, n := range whatNames {
		if c.What&n.w == 0 {
			continue
		}
		s := n.name
		if c.Base != nil && c.Live != nil {
			switch n.w {
			case WType:
				s = fmt.Sprintf("type (%s → %s)", c.Base.Type, c.Live.Type)
			case WMode:
				s = fmt.Sprintf("mode (%s → %s)", model.FormatMode(c.Base.Mode), model.FormatMode(c.Live.Mode))
			case WOwner:
				s = fmt.Sprintf("owner (%d → %d)", c.Base.UID, c.Live.UID)
			case WGroup:
				s = fmt.Sprintf("group (%d → %d)", c.Base.GID, c.Live.GID)
			case WTarget:
				s = fmt.Sprintf("target (%q → %q)", c.Base.Target, c.Live.Target)
			case WContent:
				if c.Base.Size != c.Live.Size {
					s = fmt.Sprintf("content (%d → %d bytes)", c.Base.Size, c.Live.Size)
				}
			}
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, ", ")
}

// SortChanges orders changes by path.
func SortChanges(cs []Change) {
	sort.Slice(cs, func(i, j int) bool { return cs[i].Path < cs[j].Path })
}
