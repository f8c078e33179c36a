package check

import (
	"errors"
	"io/fs"
	"slices"
	"syscall"

	"github.com/drift-monitor/drift-monitor/internal/drift"
	"github.com/drift-monitor/drift-monitor/internal/model"
	"github.com/drift-monitor/drift-monitor/internal/ondisk"
	"github.com/drift-monitor/drift-monitor/internal/selinux"
)

// Labels is what the label kind compares with: the root's policy file
// contexts and, for each declared file, the hard links declared to it
// (their paths' defaults are the inode's too).
type Labels struct {
	contexts *selinux.Contexts
	memo     *selinux.Memo // nil: every lookup asks contexts
	linksTo  map[string][]string
	// homes are relabelled with what is in them (ondisk.RelabelledHomes).
	homes []ondisk.RelabelledHome
	// entries and slots: each entry's own default, by its position
	// (labelslots.go).
	entries []model.Entry
	slots   *selinux.Slots
	// kept: a check's answers kept between runs (labelkeep.go); it then
	// answers every lookup, and contexts may be nil.
	kept *keptAnswers
	// Full compares whole contexts; else type and MLS range.
	Full bool
	// Err: the root has a policy configured whose file contexts cannot be
	// read; labels are not checked, and a notice says so.
	Err error
}

// LoadLabels reads the root's policy (selinux.ForRoot) for the entries: nil
// when the root has none to want.
func LoadLabels(r *ondisk.Root, entries []model.Entry, full bool) *Labels {
	c, err := selinux.ForRoot(r.ReadFile)
	return withHomes(newLabels(c, nil, err, entries, full), r, entries)
}

// withHomes gives l the homes Ignition relabels.
func withHomes(l *Labels, r *ondisk.Root, entries []model.Entry) *Labels {
	if l.checks() {
		l.homes = r.RelabelledHomes(entries)
	}
	return l
}

func newLabels(c *selinux.Contexts, memo *selinux.Memo, err error, entries []model.Entry, full bool) *Labels {
	if c == nil && err == nil {
		return nil
	}
	return labelsOf(c, memo, err, entries, full)
}

// labelsOf is newLabels, even without a policy.
func labelsOf(c *selinux.Contexts, memo *selinux.Memo, err error, entries []model.Entry, full bool) *Labels {
	l := labelsWithout(c, err, entries, full)
	l.memo, l.slots = memo, slotsFor(memo, entries)
	return l
}

// labelsWithout is labelsOf without slots: kept answers (keptAnswers.own)
// hold the entries' defaults.
func labelsWithout(c *selinux.Contexts, err error, entries []model.Entry, full bool) *Labels {
	l := &Labels{contexts: c, Err: err, Full: full, linksTo: map[string][]string{}, entries: entries}
	for i := range entries {
		if e := &entries[i]; e.Type == model.TypeHardLink {
			l.linksTo[e.Target] = append(l.linksTo[e.Target], e.Path)
		}
	}
	return l
}

var labelTypes = map[ondisk.FileType]selinux.FileType{ondisk.Regular: selinux.Regular, ondisk.Directory: selinux.Directory,
	ondisk.Symlink: selinux.Symlink}

// compare adds the entry's label drift (or notice) to out.
func (l *Labels) compare(r *ondisk.Root, e *model.Entry, ob *ondisk.Observation, out *Outcome) {
	if !l.checks() {
		return
	}
	t, ok := labelTypes[ob.Type]
	if !ok {
		return
	}
	if _, labelled := ob.Meta.Get(ondisk.XattrSELinux); !labelled && e.Kind == model.KindLink && ob.Type == ondisk.Symlink {
		// Ignition relabels only what its os.Stat finds, and that
		// follows a link (v2.27.0 internal/exec/stages/files/files.go,
		// relabelFiles): a link whose target it could not reach from the
		// initramfs (an absolute one, read against the initramfs's own
		// root) is left without a label.
		return
	}
	lookup := entryLookup{l, e}.lookup
	// Room for the path's and one link's, without an allocation per node.
	var room [2]string
	want := room[:0]
	if c, ok := lookup(r.LabelPath(e, ob), t); ok {
		want = append(want, c)
	}
	if at, ok := ondisk.AsPartOfHome(ob.Resolved, l.homes); ok && e.Kind != model.KindSSHKeys {
		if c, ok := lookup(at, t); ok {
			want = append(want, c)
		}
	}
	for _, p := range l.linksTo[e.Path] {
		if c, ok := lookup(p, t); ok {
			want = append(want, c)
		}
	}
	d, n := drift.CompareLabel(e, ob, want, l.Full)
	out.Drift = append(out.Drift, d...)
	out.Notices = append(out.Notices, n...)
}

// notice is the notice that labels are not checked, on the first entry
// with a node (nil when they are, or there is none).
func (l *Labels) notice(entries []model.Entry) *drift.Drift {
	if l == nil {
		return nil
	}
	err := l.Err
	if err == nil && l.kept != nil {
		err = l.kept.err // the policy could not be read again when a lookup needed it
	}
	if err == nil {
		return nil
	}
	for i := range entries {
		if e := &entries[i]; e.Type <= model.TypeSymlink && e.Kind.Means().Source == model.FromNode {
			return &drift.Drift{Kind: drift.Unverifiable, Entry: e.Kind, Path: e.Path, Unit: e.Unit, User: e.User, EntryID: e.ID() + "|labels",
				Message: "SELinux labels are not checked on any declared node: " + err.Error()}
		}
	}
	return nil
}

// LabelPolicy keeps a root's loaded policy, and the defaults already looked
// up in it, from one load of the desired state to the next (a daemon's
// reloads and passes): it reads the policy again only when the identity
// (device, inode, size, modification and change times) of the root's
// /etc/selinux/config or of one of the policy's file-context files
// (selinux.Files) is not what it was at the last read, a file appearing or
// going included. The zero value is ready; not safe for concurrent Loads.
type LabelPolicy struct {
	ids      []fileID
	contexts *selinux.Contexts
	memo     *selinux.Memo
	err      error
	// Reads counts the policy's reads, for tests.
	Reads int
}

// fileID is what tells a file's versions apart; the zero value is a
// missing file, and err one that could not be looked at.
type fileID struct {
	dev, ino, size                 uint64
	mtime, mtimeNs, ctime, ctimeNs int64
	err                            string
}

// Load is LoadLabels, reading the policy only when it changed.
func (p *LabelPolicy) Load(r *ondisk.Root, entries []model.Entry, full bool) *Labels {
	ids := policyIDs(r)
	if p.ids == nil || !slices.Equal(ids, p.ids) {
		p.Reads++
		p.contexts, p.err = selinux.ForRoot(r.ReadFile)
		p.memo = nil
		if p.contexts != nil {
			p.memo = selinux.NewMemo(p.contexts)
		}
		// The identities were taken before the read: a change in between
		// is seen at the next Load.
		p.ids = ids
		if p.err != nil {
			p.ids = nil // an error is retried, never remembered
		}
	}
	return withHomes(newLabels(p.contexts, p.memo, p.err, entries, full), r, entries)
}

// policyIDs are the identities of the root's config and of the files of
// the policy it names (only the config's when it names none).
func policyIDs(r *ondisk.Root) []fileID {
	ids := []fileID{fileIdentity(r, selinux.ConfigPath)}
	if fc, _, err := selinux.PolicyOf(r.ReadFile); err == nil && fc != "" {
		for _, f := range selinux.Files(fc) {
			ids = append(ids, fileIdentity(r, f))
		}
	}
	return ids
}

func fileIdentity(r *ondisk.Root, p string) fileID {
	f, err := r.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return fileID{}
	}
	if err != nil {
		return fileID{err: err.Error()}
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fileID{err: err.Error()}
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileID{err: "no stat"}
	}
	return fileID{dev: st.Dev, ino: st.Ino, size: uint64(st.Size), mtime: st.Mtim.Sec, mtimeNs: st.Mtim.Nsec,
		ctime: st.Ctim.Sec, ctimeNs: st.Ctim.Nsec}
}
