package ondisk

import (
	"io/fs"
	"path"

	"golang.org/x/sys/unix"
)

// Walking a path for those who must know every node that decides where it
// leads: whoever may write one of them may make the path lead elsewhere
// (package writers asks who that is).

// StepKind says what a node is to the walk (Step).
type StepKind int

const (
	// StepDir is a directory the resolution passes through: the root, and
	// every directory entered on the way (a link's target included).
	StepDir StepKind = iota
	// StepLink is a symbolic link the resolution follows.
	StepLink
	// StepHolder is the directory that holds the path's last component
	// (again, after each link there): the one whose entries name it.
	StepHolder
	// StepEnd is what the path names at the end, its links followed.
	StepEnd
)

// Step is one node of a walk: its host path where the resolution met it,
// and its owner, group and mode (type and permission bits, as st_mode).
type Step struct {
	Path     string
	Kind     StepKind
	UID, GID uint32
	Mode     uint32
}

func step(kind StepKind, p string, st *unix.Stat_t) Step {
	return Step{Path: p, Kind: kind, UID: st.Uid, GID: st.Gid, Mode: st.Mode}
}

// tell visits one node, when the walk visits.
func (w *walker) tell(kind StepKind, p string, st *unix.Stat_t) error {
	if w.visit == nil {
		return nil
	}
	return w.visit(step(kind, p, st))
}

// Walk resolves a host path inside the root as Open does (links followed,
// never out of the root), one component at a time, and calls visit with
// each node that decides where it leads, in order: the root, every
// directory entered (StepDir), every link followed (StepLink), the
// directory that holds the last component (StepHolder: after a link in
// the last component, the one that holds its target's), and what the path
// names (StepEnd). Nothing is opened but as O_PATH. It stops at visit's
// first error, and returns it; an error of the resolution is an
// *fs.PathError naming the path inside the root (Join).
func (r *Root) Walk(hostPath string, visit func(Step) error) error {
	var st unix.Stat_t
	if err := unix.Fstat(r.fd, &st); err != nil {
		return &fs.PathError{Op: "walk", Path: r.Join(hostPath), Err: err}
	}
	if err := visit(step(StepDir, "/", &st)); err != nil {
		return err
	}
	p := hostPath
	for range maxSymlinks {
		dir, base := splitLast(p)
		if base == "" || base == "." || base == ".." {
			// A directory's own name: walked whole, it is the end.
			dir, base = p, ""
		}
		w := &walker{visit: visit}
		dfd, at, _, err := r.walkWith(w, relative(dir))
		if err != nil {
			if _, ok := err.(unix.Errno); ok {
				err = &fs.PathError{Op: "walk", Path: r.Join(hostPath), Err: err}
			}
			return err
		}
		err = func() error {
			defer unix.Close(dfd)
			if err := unix.Fstat(dfd, &st); err != nil {
				return &fs.PathError{Op: "walk", Path: r.Join(hostPath), Err: err}
			}
			if base == "" {
				p = ""
				return visit(step(StepEnd, at, &st))
			}
			if err := visit(step(StepHolder, at, &st)); err != nil {
				return err
			}
			if err := fstatat(dfd, base, &st); err != nil {
				return &fs.PathError{Op: "walk", Path: r.Join(hostPath), Err: err}
			}
			if st.Mode&unix.S_IFMT != unix.S_IFLNK {
				p = ""
				return visit(step(StepEnd, path.Join(at, base), &st))
			}
			if err := visit(step(StepLink, path.Join(at, base), &st)); err != nil {
				return err
			}
			target, err := readlinkat(dfd, base)
			if err != nil {
				return &fs.PathError{Op: "walk", Path: r.Join(hostPath), Err: err}
			}
			if path.IsAbs(target) {
				p = target
			} else {
				p = at + "/" + target
			}
			return nil
		}()
		if err != nil || p == "" {
			return err
		}
	}
	return &fs.PathError{Op: "walk", Path: r.Join(hostPath), Err: unix.ELOOP}
}
