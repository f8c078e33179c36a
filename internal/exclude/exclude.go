// Package exclude is drift-monitor's one rulebook of what it leaves alone:
// the admin's exclusion patterns (/etc/drift-monitor/exclude.conf,
// --exclude, --exclude-from) and the questions every consumer — the daemon,
// check, reconcile, audit-rules, status, the metrics — asks of them:
//
//   - is this entry left alone entirely (LeavesEntry)? Then it is neither
//     watched, checked, reported, repaired nor audited;
//   - is this drift unreported (Unreported)?
//   - may a repair write this path (Forbids)?
//
// The rule. A pattern is an absolute path.Match pattern; it matches a path
// when it matches the path itself or a directory above it. What is left
// alone is decided by the file that holds a value: the drift's path as
// reported (DRIFT_PATH, the JSON's "path"), never the path its entry is
// filed under. A user's password hash is held in /etc/shadow, its shell,
// uid and home in /etc/passwd, its supplementary groups in /etc/group:
// /etc/shadow leaves the hash alone and nothing else of the user;
// /etc/passwd leaves alone what /etc/passwd holds, and the hash is still
// checked. An entry is left alone entirely when every file that holds one
// of its values is: for every kind but users and groups, its own path.
// KIND:PATTERN (label:/etc/kubernetes/*) leaves only that kind of drift
// unreported at the matching paths, which stay watched and checked.
//
// It promises that every pattern it accepts is absolute and well formed —
// a refusal names the file and line, or the flag, and what is wrong —, that
// the exclusion file is read inside the root (ondisk.Root: no symbolic link
// leads out of it), that a missing default file is empty and that any other
// file that cannot be read is an error, never an empty rulebook. It does
// not decide what a consumer does when the file is refused: the daemon
// keeps the last good rules and says so, a command fails.
//
// The rulebook itself knows paths and kinds of drift as strings; what each
// kind of entry holds where is entries.go's, the one place that knows the
// desired-state model.
package exclude

import (
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/drift-monitor/drift-monitor/internal/drift"
)

// Pattern is one exclusion.
type Pattern struct {
	// Kind is the kind of drift a KIND:PATTERN leaves unreported ("" for
	// a pattern that leaves the whole path alone).
	Kind string
	// Glob is the absolute, cleaned path.Match pattern.
	Glob string
	// From says where the pattern was read: "--exclude", or FILE:LINE.
	From string
}

// String is the pattern as it is written: GLOB or KIND:GLOB.
func (p Pattern) String() string {
	if p.Kind != "" {
		return p.Kind + ":" + p.Glob
	}
	return p.Glob
}

// Describe is the pattern and where it came from, for messages:
// "/etc/pki (/etc/drift-monitor/exclude.conf:3)".
func (p Pattern) Describe() string {
	if p.From == "" {
		return p.String()
	}
	return p.String() + " (" + p.From + ")"
}

// ParsePattern parses one pattern, read from from: an absolute path.Match
// pattern, or KIND:PATTERN with KIND a kind of drift (drift.Kinds).
func ParsePattern(s, from string) (Pattern, error) {
	p := Pattern{Glob: s, From: from}
	if kind, rest, ok := strings.Cut(s, ":"); ok && !strings.HasPrefix(s, "/") {
		if _, known := drift.ParseKind(kind); !known {
			return Pattern{}, fmt.Errorf("pattern %q: %q is not a kind of drift (drift-monitor(8), WHAT IS COMPARED, lists them)", s, kind)
		}
		p.Kind, p.Glob = kind, rest
	}
	if !strings.HasPrefix(p.Glob, "/") {
		return Pattern{}, fmt.Errorf("pattern %q is not an absolute path", s)
	}
	// Cleaned before it is validated: "/a/[b/../c]" cleans to another
	// pattern, and the one matched is the one that must be well formed.
	p.Glob = path.Clean(p.Glob)
	if _, err := path.Match(p.Glob, "/"); err != nil {
		return Pattern{}, fmt.Errorf("pattern %q: %w", s, err)
	}
	if p.Kind == "" && matchesEverything(p.Glob) {
		// Every declared path lies below "/": nothing would be checked,
		// and a host checked against nothing is not clean.
		return Pattern{}, fmt.Errorf("pattern %q matches every path: nothing would be checked", s)
	}
	return p, nil
}

// matchesEverything reports whether glob matches "/" or any name directly
// under it (a name no host has stands for them all), and so every path.
func matchesEverything(glob string) bool {
	for _, p := range []string{"/", "/\x00drift-monitor-any-name"} {
		if ok, _ := path.Match(glob, p); ok {
			return true
		}
	}
	return false
}

// Rules is a rulebook: patterns, and the answers they give. The nil *Rules
// leaves nothing alone.
type Rules struct {
	all []Pattern
	// Whole-path patterns: those without a metacharacter by path, a map
	// lookup per directory of a path; the others by globKey, so that a
	// path is matched only against the globs that could match it.
	literal map[string]Pattern
	globs   map[globKey][]Pattern
	kinds   []Pattern // KIND:PATTERN
}

// globKey is what a path must have for a glob to match it: "*" and "?"
// never match a "/", so such a glob matches only paths of as many
// components (n) that start with its leading components that hold no
// metacharacter (dir). A character class or an escape may match a "/"
// ("/etc/a[/]b" matches "/etc/a/b"): such a glob is under anyGlob, tried
// for every path.
type globKey struct {
	dir string
	n   int
}

var anyGlob = globKey{n: -1}

// wild reports whether s holds one of path.Match's metacharacters.
func wild(s string) bool { return strings.ContainsAny(s, `*?[\`) }

// components counts the components of an absolute, clean path ("/": 0).
func components(p string) int {
	if p == "/" {
		return 0
	}
	return strings.Count(p, "/")
}

func keyOf(glob string) globKey {
	if strings.ContainsAny(glob, `[\`) {
		return anyGlob
	}
	k := globKey{dir: "/", n: components(glob)}
	for _, c := range strings.Split(glob[1:], "/") {
		if wild(c) {
			break
		}
		k.dir = path.Join(k.dir, c)
	}
	return k
}

// New makes a rulebook of patterns. Where several leave a path alone, the
// one Leaves names is one of them (a literal path before a glob).
func New(patterns ...Pattern) *Rules {
	r := &Rules{all: slices.Clone(patterns), literal: map[string]Pattern{}, globs: map[globKey][]Pattern{}}
	for _, p := range patterns {
		switch {
		case p.Kind != "":
			r.kinds = append(r.kinds, p)
		case !wild(p.Glob):
			if _, dup := r.literal[p.Glob]; !dup {
				r.literal[p.Glob] = p
			}
		default:
			k := keyOf(p.Glob)
			r.globs[k] = append(r.globs[k], p)
		}
	}
	return r
}

// Patterns are the rulebook's patterns, in order.
func (r *Rules) Patterns() []Pattern {
	if r == nil {
		return nil
	}
	return slices.Clone(r.all)
}

// Empty reports whether the rulebook leaves nothing alone.
func (r *Rules) Empty() bool { return r == nil || len(r.all) == 0 }

// Leaves reports whether a whole-path pattern matches host path p (p or a
// directory above it), and which: nothing at p is checked, reported or
// written.
func (r *Rules) Leaves(p string) (Pattern, bool) {
	if r.Empty() || !strings.HasPrefix(p, "/") {
		// path.Dir of a relative path ends at ".", never at "/": nothing
		// matches it.
		return Pattern{}, false
	}
	for q := p; ; q = path.Dir(q) {
		if m, ok := r.literal[q]; ok {
			return m, true
		}
		if m, ok := r.glob(q); ok {
			return m, true
		}
		if q == "/" {
			return Pattern{}, false
		}
	}
}

// glob is the whole-path glob that matches q itself, if one does.
func (r *Rules) glob(q string) (Pattern, bool) {
	if len(r.globs) == 0 {
		return Pattern{}, false
	}
	for _, g := range r.globs[anyGlob] {
		if ok, _ := path.Match(g.Glob, q); ok {
			return g, true
		}
	}
	n := components(q)
	for dir := q; ; dir = path.Dir(dir) {
		for _, g := range r.globs[globKey{dir: dir, n: n}] {
			if ok, _ := path.Match(g.Glob, q); ok {
				return g, true
			}
		}
		if dir == "/" {
			return Pattern{}, false
		}
	}
}

// LeavesEntry reports whether an entry whose values are held in files (its
// drift is reported at those paths) is left alone entirely: every one of
// them is. Such an entry is neither watched, checked, reported, repaired
// nor audited.
func (r *Rules) LeavesEntry(files ...string) bool {
	if r.Empty() || len(files) == 0 {
		return false
	}
	for _, f := range files {
		if _, ok := r.Leaves(f); !ok {
			return false
		}
	}
	return true
}

// Unreported reports whether a drift of kind (a drift.Kind) at host path p,
// the path that drift is reported at, is left unreported: p is left alone,
// or a KIND:PATTERN of that kind matches p.
func (r *Rules) Unreported(kind, p string) bool {
	if _, ok := r.Leaves(p); ok {
		return true
	}
	if r.Empty() || !strings.HasPrefix(p, "/") {
		return false
	}
	for _, k := range r.kinds {
		if k.Kind == kind && matchUp(k.Glob, p) {
			return true
		}
	}
	return false
}

// Forbids reports whether a repair may not write host path p (nor below
// it): p is left alone. A KIND:PATTERN forbids nothing: the other kinds of
// drift there are reported, and repaired.
func (r *Rules) Forbids(p string) bool {
	_, ok := r.Leaves(p)
	return ok
}

// matchUp reports whether glob matches absolute path p or a directory above
// it.
func matchUp(glob, p string) bool {
	for q := p; ; q = path.Dir(q) {
		if ok, _ := path.Match(glob, q); ok {
			return true
		}
		if q == "/" {
			return false
		}
	}
}
