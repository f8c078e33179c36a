package ondisk

import (
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
