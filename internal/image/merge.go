package image

import (
	"context"
	"fmt"
	"path"
	"slices"
	"sort"

	"golang.org/x/sys/unix"

	"github.com/drift-monitor/drift-monitor/internal/check"
	"github.com/drift-monitor/drift-monitor/internal/drift"
	"github.com/drift-monitor/drift-monitor/internal/escape"
	"github.com/drift-monitor/drift-monitor/internal/model"
	"github.com/drift-monitor/drift-monitor/internal/ondisk"
	"github.com/drift-monitor/drift-monitor/internal/osstate"
)

// The /etc merge of the next deployment, before it happens: ostree makes
// the new deployment's /etc from its /usr/etc, then takes the booted
// deployment's changes to its own (ostreedev/ostree
// src/libostree/ostree-sysroot-deploy.c, merge_configuration_from, which
// for a staged deployment runs at shutdown, ostree-finalize-staged.service):
//
//   - the changes are ostree_diff_dirs(old /usr/etc, old /etc): what Tree
//     lists. A path the booted /etc has as its image has it is no change:
//     the new deployment gets the new image's default there;
//   - a removed path is removed (rm -rf) from the new /etc, whatever the new
//     image has there;
//   - a modified or added path is copied whole from the old /etc
//     (copy_modified_config_file: content, mode, owner), but for a FIFO, a
//     socket or a device, which is dropped ("Ignoring non-regular/non-symlink
//     file"); a directory is copied with all under it when the new image has
//     none there, and left as the new image has it when it has one; a
//     non-directory where the new image has a directory fails the deploy;
//   - the parent directory of every modified or added path takes the old
//     /etc's mode and owner (ensure_directory_from_template), so a
//     directory whose own mode changed keeps it only when a child changed
//     too.
//
// PredictMerge applies these rules to the paths asked of it; Losses says
// where that undoes what a config declares.

// Prediction is what the next /etc will have at one path.
type Prediction struct {
	// Node is the node there (nil: none); Source is the host path whose
	// node (and content) it will be.
	Node   *Node
	Source string
	// How names the rule that decides it.
	How MergeRule
}

// MergeRule is one of ostree's merge rules, as they apply to one path.
type MergeRule string

const (
	// MergeNewDefault: no local change: the new image's default (or
	// nothing, where the new image has none).
	MergeNewDefault MergeRule = "new-default"
	// MergeKept: a local change: the old /etc's node, whole.
	MergeKept MergeRule = "kept"
	// MergeRemoved: removed locally, so removed in the new /etc.
	MergeRemoved MergeRule = "removed"
	// MergeDirReset: a directory changed locally, no child changed: the new
	// image's directory, its mode and owner.
	MergeDirReset MergeRule = "directory-reset"
	// MergeDirKept: a directory whose child changed: the old /etc's mode
	// and owner.
	MergeDirKept MergeRule = "directory-kept"
	// MergeDropped: a FIFO, a socket or a device: not copied.
	MergeDropped MergeRule = "dropped"
	// MergeFails: a local non-directory where the new image has a
	// directory: the merge fails, and with it the update.
	MergeFails MergeRule = "fails"
)

// Merge describes the next deployment's merge: the booted deployment's
// pristine /etc (Old), its live /etc (Live) and the new deployment's
// pristine /etc (New), host paths inside Root.
type Merge struct {
	Root           *ondisk.Root
	Old, Live, New string
	// Changes are Tree{Old, Live}'s, by path (Live's paths).
	changes map[string]*Change
	// parents are the directories that hold a modified or added path,
	// above all the directories on the way to one.
	parents, above map[string]bool
}

// NewMerge is the merge of the root's booted /etc (its /usr/etc and /etc)
// into a new deployment whose /usr/etc is the host path newEtc.
func NewMerge(ctx context.Context, r *ondisk.Root, newEtc string) (*Merge, error) {
	m := &Merge{Root: r, Old: UsrEtcDir, Live: EtcDir, New: newEtc}
	return m, m.diff(ctx)
}

// StagedMerge finds the merge a staged deployment will make at the next
// shutdown; nil when no deployment is staged (or the staged one has no
// /usr/etc). The booted deployment's /usr/etc and /etc are the root's.
func StagedMerge(ctx context.Context, r *ondisk.Root) (*Merge, string, error) {
	st := osstate.Read(r)
	if !st.Ostree || st.Next == nil || st.NextSource != osstate.StagedFile {
		return nil, "", st.NextErr
	}
	newEtc := path.Join("/ostree/deploy", st.Next.OSName, "deploy", st.Next.Name, "usr/etc")
	if !isDir(r, newEtc) {
		return nil, "", nil
	}
	m, err := NewMerge(ctx, r, newEtc)
	if err != nil {
		return nil, "", err
	}
	return m, st.Next.Name, nil
}

func (m *Merge) diff(ctx context.Context) error {
	cs, err := (&Tree{Root: m.Root, Base: m.Old, Live: m.Live}).Diff(ctx)
	if err != nil {
		return err
	}
	m.changes = make(map[string]*Change, len(cs))
	m.parents, m.above = map[string]bool{}, map[string]bool{}
	for i := range cs {
		c := &cs[i]
		m.changes[c.Path] = c
		if c.Op == Removed || c.Err != "" {
			continue
		}
		m.parents[path.Dir(c.Path)] = true
		for a := path.Dir(c.Path); a != m.Live && a != "/" && a != "."; a = path.Dir(a) {
			m.above[a] = true
		}
	}
	return nil
}

// Predict says what the new /etc will have at host path p (under Live).
func (m *Merge) Predict(p string) Prediction {
	rel, _ := relUnder(p, m.Live)
	newP := path.Join(m.New, rel)
	// A change above p decides for p, the outermost first: a removed
	// directory is removed whole; a changed or added directory the new
	// image has no directory for is copied whole (copy_dir_recurse); a
	// directory made a file where the new image has a directory fails.
	var above []string
	for a := path.Dir(p); a != m.Live && a != "/" && a != "."; a = path.Dir(a) {
		above = append(above, a)
	}
	for i := len(above) - 1; i >= 0; i-- {
		a := above[i]
		c := m.changes[a]
		if c == nil || c.Err != "" {
			continue
		}
		if c.Op == Removed {
			return Prediction{How: MergeRemoved}
		}
		newA := m.node(m.newPath(a))
		switch {
		case c.Live == nil:
		case c.Live.Type != ondisk.Directory && newA != nil && newA.Type == ondisk.Directory:
			return Prediction{How: MergeFails}
		case c.Live.Type != ondisk.Directory:
			return Prediction{How: MergeKept} // a file now: nothing under it
		case newA == nil || newA.Type != ondisk.Directory:
			return m.kept(p)
		}
	}
	newNode := m.node(newP)
	c := m.changes[p]
	switch {
	case c != nil && c.Op == Removed:
		return Prediction{How: MergeRemoved}
	case c != nil && c.Err == "" && c.Live != nil:
		l := c.Live
		switch {
		case newNode != nil && newNode.Type == ondisk.Directory && l.Type != ondisk.Directory:
			return Prediction{How: MergeFails, Node: newNode, Source: newP}
		case l.Type == ondisk.Other:
			return Prediction{How: MergeDropped}
		case l.Type == ondisk.Directory && newNode != nil && newNode.Type == ondisk.Directory:
			if m.parents[p] {
				return Prediction{How: MergeDirKept, Node: withMeta(newNode, l), Source: p}
			}
			return Prediction{How: MergeDirReset, Node: newNode, Source: newP}
		}
		return m.kept(p)
	}
	// No change at p: the new default; but a directory that holds a
	// changed path takes the old /etc's mode and owner (its own, the old
	// image's), and one above a changed path that the new image lacks is
	// made with them (ensure_directory_from_template).
	if l := m.node(p); l != nil && l.Type == ondisk.Directory {
		switch {
		case m.parents[p] && newNode != nil && newNode.Type == ondisk.Directory:
			return Prediction{How: MergeDirKept, Node: withMeta(newNode, l), Source: p}
		case m.parents[p] || m.above[p] && newNode == nil:
			return Prediction{How: MergeDirKept, Node: l, Source: p}
		}
	}
	if newNode == nil {
		return Prediction{How: MergeNewDefault}
	}
	return Prediction{How: MergeNewDefault, Node: newNode, Source: newP}
}

// newPath is the new image's path for host path p under Live.
func (m *Merge) newPath(p string) string {
	rel, _ := relUnder(p, m.Live)
	return path.Join(m.New, rel)
}

func (m *Merge) kept(p string) Prediction {
	l := m.node(p)
	if l != nil && l.Type == ondisk.Other {
		return Prediction{How: MergeDropped}
	}
	return Prediction{How: MergeKept, Node: l, Source: p}
}

// withMeta is dir n with the mode and owner of t.
func withMeta(n, t *Node) *Node {
	c := *n
	c.Mode, c.UID, c.GID = t.Mode, t.UID, t.GID
	return &c
}

// node is what stands at host path p now (nil: nothing).
func (m *Merge) node(p string) *Node {
	dir, name := path.Split(p)
	fd, err := m.Root.OpenDir(path.Clean(dir))
	if err != nil {
		return nil
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if fstatat(fd, name, &st) != nil {
		return nil
	}
	n := nodeOf(&st)
	if n.Type == ondisk.Symlink {
		n.Target, _ = readlinkat(fd, name)
	}
	return &n
}

// Loss is a declared path whose declaration the next merge undoes.
type Loss struct {
	Path string
	How  MergeRule
	// Message says what the merge will do and what to do about it.
	Message string
}

// Drift is the loss as a merge-loss notice, naming the staged deployment.
func (l *Loss) Drift(staged string) drift.Drift {
	return drift.Drift{Kind: drift.MergeLoss, Entry: model.KindFile, Path: l.Path, EntryID: "merge-loss:" + l.Path,
		Attribute: string(l.How), Message: l.Message + " (staged deployment " + escape.Name(staged) + ")"}
}

// Losses predicts, for each declared node under /etc, whether the next
// merge undoes what is declared of it:
//
//   - it is as the booted image has it, and the new image's default differs
//     in what is declared (or the new image has none): the merge installs
//     the new default (machine-config-operator's OCPBUGS-105508);
//   - only its mode or owner differ from the booted image's (the content is
//     the image's, and not declared), and the new image changes the
//     content: the merge keeps the old file whole, and the new content is
//     lost;
//   - a directory whose declared mode or owner differs from the image's,
//     with no changed child: the merge resets it to the new image's;
//   - the merge fails (a declared file where the new image has a directory).
func (m *Merge) Losses(ctx context.Context, entries []model.Entry) []Loss {
	var out []Loss
	for i := range entries {
		e := &entries[i]
		// A node declared at its path (its row of model.Kinds), not an
		// unmask (nothing there) or a hard link (its target's).
		if e.Kind.Means().Source != model.FromNode || e.Type == model.TypeNotMasked || e.Type == model.TypeHardLink {
			continue
		}
		if _, ok := relUnder(e.Path, m.Live); !ok || e.Path == m.Live {
			continue
		}
		if l := m.loss(ctx, e); l != nil {
			out = append(out, *l)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

func (m *Merge) loss(ctx context.Context, e *model.Entry) *Loss {
	live := m.node(e.Path)
	if live == nil {
		return nil // missing now: its own drift says so
	}
	pr := m.Predict(e.Path)
	q := fmt.Sprintf("%q", e.Path)
	switch pr.How {
	case MergeFails:
		return &Loss{e.Path, pr.How, fmt.Sprintf("the next boot's /etc merge will fail at %s: the new image has a directory there", q)}
	case MergeRemoved, MergeDropped:
		return nil
	case MergeNewDefault:
		if pr.Node == nil {
			return &Loss{e.Path, pr.How, fmt.Sprintf("the next boot's /etc merge will remove %s: it is the booted image's default, which the new image no longer has; declare content that differs, or a drop-in", q)}
		}
		what := m.declaredDiff(ctx, e, live, pr, e.Path)
		if what == 0 {
			return nil
		}
		return &Loss{e.Path, pr.How, fmt.Sprintf("the next boot's /etc merge will replace %s with the new image's default (%s differ%s): it is the booted image's default, so ostree takes it for no local change; declare content that differs from the image's, or use a drop-in", q, what, verbS(what))}
	case MergeKept:
		// Only the mode or owner changed: the content is the old
		// image's, and the new image's content is lost.
		c := m.changes[e.Path]
		if c == nil || c.Op != Modified || c.What&^(WMode|WOwner|WGroup) != 0 || e.Content != nil || live.Type != ondisk.Regular {
			return nil
		}
		rel, _ := relUnder(e.Path, m.Live)
		newP, oldP := path.Join(m.New, rel), path.Join(m.Old, rel)
		oldN, newN := m.node(oldP), m.node(newP)
		if oldN == nil || newN == nil {
			return nil
		}
		if newN.Type == oldN.Type && newN.Target == oldN.Target {
			if newN.Type != ondisk.Regular {
				return nil
			}
			if same, err := sameFiles(ctx, m.Root, oldP, newP); err != nil || same {
				return nil
			}
		}
		return &Loss{e.Path, pr.How, fmt.Sprintf("the next boot's /etc merge will keep the old %s whole: only its mode or owner is declared, and ostree copies a changed file whole, so the new image's content is lost", q)}
	case MergeDirReset:
		if what := m.declaredDiff(ctx, e, live, pr, e.Path); what != 0 {
			return &Loss{e.Path, pr.How, fmt.Sprintf("the next boot's /etc merge will reset the directory %s to the new image's %s: ostree keeps a directory's mode and owner only when a path in it changed too", q, what)}
		}
	}
	return nil
}

// declaredDiff is what of the declared attributes the predicted node
// changes from the live one.
func (m *Merge) declaredDiff(ctx context.Context, e *model.Entry, live *Node, pr Prediction, p string) What {
	n := pr.Node
	var w What
	if n.Type != live.Type {
		return WType
	}
	if e.Mode != nil && n.Mode != live.Mode {
		w |= WMode
	}
	if (e.UID != nil || e.OwnerProblem != "") && n.UID != live.UID {
		w |= WOwner
	}
	if (e.GID != nil || e.GroupProblem != "") && n.GID != live.GID {
		w |= WGroup
	}
	if e.Type == model.TypeSymlink && n.Target != live.Target {
		w |= WTarget
	}
	if e.Content != nil && n.Type == ondisk.Regular {
		if same, err := sameFiles(ctx, m.Root, pr.Source, p); err != nil || !same {
			w |= WContent
		}
	}
	return w
}

// sameFiles compares the contents of two regular files inside r.
func sameFiles(ctx context.Context, r *ondisk.Root, a, b string) (bool, error) {
	ad, an := path.Split(a)
	bd, bn := path.Split(b)
	afd, err := r.OpenDir(path.Clean(ad))
	if err != nil {
		return false, err
	}
	defer unix.Close(afd)
	bfd, err := r.OpenDir(path.Clean(bd))
	if err != nil {
		return false, err
	}
	defer unix.Close(bfd)
	var ast, bst unix.Stat_t
	if err := fstatat(afd, an, &ast); err != nil {
		return false, err
	}
	if err := fstatat(bfd, bn, &bst); err != nil {
		return false, err
	}
	if ast.Size != bst.Size {
		return false, nil
	}
	w := &walker{ctx: ctx}
	return w.sameContentAt(afd, an, bfd, bn, ast.Size)
}

// explainReplaced is the explanation a declared file's content drift
// gets after an OS update whose merge replaced it (Explain).
const explainReplaced = "the OS update's /etc merge replaced it with the new image's default: the declared content was the previous image's default, which ostree takes for no local change"

// explainRemoved is explainReplaced for a new image that has no such file.
const explainRemoved = "the OS update's /etc merge removed it: the declared content was the previous image's default, which ostree takes for no local change, and the new image has none"

// Explain says why a declared file differs after an OS update, when the
// update's merge did it: the file is the booted image's default (or, like
// the booted image, has none), and a previous deployment's default is what
// the config declares. equal
// compares a file inside the root with the declared content. "" when that
// is not what happened.
func Explain(r *ondisk.Root, p string, equal func(hostPath string) bool) string {
	rel, ok := relUnder(p, EtcDir)
	if !ok || rel == "" {
		return ""
	}
	m := &Merge{Root: r}
	why := explainReplaced
	switch live, img := m.node(p), m.node(path.Join(UsrEtcDir, rel)); {
	case live == nil && img == nil:
		why = explainRemoved
	case live == nil || img == nil:
		return ""
	case !(&Tree{Root: r, Base: UsrEtcDir, Live: EtcDir}).sameNode(context.Background(), rel):
		return ""
	}
	for _, dep := range osstate.OtherDeployments(r) {
		if equal(path.Join(dep, "usr/etc", rel)) {
			return why
		}
	}
	return ""
}

// mergeKinds are what ostree's merge can change of a declared file.
var mergeKinds = []drift.Kind{drift.Content, drift.Type, drift.Missing, drift.Mode, drift.Owner, drift.Group}

// ExplainDrift is Explain for a declared file's drift, comparing a
// previous deployment's twin with the whole declaration (its content, mode
// and owner) through the checker: "" for any other drift.
func ExplainDrift(c *check.Checker, o *ondisk.Observer, e *model.Entry, d *drift.Drift) string {
	if !slices.Contains(mergeKinds, d.Kind) || e.Kind != model.KindFile || e.Content == nil {
		return ""
	}
	equal := func(twin string) bool {
		te := *e
		te.Path = twin
		out := c.Outcome(o, &te, nil)
		if out.Unknown || out.Deferred {
			return false
		}
		for _, dr := range out.Drift {
			if slices.Contains(mergeKinds, dr.Kind) {
				return false
			}
		}
		return true
	}
	return Explain(c.Root, d.Path, equal)
}
