package ondisk

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
