package image

import (
	"context"
	"fmt"
	"path"
	"strings"

	"github.com/drift-monitor/drift-monitor/internal/drift"
	"github.com/drift-monitor/drift-monitor/internal/escape"
	"github.com/drift-monitor/drift-monitor/internal/model"
	"github.com/drift-monitor/drift-monitor/internal/ondisk"
)

// Class is why a difference from the image is there.
type Class string

const (
	// ClassDeclared: a config declares the path (its own entry reports
	// it); or the directory a declared path is in was added (its writer
	// made it) or removed (the declared entry reports it missing).
	ClassDeclared Class = "declared"
	// ClassFirstBoot: the path is as the first boot's record has it.
	ClassFirstBoot Class = "first-boot"
	// ClassRuntime: the OS writes the path while it runs (the shipped list).
	ClassRuntime Class = "runtime"
	// ClassExtension: a merged confext provides the node as it is.
	ClassExtension Class = "extension"
	// ClassUndeclared: none of these: an undeclared change.
	ClassUndeclared Class = "undeclared"
)

// WhyAccountLines is the Why of an account file that differs only in the
// lines of declared accounts (declaredAccountLines).
const WhyAccountLines = "only the lines of declared accounts differ"

// Classes lists them, in the order of precedence Classify gives them.
var Classes = []Class{ClassDeclared, ClassExtension, ClassRuntime, ClassFirstBoot, ClassUndeclared}

// Difference is a change with its class.
type Difference struct {
	Change
	Class Class
	// Why names what classed it: the declared entry's kind, the extension,
	// the runtime list's pattern; "" for undeclared.
	Why string
	// Excluded: an undeclared difference the exclusions leave unreported
	// (Classifier.Exclude). It keeps its class: `check --image` lists it
	// as excluded, nothing reports it.
	Excluded bool
}

// Classifier classes the changes of one baseline against one desired
// state.
type Classifier struct {
	declared map[string]model.Kind
	// ancestors are the directories above declared paths.
	ancestors map[string]bool
	// wanted are the unit names a config declares the enablement of:
	// their links in .wants/, .requires/ and .upholds/ directories of
	// /etc/systemd/system are that entry's to report.
	wanted map[string]bool
	// users and groups are the declared accounts' names: their lines of
	// the account files are theirs to report (declaredAccountLines).
	users, groups map[string]bool
	// base reads the image's version of a host path of /etc; nil where
	// the baseline has no tree.
	base func(p string) ([]byte, error)

	Runtime    *Runtime
	Record     *Record
	Recorder   *Recorder
	Extensions *Extensions
	// Exclude says whether the exclusions leave an undeclared difference
	// unreported (exclude.Rules.DriftFilter, asked of its drift); nil:
	// nothing is excluded.
	Exclude func(*drift.Drift) bool
}

// NewClassifierFor is the classifier of b's differences that every command
// and the daemon use alike: the declared nodes of entries (the entries in
// force, those the exclusions leave alone entirely taken out), b's merged
// confexts, the shipped runtime list, the first boot's record at
// RecordPath inside r matched with the host's digest key, and the
// exclusions (nil: none). The error says why the record is not used; the
// classifier is made without it.
func NewClassifierFor(r *ondisk.Root, b *Baseline, entries []model.Entry, key model.Key, exclude func(*drift.Drift) bool) (*Classifier, error) {
	c := NewClassifier(entries)
	c.Extensions = b.Extensions
	c.Exclude = exclude
	c.Recorder = &Recorder{Root: r, Key: key}
	if t := b.Tree; t != nil {
		c.base = t.readBase
	}
	rec, err := LoadRecord(r, RecordPath)
	c.Record = rec
	if err != nil {
		return c, fmt.Errorf("the first boot's record of /etc is not used: %w", err)
	}
	return c, nil
}

// NewClassifier indexes the declared nodes of entries, as their rows of
// model.Kinds say what they are compared with. An entry compared with the
// node at its path (a file, directory, link, unit file, drop-in, mask,
// unmask) declares its path; one compared with systemd's enablement of its
// unit declares that unit's links; an account declares its lines of the
// account files, not the files, and a kernel argument nothing under /etc.
func NewClassifier(entries []model.Entry) *Classifier {
	c := &Classifier{declared: map[string]model.Kind{}, ancestors: map[string]bool{}, wanted: map[string]bool{},
		users: map[string]bool{}, groups: map[string]bool{}, Runtime: ShippedRuntime()}
	for i := range entries {
		e := &entries[i]
		switch e.Kind.Means().Source {
		case model.FromUnitState:
			c.wanted[e.Unit] = true
			continue
		case model.FromAccounts:
			if e.Account != nil && e.Kind == model.KindUser {
				c.users[e.Account.Name] = true
			} else if e.Account != nil {
				c.groups[e.Account.Name] = true
			}
			continue
		case model.FromNode:
		default:
			continue
		}
		c.declared[e.Path] = e.Kind
		for d := path.Dir(e.Path); d != "/" && d != "."; d = path.Dir(d) {
			c.ancestors[d] = true
		}
	}
	return c
}

// Declares reports whether a config declares host path p (as Classify
// counts declared paths).
func (c *Classifier) Declares(p string) bool {
	_, ok := c.declared[p]
	return ok
}

// Classify classes each change.
func (c *Classifier) Classify(ctx context.Context, cs []Change) []Difference {
	out := make([]Difference, 0, len(cs))
	for i := range cs {
		out = append(out, c.classify(ctx, &cs[i]))
	}
	return out
}

func (c *Classifier) classify(ctx context.Context, ch *Change) Difference {
	d := c.class(ctx, ch)
	if d.Class == ClassUndeclared && c.Exclude != nil {
		d.Excluded = c.Exclude(&drift.Drift{Kind: drift.Undeclared, Entry: model.KindUndeclared, Path: ch.Path})
	}
	return d
}

func (c *Classifier) class(ctx context.Context, ch *Change) Difference {
	d := Difference{Change: *ch, Class: ClassUndeclared}
	if k, ok := c.declared[ch.Path]; ok {
		d.Class, d.Why = ClassDeclared, string(k)
		return d
	}
	if c.ancestors[ch.Path] && ch.Op != Modified && ch.Err == "" {
		d.Class, d.Why = ClassDeclared, "directory of declared paths"
		return d
	}
	if u := c.wantsLink(ch); u != "" {
		d.Class, d.Why = ClassDeclared, string(model.KindEnablement)+" of "+u
		return d
	}
	if ch.Err != "" {
		return d
	}
	if ch.Op != Removed {
		if n := c.Extensions.Provides(ctx, ch.Path); n != "" {
			d.Class, d.Why = ClassExtension, n
			return d
		}
	}
	if c.Runtime != nil {
		if pat := c.Runtime.Match(ch.Path); pat != "" {
			d.Class, d.Why = ClassRuntime, pat
			return d
		}
	}
	if c.Recorder != nil && c.Recorder.Matches(c.Record, ch) {
		d.Class, d.Why = ClassFirstBoot, RecordPath
		return d
	}
	if c.declaredAccountLines(ch) {
		d.Class, d.Why = ClassDeclared, WhyAccountLines
	}
	return d
}

// unitDirs are where enablement links are (systemctl enable writes them
// under /etc/systemd/system).
const unitDir = "/etc/systemd/system"

// wantsLink: a symbolic link of a unit whose enablement is declared, in
// a dependency directory of /etc/systemd/system.
func (c *Classifier) wantsLink(ch *Change) string {
	if ch.Op == Modified && ch.What&WType != 0 {
		return ""
	}
	n := ch.Live
	if n == nil {
		n = ch.Base
	}
	if n == nil || n.Type != ondisk.Symlink {
		return ""
	}
	dir, name := path.Split(ch.Path)
	dir = path.Clean(dir)
	if path.Dir(dir) != unitDir {
		return ""
	}
	for _, suffix := range []string{".wants", ".requires", ".upholds"} {
		if strings.HasSuffix(dir, suffix) && c.wanted[name] {
			return name
		}
	}
	return ""
}

// Drift is the report of an undeclared difference: kind and entry
// "undeclared", the path, what differs (Attribute: the attributes, or
// "added"/"removed"), the image's node and the live one in Want and Got.
// Content is never shown: a file of /etc may hold a secret, and the image's
// default was never declared world-readable by anyone.
func (d *Difference) Drift(source string) drift.Drift {
	dr := drift.Drift{Kind: drift.Undeclared, Entry: model.KindUndeclared, Path: d.Path,
		EntryID: string(model.KindUndeclared) + ":" + d.Path}
	q := fmt.Sprintf("%q", d.Path)
	switch {
	case d.Err != "":
		dr.Attribute = "unreadable"
		dr.Message = fmt.Sprintf("%s could not be compared with the image's %s: %s", q, source, escape.Text(d.Err))
	case d.Op == Added:
		dr.Attribute = "added"
		dr.Got = nodeText(d.Live)
		dr.Message = fmt.Sprintf("undeclared %s %s: the image (%s) has none", nodeNoun(d.Live), q, source)
	case d.Op == Removed:
		dr.Attribute = "removed"
		dr.Want = nodeText(d.Base)
		dr.Message = fmt.Sprintf("undeclared removal of %s: the image (%s) has a %s there", q, source, d.Base.Type)
	default:
		dr.Attribute = d.What.String()
		dr.Want, dr.Got = nodeText(d.Base), nodeText(d.Live)
		dr.Message = fmt.Sprintf("undeclared change to %s: %s differ%s from the image (%s)", q, d.Describe(), verbS(d.What), source)
	}
	if d.Owner != "" {
		dr.Message += " [package " + escape.Name(d.Owner) + "]"
	}
	return dr
}

func verbS(w What) string {
	if len(w.Names()) == 1 {
		return "s"
	}
	return ""
}

func nodeNoun(n *Node) string {
	if n == nil {
		return "node"
	}
	switch n.Type {
	case ondisk.Regular:
		return "file"
	case ondisk.Symlink:
		return "link"
	}
	return n.Type.String()
}

// nodeText is a node in a few words: "regular file 0644 0:0 12 bytes".
func nodeText(n *Node) string {
	if n == nil {
		return ""
	}
	s := fmt.Sprintf("%s %s %d:%d", n.Type, model.FormatMode(n.Mode), n.UID, n.GID)
	switch n.Type {
	case ondisk.Regular:
		s += fmt.Sprintf(" %d bytes", n.Size)
	case ondisk.Symlink:
		s += " -> " + n.Target
	}
	return s
}
