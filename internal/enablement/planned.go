package enablement

import (
	"io/fs"
	"path"
)

// Planned is what a unit file or drop-in will be once a repair has written
// it: its content, or a mask (a link to /dev/null), or nothing (removed).
// A dry run plans the links of an enable from the unit files the same run
// writes before it, which are not on disk yet.
type Planned struct {
	Content []byte
	Masked  bool
	Removed bool
}

// Plan makes the Tree read these unit files and drop-ins (host paths) as
// they will be, in place of what the root holds there now. Later calls add
// to the earlier ones.
func (t *Tree) Plan(files map[string]Planned) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.planned == nil {
		t.planned = map[string]Planned{}
	}
	for p, f := range files {
		t.planned[path.Clean(p)] = f
	}
}

// loadPlanned is load for a planned unit file.
func (c *lookup) loadPlanned(i *installInfo, p string, f Planned) error {
	switch {
	case f.Removed:
		return ioError("reading", p, fs.ErrNotExist)
	case f.Masked, len(f.Content) == 0:
		// An empty unit file masks, as isNullOrEmpty says of one on disk.
		i.kind = kindMasked
		return nil
	}
	if err := c.t.parseInstall(i, p, f.Content); err != nil {
		return err
	}
	i.kind = kindRegular
	return nil
}

// plannedDropins adds to names, the drop-ins of the directory d on disk,
// those planned there, and takes out those planned removed.
func (t *Tree) plannedDropins(d string, names []string) []string {
	if len(t.planned) == 0 {
		return names
	}
	has := map[string]bool{}
	var out []string
	for _, n := range names {
		has[n] = true
		if f, ok := t.planned[path.Join(d, n)]; !ok || !f.Removed {
			out = append(out, n)
		}
	}
	for p, f := range t.planned {
		if path.Dir(p) == d && !f.Removed && !has[path.Base(p)] {
			out = append(out, path.Base(p))
		}
	}
	return out
}
