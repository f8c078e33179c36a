package reconcile

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path"

	"github.com/drift-monitor/drift-monitor/internal/ondisk"
	"github.com/drift-monitor/drift-monitor/internal/selinux"
	"golang.org/x/sys/unix"
)

// How nodes are written. Ignition writes a file to a temporary file in the
// same directory and renames it over the path (internal/exec/util/file.go,
// PerformFetch), then sets owner and mode (SetPermissions: chown, then
// chmod, so that setuid and setgid survive). Here the owner and mode are
// set on the temporary node too, before the rename, and the node and its
// directory are synced: a crash at any step leaves the old node or the new
// one at the path, never a half-written or wrongly owned one. Directories
// and links are made the same way (a temporary name, then a rename), so
// that nothing appears at a declared path before it is what is declared.

// meta is the owner and mode a node is given.
type meta struct {
	uid, gid int
	mode     uint32
}

// writer writes inside one root through an FS.
type writer struct {
	root *ondisk.Root
	decl *ondisk.Declared
	fs   FS
	// label, when set, is the policy's default label of a path: the
	// directories ensureDir creates get theirs.
	label func(p string, t selinux.FileType) (string, bool)
}

// opError is a failed write step, with the host path it was about (quoted:
// control characters in a name are escaped, as in every message).
func opError(op, p string, err error) error {
	return fmt.Errorf("%s %q: %w", op, p, err)
}

// dir opens the host directory that holds a declared path, as checks
// locate it. A link among its parents that a check would not follow is an
// error, a *DetourError: nothing is written through it.
func (w *writer) dir(hostDir string) (int, error) {
	fd, _, err := w.dirPath(hostDir)
	return fd, err
}

// dirPath is dir, and the host path the directory resolved to.
func (w *writer) dirPath(hostDir string) (int, string, error) {
	fd, resolved, detour, err := w.root.LocateDirPath(hostDir, w.decl)
	if err != nil {
		return -1, "", err
	}
	if detour != nil {
		return -1, "", &DetourError{Detour: *detour}
	}
	return fd, resolved, nil
}

// DetourError is a symbolic link among a declared path's parents that
// Ignition would not have followed: the path is not written through it.
type DetourError struct{ Detour ondisk.Detour }

func (e *DetourError) Error() string {
	d := e.Detour
	if d.Want != "" {
		return fmt.Sprintf("%q is a symbolic link to %q, not %q as declared: nothing is written through it", d.Path, d.Target, d.Want)
	}
	return fmt.Sprintf("%q is a symbolic link to %q where a directory belongs: nothing is written through it", d.Path, d.Target)
}

// ensureDir opens hostDir, creating it and its missing parents first, each
// with m, as Ignition's MkdirForFile (os.MkdirAll) does. With a policy,
// each directory it creates gets its default label, that of the path it
// resolved to: Ignition relabels from the first component it found missing
// (internal/exec/stages/files/filesystemEntries.go, relabelPath:
// FindFirstMissingPathComponent, then setfiles, which labels all below).
func (w *writer) ensureDir(hostDir string, m meta, node string) (int, error) {
	fd, _, err := w.ensureDirPath(hostDir, m, path.Dir(node))
	return fd, err
}

// ensureDirPath is ensureDir, and the host path the directory resolved to;
// labelAt is the path whose label it wants, "" for where it resolves (the
// node's path made this the parent's of the node's: ondisk.LabelPath).
func (w *writer) ensureDirPath(hostDir string, m meta, labelAt string) (int, string, error) {
	fd, resolved, err := w.dirPath(hostDir)
	if !errors.Is(err, unix.ENOENT) || hostDir == "/" {
		if err != nil {
			return -1, "", opError("opening directory", hostDir, err)
		}
		return fd, resolved, nil
	}
	parent, above, err := w.ensureDirPath(path.Dir(hostDir), m, path.Dir(labelAt))
	if err != nil {
		return -1, "", err
	}
	defer unix.Close(parent)
	if err := w.makeDir(parent, hostDir, m, false); err != nil {
		return -1, "", err
	}
	resolved = path.Join(above, path.Base(hostDir))
	if labelAt == "." || labelAt == "" {
		labelAt = resolved
	}
	if err := w.labelNew(parent, hostDir, labelAt, selinux.Directory); err != nil {
		return -1, "", err
	}
	fd, err = w.dir(hostDir)
	if err != nil {
		return -1, "", opError("opening directory", hostDir, err)
	}
	return fd, resolved, nil
}

// labelNew gives the node dir/name (hostPath), which the writer just made,
// the default label of the path labelAt when there is a policy.
func (w *writer) labelNew(dir int, hostPath, labelAt string, t selinux.FileType) error {
	if w.label == nil {
		return nil
	}
	want, ok := w.label(labelAt, t)
	if !ok {
		return nil
	}
	return w.setLabel(dir, hostPath, want)
}

// makeDir makes the directory hostDir in dir with m. With replace, the
// non-directory that stands there is exchanged for it and removed.
func (w *writer) makeDir(dir int, hostDir string, m meta, replace bool) error {
	name := path.Base(hostDir)
	fd, tmp, err := w.fs.MkdirTemp(dir, tempPattern)
	if err != nil {
		return opError("creating a directory for", hostDir, err)
	}
	err = w.finish(fd, m)
	moved := false
	if err == nil {
		moved, err = w.place(dir, tmp, name, replace, false)
	}
	if err != nil {
		if !moved {
			w.fs.Remove(dir, tmp, true)
		}
		return opError("creating directory", hostDir, err)
	}
	return nil
}

// finish gives an open new node its owner and mode (chown first: it
// clears setuid and setgid), makes it durable and closes it.
func (w *writer) finish(fd int, m meta) error {
	err := w.fs.Fchown(fd, m.uid, m.gid)
	if err == nil {
		err = w.fs.Fchmod(fd, m.mode)
	}
	if err == nil {
		err = w.fs.Fsync(fd)
	}
	if cerr := w.fs.Close(fd); err == nil {
		err = cerr
	}
	return err
}

// place moves the temporary node tmp to name in dir and makes the move
// durable. With exchange, what stands at name is swapped with tmp and then
// removed (oldIsDir: it is an empty directory); otherwise tmp is renamed
// over name. moved says the new node is at name: tmp then is no longer the
// caller's to remove (after an exchange it holds the old node, which place
// removes).
func (w *writer) place(dir int, tmp, name string, exchange, oldIsDir bool) (moved bool, err error) {
	if exchange {
		if err := w.fs.Exchange(dir, tmp, name); err != nil {
			return false, err
		}
		if err := w.fs.Remove(dir, tmp, oldIsDir); err != nil {
			return true, fmt.Errorf("in place, but removing what stood there: %w", err)
		}
	} else if err := w.fs.Rename(dir, tmp, name); err != nil {
		return false, err
	}
	return true, w.fs.SyncDir(dir)
}

// writeFile writes content to dir/name (hostPath) with m; overDir says that
// an empty directory stands there, to be replaced.
func (w *writer) writeFile(dir int, hostPath string, content []byte, m meta, overDir bool) error {
	fd, tmp, err := w.fs.CreateTemp(dir, tempPattern)
	if err != nil {
		return opError("creating a temporary file for", hostPath, err)
	}
	err = w.fs.Write(fd, content)
	if err == nil {
		err = w.finish(fd, m)
	} else {
		w.fs.Close(fd)
	}
	if err = w.placeNode(dir, tmp, hostPath, overDir, err); err != nil {
		return opError("writing", hostPath, err)
	}
	return nil
}

// placeNode places the new non-directory node tmp at hostPath (see place),
// unless err says making it failed; either way a tmp that is still the new
// node is removed on failure.
func (w *writer) placeNode(dir int, tmp, hostPath string, overDir bool, err error) error {
	moved := false
	if err == nil {
		moved, err = w.place(dir, tmp, path.Base(hostPath), overDir, true)
	}
	if err != nil && !moved {
		w.fs.Remove(dir, tmp, false)
	}
	return err
}

// writeLink makes dir/name (hostPath) a symbolic link to target, owned by
// owner when it is set (else by the writer, root).
func (w *writer) writeLink(dir int, hostPath, target string, owner *meta, overDir bool) error {
	tmp, err := w.fs.SymlinkTemp(target, dir, tempPattern)
	if err != nil {
		return opError("creating a symbolic link for", hostPath, err)
	}
	if owner != nil {
		err = w.fs.Lchown(dir, tmp, owner.uid, owner.gid)
	}
	if err = w.placeNode(dir, tmp, hostPath, overDir, err); err != nil {
		return opError("linking", hostPath, err)
	}
	return nil
}

// writeHardLink makes dir/name (hostPath) a hard link to tdir/tname.
func (w *writer) writeHardLink(dir int, hostPath string, tdir int, tname string, overDir bool) error {
	tmp, err := w.fs.LinkTemp(tdir, tname, dir, tempPattern)
	if err != nil {
		return opError("creating a hard link for", hostPath, err)
	}
	if err := w.placeNode(dir, tmp, hostPath, overDir, nil); err != nil {
		return opError("linking", hostPath, err)
	}
	return nil
}

// setMeta changes the owner and mode of the existing node dir/name in
// place (the same inode: its hard links keep sharing it). chown (when the
// owner differs) comes before chmod, which always follows it: the kernel
// clears setuid and setgid on chown.
func (w *writer) setMeta(dir int, hostPath string, chown bool, m meta, chmod bool) error {
	fd, err := w.fs.Open(dir, path.Base(hostPath))
	if err != nil {
		return opError("opening", hostPath, err)
	}
	if chown {
		err = w.fs.Fchown(fd, m.uid, m.gid)
	}
	if err == nil && (chmod || chown) {
		err = w.fs.Fchmod(fd, m.mode)
	}
	if err == nil {
		err = w.fs.Fsync(fd)
	}
	if cerr := w.fs.Close(fd); err == nil {
		err = cerr
	}
	if err != nil {
		return opError("setting owner and mode of", hostPath, err)
	}
	return nil
}

// emptyDir reports whether the directory dir/name holds nothing.
func (w *writer) emptyDir(dir int, name string) (bool, error) {
	fd, err := w.fs.Open(dir, name)
	if err != nil {
		return false, err
	}
	f := os.NewFile(uintptr(fd), name)
	defer f.Close()
	names, err := f.Readdirnames(1)
	if errors.Is(err, io.EOF) {
		return true, nil
	}
	return len(names) == 0, err
}

// readPrefix reads at most n bytes from the start of the regular file
// dir/name: a file that grew without bound costs only what is asked for.
func (w *writer) readPrefix(dir int, name string, n int64) ([]byte, error) {
	fd, err := w.fs.Open(dir, name)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), name)
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, n))
}
