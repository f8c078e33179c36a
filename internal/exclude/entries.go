package exclude

import (
	"github.com/drift-monitor/drift-monitor/internal/drift"
	"github.com/drift-monitor/drift-monitor/internal/model"
)

// This file is the one place where the rulebook meets the desired-state
// model: which files hold an entry's values, and the rulebook's answers for
// entries and drift as the consumers hold them.

// valueFiles are the files that hold an entry's declared values: the paths
// its drift is reported at (drift.Drift.Path), which its kind's row of
// model.Kinds names (a user's or group's account files); for every other
// entry its own path.
func valueFiles(e *model.Entry) []string {
	if fs := e.Kind.Means().ValueFiles; fs != nil {
		return fs
	}
	return []string{e.Path}
}

// LeavesEntryOf reports whether e is left alone entirely: every file that
// holds one of its values is (LeavesEntry).
func (r *Rules) LeavesEntryOf(e *model.Entry) bool { return r.LeavesEntry(valueFiles(e)...) }

// Split divides entries into those that are checked and those left alone
// entirely, each in entries' order. Without a pattern, kept is entries
// itself.
func (r *Rules) Split(entries []model.Entry) (kept, left []model.Entry) {
	if r.Empty() {
		return entries, nil
	}
	kept = make([]model.Entry, 0, len(entries))
	for i := range entries {
		if r.LeavesEntryOf(&entries[i]) {
			left = append(left, entries[i])
		} else {
			kept = append(kept, entries[i])
		}
	}
	return kept, left
}

// DriftFilter is the check's filter (check.Checker.Exclude): true of the
// drift and notices left unreported (Unreported, at the path each is
// reported at). Nil when nothing is excluded.
func (r *Rules) DriftFilter() func(*drift.Drift) bool {
	if r.Empty() {
		return nil
	}
	return func(d *drift.Drift) bool { return r.Unreported(string(d.Kind), d.Path) }
}

// LeftPaths counts the distinct paths of entries left alone (Split's left):
// what the daemon's status line says is excluded.
func LeftPaths(left []model.Entry) int {
	paths := map[string]bool{}
	for i := range left {
		paths[left[i].Path] = true
	}
	return len(paths)
}

// Left is an entry left alone entirely, as check and reconcile list it.
type Left struct {
	Entry model.Kind `json:"entry"`
	Path  string     `json:"path"`
	Unit  string     `json:"unit,omitempty"`
	User  string     `json:"user,omitempty"`
	Group string     `json:"group,omitempty"`
	// ExcludedBy is the pattern that leaves its path alone, and where it
	// was read: "/etc/pki (/etc/drift-monitor/exclude.conf:3)".
	ExcludedBy string `json:"excluded_by"`
	noun       string
}

// String is the entry as drift messages name it, and the pattern:
// `file "/etc/pki/x": excluded by /etc/pki (/etc/drift-monitor/exclude.conf:3)`.
func (l *Left) String() string { return l.noun + ": excluded by " + l.ExcludedBy }

// Report lists entries left alone (Split's left) with the pattern that
// leaves each alone.
func (r *Rules) Report(left []model.Entry) []Left {
	out := make([]Left, 0, len(left))
	for i := range left {
		e := &left[i]
		l := Left{Entry: e.Kind, Path: e.Path, Unit: e.Unit, User: e.User, noun: drift.Noun(e)}
		if e.Kind == model.KindGroup && e.Account != nil {
			l.Group = e.Account.Name
		}
		if p, ok := r.Leaves(e.Path); ok {
			l.ExcludedBy = p.Describe()
		}
		out = append(out, l)
	}
	return out
}
