package daemon

import (
	"path"
	"sort"
	"strings"

	"github.com/drift-monitor/drift-monitor/internal/accountdb"
	"github.com/drift-monitor/drift-monitor/internal/model"
)

// index answers, for a path an event named, which entries it can affect —
// in O(log n + affected), so an event costs the same at 100 or 100,000
// declared paths.
type index struct {
	entries []model.Entry // sorted by Path
	// targets maps a hard link's target to the hard-link entries on it,
	// and every account file and lock (accountdb.Files, accountdb.Locks)
	// to the user and group entries, whichever file they are listed under.
	targets map[string][]int
	// enablement entries, re-checked when systemd says unit files changed.
	enablement []int
	dirs       []string     // directories holding declared paths (to watch)
	kinds      []model.Kind // the kinds of entry declared, each once
	paths      int          // distinct declared paths on disk
	units      int          // distinct units declared
}

func newIndex(entries []model.Entry) *index {
	ix := &index{entries: entries, targets: map[string][]int{}}
	sort.SliceStable(ix.entries, func(i, j int) bool { return ix.entries[i].Path < ix.entries[j].Path })
	dirs := map[string]bool{}
	paths := map[string]bool{}
	units := map[string]bool{}
	kinds := map[model.Kind]bool{}
	for i := range ix.entries {
		e := &ix.entries[i]
		if e.Unit != "" {
			units[e.Unit] = true
		}
		if !kinds[e.Kind] {
			kinds[e.Kind] = true
			ix.kinds = append(ix.kinds, e.Kind)
		}
		// What an entry's row says changes it (model.Kinds): the rest
		// is left to full checks (what changes across boots, notices).
		switch e.Kind.Means().Events {
		case model.FullChecksOnly:
			continue
		case model.TreeEvents:
			// Watched whole by a watcher of its own (image.go), never
			// by the index of declared paths.
			continue
		case model.UnitFileEvents:
			ix.enablement = append(ix.enablement, i)
			continue
		case model.NodeAndTargetEvents:
			ix.targets[e.Target] = append(ix.targets[e.Target], i)
			dirs[path.Dir(e.Target)] = true
		case model.AccountEvents:
			// An account is judged by all the account files, which
			// shadow-utils replaces by rename (and vipw by rename of its
			// copy), and re-checked when its writer lets the locks go
			// (check.Checker.WaitForAccountLocks).
			for _, f := range append(accountdb.Files[:], accountdb.Locks[:]...) {
				if f != e.Path {
					ix.targets[f] = append(ix.targets[f], i)
					dirs[path.Dir(f)] = true
				}
			}
		}
		paths[e.Path] = true
		dirs[path.Dir(e.Path)] = true
	}
	for d := range dirs {
		ix.dirs = append(ix.dirs, d)
	}
	sort.Strings(ix.dirs)
	ix.paths, ix.units = len(paths), len(units)
	return ix
}

// affected calls fn for each entry whose path is p or lies under p, and each
// hard link whose target is p (or, when p is a directory, lies under p).
func (ix *index) affected(p string, dir bool, fn func(i int)) {
	lo := sort.Search(len(ix.entries), func(i int) bool { return ix.entries[i].Path >= p })
	for i := lo; i < len(ix.entries); i++ {
		ep := ix.entries[i].Path
		if ep == p {
			fn(i)
			continue
		}
		// Paths under p sort right after p+"/"; "/" (0x2f) precedes every
		// other byte that could follow p except those < 0x2f, which we skip.
		if !strings.HasPrefix(ep, p) {
			break
		}
		if p == "/" || ep[len(p)] == '/' {
			fn(i)
		}
	}
	for _, i := range ix.targets[p] {
		fn(i)
	}
	if dir && len(ix.targets) > 0 {
		// A directory holding targets vanished or appeared: rare, linear.
		for t, is := range ix.targets {
			if p == "/" || strings.HasPrefix(t, p+"/") {
				for _, i := range is {
					fn(i)
				}
			}
		}
	}
}
