package reconcile

import (
	"fmt"
	"path"
	"strings"

	"github.com/drift-monitor/drift-monitor/internal/drift"
	"github.com/drift-monitor/drift-monitor/internal/escape"
	"github.com/drift-monitor/drift-monitor/internal/model"
	"github.com/drift-monitor/drift-monitor/internal/ondisk"
	"github.com/drift-monitor/drift-monitor/internal/selinux"
)

// A repair is decided, then done: each entry's observation (what the check
// functions read, nothing written) is turned into Steps by a pure planner
// (planNode, planEnable, planDisable, planAccount), and apply executes the
// Steps. A dry run stops after planning; the Steps it prints are the ones an
// apply executes, in the same order, and an apply's record (Action.Steps) is
// the Steps it executed.

// Op is what a Step does.
type Op string

// The operations of a repair.
const (
	OpWrite       Op = "write"        // a regular file: a new inode with contents, owner, mode
	OpMkdir       Op = "mkdir"        // a directory: a new one, owner, mode
	OpSymlink     Op = "symlink"      // a symbolic link: a new one
	OpHardLink    Op = "hardlink"     // a hard link to the declared target
	OpChown       Op = "chown"        // the owner of the node there, then its mode
	OpChmod       Op = "chmod"        // the mode of the node there
	OpClearFlags  Op = "clear-flags"  // the immutable and append-only flags
	OpRemoveXattr Op = "remove-xattr" // an extended attribute (an ACL is one)
	OpLabel       Op = "label"        // the SELinux label: the policy's default
	OpRemove      Op = "remove"       // a link (an unmask, a disable)
	OpEnable      Op = "enable"       // a unit, through systemd
	OpDisable     Op = "disable"      // a unit, through systemd
	OpRun         Op = "run"          // a shadow-utils tool (accounts)
	OpRelabel     Op = "relabel"      // the account files and a home: the policy's labels
)

// Step is one thing a repair writes: where, what, and which drift it
// resolves. Says never holds content or a password hash: a size, a
// source, a command with the hash named, not shown.
type Step struct {
	Op   Op     `json:"op"`
	Path string `json:"path,omitempty"`
	Unit string `json:"unit,omitempty"`
	// Says is the step for people, as reports print it.
	Says string `json:"says"`
	// Resolves is the drift the step puts right.
	Resolves []drift.Kind `json:"resolves,omitempty"`

	// What apply needs, and never shows.
	content []byte // OpWrite
	meta    meta   // OpWrite, OpMkdir, OpChown, OpChmod, OpSymlink (owner)
	owned   bool   // OpSymlink: meta's owner is declared (else the writer's)
	parent  meta   // the missing parents' owner and mode
	target  string // OpSymlink, OpHardLink
	// labelAt is the path whose label the node at Path wants (OpWrite,
	// OpMkdir, OpSymlink): the directories made on the way to it get the
	// labels of its parents.
	labelAt string
	overDir bool   // an empty directory stands there, replaced
	replace bool   // OpMkdir: a non-directory stands there, replaced
	name    string // OpRemoveXattr
	label   string // OpLabel
	cmd     command
	hash    *string // OpRun: the declared password hash, kept out of messages
	home    string  // OpRelabel: the user whose home is relabelled too
	prune   bool    // OpRemove: then the .wants/.requires directories it emptied
	// seen is the node planning observed at Path: apply writes nothing
	// there once it is another (a swap since), nil when nothing stood there
	// or the node is the one an earlier step made.
	seen *seen
}

// seen is a node as it was observed.
type seen struct {
	typ      ondisk.FileType
	dev, ino uint64
}

func seenOf(ob *ondisk.Observation) *seen {
	if ob.Type == ondisk.Absent {
		return nil
	}
	return &seen{typ: ob.Type, dev: ob.Dev, ino: ob.Ino}
}

// says lists the steps for people.
func says(steps []Step) []string {
	var out []string
	for _, s := range steps {
		out = append(out, s.Says)
	}
	return out
}

// nodeFacts is what planning a node takes, all of it read before.
type nodeFacts struct {
	ob ondisk.Observation
	// emptyDir: the directory at the path holds nothing (asked only when a
	// directory stands where something else is declared).
	emptyDir bool
	// content is what a regular file rewritten holds (contentErr: why it
	// cannot be had); asked only when it is rewritten.
	content    []byte
	contentErr error
	// targetType is what a hard link's target is (targetErr: why it
	// cannot be linked to).
	targetType ondisk.FileType
	targetErr  error
	// label looks up the policy's default label; nil: nothing is labelled.
	label func(p string, t selinux.FileType) (string, bool)
	// labelAt is the path whose label the node wants (ondisk.LabelPath).
	labelAt string
}

// rewrites says whether the entry's node is replaced by a new one (rather
// than kept, with its owner, mode and metadata mended).
func rewrites(e *model.Entry, ob *ondisk.Observation) bool {
	switch e.Type {
	case model.TypeRegular:
		return ob.Type != ondisk.Regular || ob.Content.State == ondisk.Differs || ob.Content.State == ondisk.ReadFailed
	case model.TypeDirectory:
		return ob.Type != ondisk.Directory
	case model.TypeSymlink:
		return ob.Type != ondisk.Symlink || ob.Target != e.Target
	case model.TypeHardLink:
		return true
	}
	return false
}

var nodeTypes = map[model.Type]ondisk.FileType{model.TypeRegular: ondisk.Regular, model.TypeDirectory: ondisk.Directory,
	model.TypeSymlink: ondisk.Symlink}

// planNode is the repair of an entry of a path (file, directory, link,
// unit, drop-in, mask, unmask, SSH keys) from what was observed there. It
// writes nothing and reads nothing.
func planNode(e *model.Entry, kinds []drift.Kind, f *nodeFacts) ([]Step, error) {
	ob := &f.ob
	switch {
	case ob.Err != nil:
		return nil, refuse("it cannot be examined: %v", ob.Err)
	case ob.Detour != nil:
		return nil, &DetourError{Detour: *ob.Detour}
	case e.Type == model.TypeNotMasked:
		// Ignition's UnmaskUnit removes the link to /dev/null
		// (internal/exec/util/unit.go).
		if ob.Type != ondisk.Symlink || ob.Target != "/dev/null" {
			return nil, nil
		}
		return []Step{{Op: OpRemove, Path: e.Path, Says: "remove the link to /dev/null", Resolves: kinds, seen: seenOf(ob)}}, nil
	case ob.Type == ondisk.Directory && e.Type != model.TypeDirectory && !f.emptyDir:
		return nil, refuse("a directory that is not empty stands at %q: drift-monitor never removes what it holds (move it away, then run reconcile again)", e.Path)
	}
	rewrite := rewrites(e, ob)
	defMode := uint32(defaultFileMode)
	if e.Type == model.TypeDirectory {
		defMode = defaultDirMode
	}
	m := wantMeta(e, ob, ob.Type == nodeTypes[e.Type], defMode)
	steps := planFlags(kinds, ob)
	if rewrite {
		s, err := planWrite(e, f, m)
		if err != nil {
			return nil, err
		}
		s.Resolves = without(kinds, drift.FileAttr, drift.Label)
		steps = append(steps, s)
	} else {
		steps = append(steps, planOwnerMode(e, kinds, ob, m)...)
		steps = append(steps, planXattrs(e, kinds, ob)...)
	}
	steps = append(steps, planLabel(e, kinds, f, rewrite)...)
	for i := range steps {
		steps[i].Path = e.Path
	}
	return steps, nil
}

// planWrite is the new node that replaces what stands at the path.
func planWrite(e *model.Entry, f *nodeFacts, m meta) (Step, error) {
	ob := &f.ob
	s := Step{meta: m, parent: parentMeta(e), overDir: ob.Type == ondisk.Directory, seen: seenOf(ob), target: e.Target, labelAt: f.labelAt}
	switch e.Type {
	case model.TypeRegular:
		if f.contentErr != nil {
			return s, f.contentErr
		}
		s.Op, s.content = OpWrite, f.content
		s.Says = fmt.Sprintf("write %s (%s)", contentSource(e), plural(len(f.content), "byte", "bytes"))
	case model.TypeDirectory:
		s.Op, s.replace, s.overDir = OpMkdir, ob.Type != ondisk.Absent, false
		s.Says = "create the directory"
	case model.TypeSymlink:
		// Ignition lchowns a link it writes (WriteLink, SetPermissions);
		// a mask it writes is root's (MaskUnit): the writer's.
		s.Op, s.owned = OpSymlink, e.UID != nil || e.GID != nil
		s.Says = fmt.Sprintf("link it to %q", e.Target)
	case model.TypeHardLink:
		// Ignition links to the target resolved through the root's links
		// (WriteLink: JoinPath, then os.Link, which follows no link at
		// the end).
		switch {
		case f.targetErr != nil:
			return s, refuse("its target %q cannot be linked to: %v", e.Target, f.targetErr)
		case f.targetType == ondisk.Directory:
			return s, refuse("its target %q is a directory", e.Target)
		}
		s.Op = OpHardLink
		s.Says = fmt.Sprintf("hard-link it to %q", e.Target)
	}
	switch {
	case ob.Type == ondisk.Symlink && e.Type == model.TypeSymlink:
		s.Says += fmt.Sprintf(" (it links to %q)", ob.Target)
	case ob.Type != ondisk.Absent && (e.Type != model.TypeRegular || ob.Type != ondisk.Regular):
		s.Says = fmt.Sprintf("replace the %s with it: %s", ob.Type, s.Says)
	}
	if e.Type == model.TypeRegular || e.Type == model.TypeDirectory {
		s.Says += fmt.Sprintf(", mode %s, owner %d:%d", model.FormatMode(m.mode), m.uid, m.gid)
	}
	return s, nil
}

// contentSource says where a file's bytes come from, never what they are.
func contentSource(e *model.Entry) string {
	switch c := e.Content; {
	case c == nil:
		return "an empty file (no content is declared)"
	case c.Exact != nil:
		return "the declared content"
	}
	return "what it held before Ignition appended to it (the first-boot record's base) and the declared append fragments"
}

func plural(n int, one, many string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, one)
	}
	return fmt.Sprintf("%d %s", n, many)
}

// planOwnerMode mends the owner and mode of the node that is kept (the same
// inode: its hard links keep sharing it), in one step: the kernel clears
// setuid and setgid on chown, and the mode is set after it.
func planOwnerMode(e *model.Entry, kinds []drift.Kind, ob *ondisk.Observation, m meta) []Step {
	var what []string
	op := OpChmod
	if ob.UID != m.uid || ob.GID != m.gid {
		op = OpChown
		what = append(what, fmt.Sprintf("the owner from %d:%d to %d:%d", ob.UID, ob.GID, m.uid, m.gid))
	}
	if e.Type != model.TypeSymlink && ob.Mode != m.mode {
		what = append(what, fmt.Sprintf("the mode from %s to %s", model.FormatMode(ob.Mode), model.FormatMode(m.mode)))
	}
	if len(what) == 0 {
		return nil
	}
	return []Step{{Op: op, meta: m, seen: seenOf(ob), Resolves: only(kinds, drift.Owner, drift.Group, drift.Mode),
		Says: "change " + strings.Join(what, ", and ")}}
}

// planFlags clears the immutable and append-only flags first: an immutable
// node refuses every other change, an append-only one every xattr change
// (verified on tmpfs and ext4), and neither can be replaced.
func planFlags(kinds []drift.Kind, ob *ondisk.Observation) []Step {
	m := &ob.Meta
	if !has(kinds, drift.FileAttr) || !(m.Immutable || m.Append) {
		return nil
	}
	return []Step{{Op: OpClearFlags, seen: seenOf(ob), Resolves: []drift.Kind{drift.FileAttr},
		Says: "clear the " + strings.Join(drift.FlagNames(m), " and ") + " flag"}}
}

// planXattrs removes the ACLs and xattrs Ignition did not write from a node
// that is kept (a node rewritten is a new inode without them).
func planXattrs(e *model.Entry, kinds []drift.Kind, ob *ondisk.Observation) []Step {
	var steps []Step
	add := func(k drift.Kind, names []string) {
		for _, x := range names {
			steps = append(steps, Step{Op: OpRemoveXattr, name: x, seen: seenOf(ob), Resolves: []drift.Kind{k},
				Says: "remove the extended attribute " + escape.Name(x)})
		}
	}
	if has(kinds, drift.ACL) {
		add(drift.ACL, drift.ExtraACLs(&ob.Meta, ob.Type == ondisk.Directory))
	}
	if has(kinds, drift.Xattr) {
		add(drift.Xattr, drift.ExtraXattrs(&ob.Meta))
	}
	return steps
}

// planLabel gives the node the policy's default label, the whole context,
// as Ignition's setfiles -F does (internal/exec/util/selinux.go): a node
// rewritten always (a new inode carries what the kernel gave it), a node
// kept when its label drifted. A hard link's inode is its target's,
// labelled with it; a file whose content Ignition keeps is not relabelled.
func planLabel(e *model.Entry, kinds []drift.Kind, f *nodeFacts, rewrite bool) []Step {
	if f.label == nil || e.Type == model.TypeHardLink || e.KeepsNode() || !rewrite && !has(kinds, drift.Label) {
		return nil
	}
	t, ok := labelTypes[nodeTypes[e.Type]]
	if !ok {
		return nil
	}
	want, ok := f.label(f.labelAt, t)
	if !ok {
		return nil
	}
	if v, _ := f.ob.Meta.Get(ondisk.XattrSELinux); !rewrite && strings.TrimRight(string(v), "\x00") == want {
		return nil
	}
	s := Step{Op: OpLabel, label: want, Resolves: only(kinds, drift.Label), Says: "set the SELinux label " + escape.Name(want)}
	if !rewrite {
		s.seen = seenOf(&f.ob)
	}
	return []Step{s}
}

// only is the kinds among want; without, those not among drop.
func only(kinds []drift.Kind, want ...drift.Kind) []drift.Kind {
	var out []drift.Kind
	for _, k := range kinds {
		if has(want, k) {
			out = append(out, k)
		}
	}
	return out
}

func without(kinds []drift.Kind, drop ...drift.Kind) []drift.Kind {
	var out []drift.Kind
	for _, k := range kinds {
		if !has(drop, k) {
			out = append(out, k)
		}
	}
	return out
}

// dirOf is the directory that holds a step's path.
func dirOf(s *Step) string { return path.Dir(s.Path) }
