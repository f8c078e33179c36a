package ondisk

import (
	"errors"
	"path"

	"golang.org/x/sys/unix"
)

// LocateDir opens a host directory inside the root the way observations
// locate the directories that hold declared paths (see locate.go): an
// O_PATH descriptor, or the Detour (a symbolic link among the parents that
// Ignition would not have followed) that kept it from its declared place,
// or an error (fs.ErrNotExist when a component is missing). The caller
// closes the descriptor. Writers use it so that what they write lands where
// a check looks, and never outside the root.
func (r *Root) LocateDir(hostDir string, decl *Declared) (fd int, detour *Detour, err error) {
	return r.locateDir(hostDir, decl)
}

// LocateDirPath is LocateDir, and the host path the directory resolved to:
// hostDir with the links on the way followed (see Observation.Resolved).
func (r *Root) LocateDirPath(hostDir string, decl *Declared) (fd int, resolved string, detour *Detour, err error) {
	return r.locate(hostDir, decl)
}

// ResolvePath is where a node at hostPath is, or would be once its missing
// parents are made: the deepest of its parent directories that exists,
// located as LocateDirPath locates it, with the rest of the path below it
// (what Ignition's JoinPath gives a path whose parents do not all exist:
// v2.27.0 internal/exec/util/util.go). "" when a link on the way is not
// followed or a parent cannot be examined.
func (r *Root) ResolvePath(hostPath string, decl *Declared) string {
	dir, rest := path.Dir(path.Clean(hostPath)), path.Base(hostPath)
	for {
		fd, resolved, detour, err := r.locate(dir, decl)
		switch {
		case err == nil && detour == nil:
			unix.Close(fd)
			return path.Join(resolved, rest)
		case detour != nil || !errors.Is(err, unix.ENOENT) || dir == "/":
			return ""
		}
		dir, rest = path.Dir(dir), path.Join(path.Base(dir), rest)
	}
}

// Public reports whether any user may reach the directory of a host path:
// it and every directory above it, up to the root, grant others search.
// With a file that grants others read, that is what a check calls public
// (Observation.Public): the file's bytes are no secret from anyone on the
// host.
func (r *Root) Public(hostPath string) (bool, error) {
	fd, err := r.openDir(path.Dir(path.Clean(hostPath)))
	if err != nil {
		return false, err
	}
	defer unix.Close(fd)
	return r.reachable(fd)
}

// Owner is the uid that owns the root directory: root for the running
// host, whoever owns a tree checked with --root. Files of the root's own
// (a record, a key) are trusted from it as from root.
func (r *Root) Owner() int { return r.uid }
