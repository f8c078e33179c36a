package image

import (
	"path"

	"golang.org/x/sys/unix"

	"github.com/drift-monitor/drift-monitor/internal/ondisk"
	"github.com/drift-monitor/drift-monitor/internal/osstate"
)

// What a watcher of the live /etc needs: the directories to watch, whether
// the baseline changed, and whether a transaction that changes both is
// under way.

// Dirs lists the directories at and under host path top (never through a
// link), top first: what a watcher of the whole tree watches.
func Dirs(r *ondisk.Root, top string) ([]string, error) {
	fd, err := openRootDir(r, top)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	out := []string{top}
	var walk func(fd int, p string) error
	walk = func(fd int, p string) error {
		names, err := readNames(fd)
		if err != nil {
			return err
		}
		for _, n := range names {
			var st unix.Stat_t
			if fstatat(fd, n, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR {
				continue
			}
			cp := path.Join(p, n)
			out = append(out, cp)
			cfd, err := openDir(fd, n)
			if err != nil {
				continue // gone, or unreadable: its parent's watch still sees it
			}
			err = walk(cfd, cp)
			unix.Close(cfd)
			if err != nil {
				return err
			}
		}
		return nil
	}
	return out, walk(fd, top)
}

// StampNow is the baseline's stamp as the root has it now: it differs
// from Stamp once an rpm transaction rewrote the database, the deployment's
// /usr/etc is another, or the merged confexts changed.
func (b *Baseline) StampNow(r *ondisk.Root) string {
	s := ""
	switch b.Kind {
	case KindRPM:
		_, file := osstate.RPMDB(r)
		s = "rpm:" + identity(r, file)
	case KindOstree, KindTransientEtc:
		s = "ostree:" + identity(r, UsrEtcDir)
	default:
		return b.Stamp
	}
	if x, err := ReadExtensions(r); err == nil {
		s += x.stamp()
	}
	return s
}

// ostreeLock is the sysroot's lock, which ostree takes for every change of
// the deployments and rpm-ostree and bootc for a whole transaction
// (ostreedev/ostree src/libostree/ostree-sysroot-private.h,
// OSTREE_SYSROOT_LOCKFILE "ostree/lock"; ostree-sysroot.c,
// ostree_sysroot_lock: an exclusive lock through libglnx's
// glnx_make_lock_file, GNOME/libglnx glnx-lockfile.c: an open file
// description lock, flock only on kernels without those). On a booted host /ostree leads to the sysroot's.
const ostreeLock = "/ostree/lock"

// Transaction says what transaction holds the baseline's lock now ("" for
// none): rpm's (rpm lib/rpmlock.cc: a POSIX write lock on
// %{_dbpath}/.rpm.lock for the length of a transaction, macros.in
// %_rpmlock_path) or ostree's. While one is held, /etc is half-way between
// two baselines.
func Transaction(r *ondisk.Root, kind HostKind) string {
	switch kind {
	case KindRPM:
		if dir, _ := osstate.RPMDB(r); dir != "" && locked(r, path.Join(dir, ".rpm.lock")) {
			return "an rpm transaction (" + path.Join(dir, ".rpm.lock") + " is locked)"
		}
	case KindOstree, KindTransientEtc:
		if locked(r, ostreeLock) {
			return "an ostree transaction (" + ostreeLock + " is locked)"
		}
	}
	return ""
}

// locked reports whether another process holds a write lock on the file:
// a POSIX record lock or an open file description lock, which
// F_OFD_GETLK sees without taking any (a lock of our own, even a shared
// one for a moment, could make a writer's non-blocking attempt fail).
func locked(r *ondisk.Root, p string) bool {
	f, err := r.Open(p)
	if err != nil {
		return false
	}
	defer f.Close()
	lk := unix.Flock_t{Type: unix.F_RDLCK}
	return unix.FcntlFlock(f.Fd(), unix.F_OFD_GETLK, &lk) == nil && lk.Type != unix.F_UNLCK
}

// StagedStamp names the version of the file that names the deployment
// staged for the next boot (osstate.StagedFile), "-" while there is none.
func StagedStamp(r *ondisk.Root) string { return identity(r, osstate.StagedFile) }
