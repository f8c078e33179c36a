package audit

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"sort"
)

// PlanWatches returns the watch rules that cover paths (absolute, as the
// kernel sees them: the root already joined), each with key, sorted and
// without duplicates. Every rule is a watch of one node (AUDIT_WATCH, as
// auditctl's -F path= adds it), never of a directory tree (AUDIT_DIR, -F
// dir=, what auditctl's -w makes of a directory), which would audit every
// write below it:
//   - a path that exists, or a missing path whose parent exists: a watch
//     of the node, which the kernel keeps on the parent and the name, so
//     that its creation, every later replacement and every change of its
//     own metadata are seen (research A2: the watch follows the path to
//     the new inode); for a directory, also what is made or removed right
//     in it (the directory is a name of those system calls), nothing
//     deeper;
//   - a missing path whose parent is missing too: a watch of its topmost
//     missing component, under the nearest existing ancestor — the
//     ancestor internal/watch watches — that sees the first directory of
//     the way created.
//
// The kernel refuses a watch whose parent is missing (ENOENT), so the
// rules are planned again when the tree changes (Rules.Sync).
//
// A path that is not absolute is an error, never skipped: the kernel would
// resolve it from whatever directory auditctl or the daemon runs in, and
// a plan without it would leave that path unattributed without a word
// (the root joined is made absolute by every command: cli's absRoot). "/"
// itself gets no rule: a watch lives on the parent of its node, and "/"
// has none.
func PlanWatches(paths []string, key string, lstat func(string) (fs.FileInfo, error)) ([]Rule, error) {
	if lstat == nil {
		lstat = os.Lstat
	}
	seen := map[string]bool{}
	var out []Rule
	add := func(p string) {
		if !seen[p] {
			seen[p] = true
			out = append(out, WatchRule(p, false, key))
		}
	}
	for _, p := range paths {
		if !path.IsAbs(p) {
			return nil, fmt.Errorf("planning audit rules: %q is not an absolute path", p)
		}
		p = path.Clean(p)
		if p == "/" {
			continue
		}
		_, err := lstat(p)
		if err == nil || !errors.Is(err, fs.ErrNotExist) {
			add(p) // there, or not statable (a file in its place?): watch the name
			continue
		}
		// The topmost missing component: walk up while the parent is
		// missing too.
		for {
			parent := path.Dir(p)
			if parent == "/" {
				break
			}
			if _, err := lstat(parent); err == nil || !errors.Is(err, fs.ErrNotExist) {
				break
			}
			p = parent
		}
		add(p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out, nil
}

// Rules keeps the kernel's rules with one key equal to a wanted set.
type Rules struct {
	Conn *Conn
	Key  string
}

// Sync adds the wanted rules the kernel lacks and deletes the rules of
// r.Key it has that are not wanted; it returns what it added (a rule
// removed under us shows here) and removed. A rule the kernel refuses
// does not stop the others: the errors come back joined, each naming its
// rule.
func (r Rules) Sync(want []Rule) (added, removed []Rule, err error) {
	have, err := r.Conn.ListRules()
	if err != nil {
		return nil, nil, fmt.Errorf("listing audit rules: %w", err)
	}
	wanted := map[string]bool{}
	for _, w := range want {
		wanted[w.String()] = true
	}
	present := map[string]bool{}
	var errs []error
	for _, h := range have {
		if !h.HasKey(r.Key) {
			continue
		}
		s := h.String()
		present[s] = true
		if wanted[s] {
			continue
		}
		if err := r.Conn.DelRule(h); err != nil {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, h)
	}
	for _, w := range want {
		if present[w.String()] {
			continue
		}
		if err := r.Conn.AddRule(w); err != nil {
			errs = append(errs, err)
			continue
		}
		added = append(added, w)
	}
	return added, removed, errors.Join(errs...)
}

// Missing returns the wanted rules the kernel does not have.
func (r Rules) Missing(want []Rule) ([]Rule, error) {
	have, err := r.Conn.ListRules()
	if err != nil {
		return nil, fmt.Errorf("listing audit rules: %w", err)
	}
	present := map[string]bool{}
	for _, h := range have {
		if h.HasKey(r.Key) {
			present[h.String()] = true
		}
	}
	var out []Rule
	for _, w := range want {
		if !present[w.String()] {
			out = append(out, w)
		}
	}
	return out, nil
}

// Clear deletes every rule with r.Key (at stop).
func (r Rules) Clear() error {
	_, _, err := r.Sync(nil)
	return err
}
