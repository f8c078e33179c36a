package daemon

import (
	"fmt"
	"sort"
	"strings"

	"github.com/drift-monitor/drift-monitor/internal/check"
	"github.com/drift-monitor/drift-monitor/internal/drift"
)

// tracker holds the drift currently known, per entry, so that a drift is
// reported once when it appears and once when it is resolved — never once
// per event.
type tracker struct {
	byEntry map[string][]drift.Drift
	// sorted caches all() until the next change: the status line and the
	// bus read it after every event, and most events change nothing.
	sorted []drift.Drift
	fresh  bool
}

func newTracker() *tracker { return &tracker{byEntry: map[string][]drift.Drift{}} }

// update replaces what is known of one entry and returns what changed.
// A drift that persists with other details (the content changed again) is
// not reported again: its key is the same.
func (t *tracker) update(entryID string, now []drift.Drift) (appeared, resolved []drift.Drift) {
	old := t.byEntry[entryID]
	if len(old) == 0 && len(now) == 0 {
		return nil, nil
	}
	t.fresh = false
	appeared, resolved = diffKeys(old, now)
	if len(now) == 0 {
		delete(t.byEntry, entryID)
	} else {
		t.byEntry[entryID] = now
	}
	return appeared, resolved
}

// replace sets everything known from a full check: entries that are absent
// from now (clean, or no longer declared) lose their drift.
func (t *tracker) replace(now map[string][]drift.Drift) (appeared, resolved []drift.Drift) {
	for id, old := range t.byEntry {
		if _, ok := now[id]; !ok {
			resolved = append(resolved, old...)
			delete(t.byEntry, id)
			t.fresh = false
		}
	}
	ids := make([]string, 0, len(now))
	for id := range now {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		a, r := t.update(id, now[id])
		appeared = append(appeared, a...)
		resolved = append(resolved, r...)
	}
	check.Sort(appeared)
	check.Sort(resolved)
	return appeared, resolved
}

func diffKeys(old, now []drift.Drift) (appeared, resolved []drift.Drift) {
	was := make(map[string]bool, len(old))
	for i := range old {
		was[old[i].Key()] = true
	}
	is := make(map[string]bool, len(now))
	for i := range now {
		is[now[i].Key()] = true
		if !was[now[i].Key()] {
			appeared = append(appeared, now[i])
		}
	}
	for i := range old {
		if !is[old[i].Key()] {
			resolved = append(resolved, old[i])
		}
	}
	return appeared, resolved
}

// all lists the current drift, sorted. The caller must not modify it.
func (t *tracker) all() []drift.Drift {
	if t.fresh {
		return t.sorted
	}
	var out []drift.Drift
	for _, ds := range t.byEntry {
		out = append(out, ds...)
	}
	check.Sort(out)
	t.sorted, t.fresh = out, true
	return out
}

// statusInput is everything the status line says.
type statusInput struct {
	drift      []drift.Drift
	paths      int
	units      int
	polled     int
	loadFailed string // why the last reload was refused ("" when it was not)
	// configBlind: the desired-state files could not be watched.
	configBlind bool
	inhibitors  []string
	starting    bool
	// reading counts the files whose content is being compared in the
	// background (too large for the loop): their drift is not known yet.
	reading int
}

// statusLine renders systemctl status's STATUS= line:
//
//	No drift: watching 42 paths, 6 units
//	Drift: 2 paths differ (/etc/chrony.conf: content; /etc/x: mode, owner)
//	Inhibited by my-updater (pid 4711): applying config v42
func statusLine(in statusInput) string {
	var b strings.Builder
	switch {
	case in.starting:
		fmt.Fprintf(&b, "Starting: first check of %s, %s", plural(in.paths, "path"), plural(in.units, "unit"))
	case len(in.inhibitors) > 0:
		fmt.Fprintf(&b, "Inhibited by %s", strings.Join(in.inhibitors, "; "))
	case len(in.drift) == 0:
		fmt.Fprintf(&b, "No drift: watching %s, %s", plural(in.paths, "path"), plural(in.units, "unit"))
	default:
		var subjects []string
		kinds := map[string][]string{}
		for i := range in.drift {
			s := in.drift[i].Subject()
			if _, ok := kinds[s]; !ok {
				subjects = append(subjects, s)
			}
			kinds[s] = append(kinds[s], string(in.drift[i].Kind))
		}
		verb := "differ"
		if len(subjects) == 1 {
			verb = "differs"
		}
		fmt.Fprintf(&b, "Drift: %s %s (", plural(len(subjects), "path"), verb)
		for i, s := range subjects {
			if i == 3 {
				b.WriteString("; …")
				break
			}
			if i > 0 {
				b.WriteString("; ")
			}
			fmt.Fprintf(&b, "%s: %s", s, strings.Join(kinds[s], ", "))
		}
		b.WriteString(")")
	}
	if in.reading > 0 {
		fmt.Fprintf(&b, "; reading %s", plural(in.reading, "large file"))
	}
	if in.polled > 0 {
		fmt.Fprintf(&b, "; polling %s: inotify watches exhausted", plural(in.polled, "directory"))
	}
	if in.configBlind {
		b.WriteString("; desired-state files not watched (inotify watches exhausted): reload to apply changes")
	}
	if in.loadFailed != "" {
		fmt.Fprintf(&b, "; new config refused (%s), checking against the last good one", in.loadFailed)
	}
	return b.String()
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	if strings.HasSuffix(noun, "y") {
		return fmt.Sprintf("%d %sies", n, strings.TrimSuffix(noun, "y"))
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
