package check

import (
	"github.com/drift-monitor/drift-monitor/internal/desired"
	"github.com/drift-monitor/drift-monitor/internal/drift"
	"github.com/drift-monitor/drift-monitor/internal/ondisk"
	"github.com/drift-monitor/drift-monitor/internal/selinux"
)

// Labels is what the label kind compares with: the root's policy file
// contexts and, for each declared file, the hard links declared to it
// (their paths' defaults are the inode's too).
type Labels struct {
	contexts *selinux.Contexts
	linksTo  map[string][]string
	// Full compares whole contexts; else type and MLS range.
	Full bool
	// Err: the root has a policy configured whose file contexts cannot be
	// read; labels are not checked, and a notice says so.
	Err error
}

// LoadLabels reads the root's policy (selinux.ForRoot) for the entries: nil
// when the root has none to want.
func LoadLabels(r *ondisk.Root, entries []desired.Entry, full bool) *Labels {
	c, err := selinux.ForRoot(r.ReadFile)
	if c == nil && err == nil {
		return nil
	}
	l := &Labels{contexts: c, Err: err, Full: full, linksTo: map[string][]string{}}
	for i := range entries {
		if e := &entries[i]; e.Type == desired.TypeHardLink {
			l.linksTo[e.Target] = append(l.linksTo[e.Target], e.Path)
		}
	}
	return l
}

var labelTypes = map[ondisk.FileType]selinux.FileType{ondisk.Regular: selinux.Regular, ondisk.Directory: selinux.Directory,
	ondisk.Symlink: selinux.Symlink}

// compare adds the entry's label drift (or notice) to out.
func (l *Labels) compare(e *desired.Entry, ob *ondisk.Observation, out *Outcome) {
	if l == nil || l.contexts == nil {
		return
	}
	t, ok := labelTypes[ob.Type]
	if !ok {
		return
	}
	var want []string
	for _, p := range append([]string{e.Path}, l.linksTo[e.Path]...) {
		if c, ok := l.contexts.Lookup(p, t); ok {
			want = append(want, c)
		}
	}
	d, n := drift.CompareLabel(e, ob, want, l.Full)
	out.Drift = append(out.Drift, d...)
	out.Notices = append(out.Notices, n...)
}

// notice is the notice that labels are not checked, on the first entry
// with a node (nil when they are, or there is none).
func (l *Labels) notice(entries []desired.Entry) *drift.Drift {
	if l == nil || l.Err == nil {
		return nil
	}
	for i := range entries {
		if e := &entries[i]; e.Type <= desired.TypeSymlink && e.Kind != desired.KindConfig {
			return &drift.Drift{Kind: drift.Unverifiable, Entry: e.Kind, Path: e.Path, Unit: e.Unit, User: e.User, EntryID: e.ID() + "|labels",
				Message: "SELinux labels are not checked on any declared node: " + l.Err.Error()}
		}
	}
	return nil
}
