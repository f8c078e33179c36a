package reconcile

import (
	"context"
	"path"
	"sort"

	"github.com/drift-monitor/drift-monitor/internal/enablement"
	"github.com/drift-monitor/drift-monitor/internal/ondisk"
	"golang.org/x/sys/unix"
)

// apply executes an entry's steps in order, through the writer (package
// fsx, in directories resolved inside the root as checks resolve them). It
// returns the steps done: all of them, or those before the one that failed.
func (r *Reconciler) apply(ctx context.Context, w *writer, steps []Step) ([]Step, error) {
	emptied := map[string]bool{}
	for i := range steps {
		if err := r.applyStep(ctx, w, &steps[i]); err != nil {
			return steps[:i], err
		}
		if steps[i].prune {
			emptied[dirOf(&steps[i])] = true
		}
	}
	w.prune(emptied)
	return steps, nil
}

func (r *Reconciler) applyStep(ctx context.Context, w *writer, s *Step) error {
	switch s.Op {
	case OpEnable:
		return r.Units.EnableUnitFiles(ctx, []string{s.Unit})
	case OpDisable:
		return r.Units.DisableUnitFiles(ctx, []string{s.Unit})
	case OpRun:
		return r.run(ctx, s.cmd, s.hash)
	case OpRelabel:
		return r.relabel(w, s)
	}
	var dir int
	var err error
	switch s.Op {
	case OpWrite, OpMkdir, OpSymlink, OpHardLink:
		dir, err = w.ensureDir(dirOf(s), s.parent, s.labelAt)
	default:
		if dir, err = w.dir(dirOf(s)); err != nil {
			err = opError("opening directory", dirOf(s), err)
		}
	}
	if err != nil {
		return err
	}
	defer unix.Close(dir)
	if err := unchanged(dir, s); err != nil {
		return err
	}
	return r.applyAt(w, dir, s)
}

// applyAt does a step in the directory that holds its path.
func (r *Reconciler) applyAt(w *writer, dir int, s *Step) error {
	name := path.Base(s.Path)
	switch s.Op {
	case OpWrite:
		return w.writeFile(dir, s.Path, s.content, s.meta, s.overDir)
	case OpMkdir:
		return w.makeDir(dir, s.Path, s.meta, s.replace)
	case OpSymlink:
		var owner *meta
		if s.owned {
			owner = &s.meta
		}
		return w.writeLink(dir, s.Path, s.target, owner, s.overDir)
	case OpHardLink:
		return r.hardLink(w, dir, s)
	case OpChown:
		if s.seen != nil && s.seen.typ == ondisk.Symlink {
			if err := w.fs.Lchown(dir, name, s.meta.uid, s.meta.gid); err != nil {
				return opError("changing the owner of", s.Path, err)
			}
			return w.fs.SyncDir(dir)
		}
		return w.setMeta(dir, s.Path, true, s.meta, true)
	case OpChmod:
		return w.setMeta(dir, s.Path, false, s.meta, true)
	case OpClearFlags:
		return w.clearFlags(dir, s.Path)
	case OpRemoveXattr:
		return w.removeXattr(dir, s.Path, s.name)
	case OpLabel:
		return w.setLabel(dir, s.Path, s.label)
	case OpRemove:
		if err := w.fs.Remove(dir, name, false); err != nil {
			return opError("removing", s.Path, err)
		}
		return w.fs.SyncDir(dir)
	}
	return nil
}

// unchanged refuses a step on a node that is not the one planning saw
// (another inode, or gone): the plan was made for what stood there, and
// nothing is written to what was put there since.
func unchanged(dir int, s *Step) error {
	if s.seen == nil {
		return nil
	}
	var st unix.Stat_t
	err := unix.Fstatat(dir, path.Base(s.Path), &st, unix.AT_SYMLINK_NOFOLLOW)
	if err != nil || st.Dev != s.seen.dev || st.Ino != s.seen.ino {
		return refuse("%q changed since it was examined (another node stands there): nothing was written to it; run reconcile again", s.Path)
	}
	return nil
}

// hardLink links the step's path to its target, resolved through the
// root's links as Ignition resolves it, and checked again: the target may
// have changed since it was examined.
func (r *Reconciler) hardLink(w *writer, dir int, s *Step) error {
	tdir, err := r.Root.OpenDir(path.Dir(s.target))
	if err != nil {
		return opError("opening the directory of the link's target", s.target, err)
	}
	defer unix.Close(tdir)
	var st unix.Stat_t
	if err := unix.Fstatat(tdir, path.Base(s.target), &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return refuse("its target %q cannot be linked to: %v", s.target, err)
	}
	if st.Mode&unix.S_IFMT == unix.S_IFDIR {
		return refuse("its target %q is a directory", s.target)
	}
	return w.writeHardLink(dir, s.Path, tdir, path.Base(s.target), s.overDir)
}

// prune removes the .wants and .requires directories a disable emptied, as
// systemctl disable does (install.c, remove_marked_symlinks_fd:
// rmdir_parents); one that holds other links stays.
func (w *writer) prune(emptied map[string]bool) {
	var dirs []string
	for d := range emptied {
		dirs = append(dirs, d)
	}
	sort.Sort(sort.Reverse(sort.StringSlice(dirs)))
	for _, d := range dirs {
		for ; enablement.IsConfigSubdir(d); d = path.Dir(d) {
			parent, err := w.dir(path.Dir(d))
			if err != nil {
				break
			}
			err = w.fs.Remove(parent, path.Base(d), true)
			if err == nil {
				err = w.fs.SyncDir(parent)
			}
			unix.Close(parent)
			if err != nil {
				break // not empty: it holds other links
			}
		}
	}
}
