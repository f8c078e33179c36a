package reconcile

import (
	"errors"
	"fmt"
	"path"
	"strings"

	"github.com/drift-monitor/drift-monitor/internal/desired"
	"github.com/drift-monitor/drift-monitor/internal/drift"
	"github.com/drift-monitor/drift-monitor/internal/escape"
	"github.com/drift-monitor/drift-monitor/internal/ondisk"
	"github.com/drift-monitor/drift-monitor/internal/selinux"
	"golang.org/x/sys/unix"
)

// The inode flags chattr +i and +a set (include/uapi/linux/fs.h).
const (
	fsImmutableFL = 0x00000010
	fsAppendFL    = 0x00000020
)

// metaPlan is what repairing a node's metadata takes: flags to clear first
// (an immutable node refuses every other change, an append-only one every
// xattr change: verified on tmpfs and ext4), xattrs to remove after.
type metaPlan struct {
	clearFlags bool
	remove     []string
}

// planMeta works out, from the drift kinds the check reported, what the
// metadata repair does, and says it in a.Done. A node rewritten gets a new
// inode without the old one's xattrs: only its flags need clearing, so that
// it can be replaced.
func planMeta(e *desired.Entry, ob *ondisk.Observation, a *Action, rewrite bool) metaPlan {
	var p metaPlan
	m := &ob.Meta
	if has(a.Drift, drift.FileAttr) && (m.Immutable || m.Append) {
		p.clearFlags = true
		a.Done = append(a.Done, "cleared the "+strings.Join(drift.FlagNames(m), " and ")+" flag")
	}
	if rewrite {
		return p
	}
	if has(a.Drift, drift.ACL) {
		p.remove = append(p.remove, drift.ExtraACLs(m, ob.Type == ondisk.Directory)...)
	}
	if has(a.Drift, drift.Xattr) {
		p.remove = append(p.remove, drift.ExtraXattrs(m)...)
	}
	for _, x := range p.remove {
		a.Done = append(a.Done, "removed the extended attribute "+escape.Name(x))
	}
	return p
}

// clearFlags clears the immutable and append-only flags of the node
// (FS_IOC_SETFLAGS on a read-only descriptor, which an immutable node still
// gives). Without CAP_LINUX_IMMUTABLE the kernel refuses: that is said so,
// with the command that does it.
func (w *writer) clearFlags(e *desired.Entry) error {
	how := &problem{
		why:     "it is immutable or append-only, and clearing that needs CAP_LINUX_IMMUTABLE, which this process lacks: nothing was changed",
		command: "chattr -i -a " + shellQuote(e.Path),
	}
	if !ondisk.HasCapability(unix.CAP_LINUX_IMMUTABLE) {
		return how
	}
	dir, err := w.dir(path.Dir(e.Path))
	if err != nil {
		return opError("opening directory", path.Dir(e.Path), err)
	}
	defer unix.Close(dir)
	fd, err := unix.Openat(dir, path.Base(e.Path), unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return opError("opening", e.Path, err)
	}
	defer unix.Close(fd)
	flags, err := unix.IoctlGetUint32(fd, unix.FS_IOC_GETFLAGS)
	if err != nil {
		return opError("reading the inode flags of", e.Path, err)
	}
	err = unix.IoctlSetPointerInt(fd, unix.FS_IOC_SETFLAGS, int(int32(flags&^(fsImmutableFL|fsAppendFL))))
	if errors.Is(err, unix.EPERM) {
		return how
	}
	if err != nil {
		return opError("clearing the immutable and append-only flags of", e.Path, err)
	}
	return nil
}

// removeXattrs removes the named xattrs of the node.
func (w *writer) removeXattrs(e *desired.Entry, names []string) error {
	return w.atNode(e, func(p string) error {
		for _, x := range names {
			if err := unix.Removexattr(p, x); err != nil && !errors.Is(err, unix.ENODATA) {
				return opError("removing the extended attribute "+escape.Name(x)+" of", e.Path, err)
			}
		}
		return nil
	})
}

// atNode calls f with a path to the entry's node itself: the /proc/self/fd
// link of an O_PATH|O_NOFOLLOW descriptor of it (never following a link at
// its path), for the path-based xattr calls.
func (w *writer) atNode(e *desired.Entry, f func(p string) error) error {
	dir, err := w.dir(path.Dir(e.Path))
	if err != nil {
		return opError("opening directory", path.Dir(e.Path), err)
	}
	defer unix.Close(dir)
	fd, err := unix.Openat(dir, path.Base(e.Path), unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return opError("opening", e.Path, err)
	}
	defer unix.Close(fd)
	return f(fmt.Sprintf("/proc/self/fd/%d", fd))
}

var labelTypes = map[ondisk.FileType]selinux.FileType{ondisk.Regular: selinux.Regular, ondisk.Directory: selinux.Directory,
	ondisk.Symlink: selinux.Symlink}

// relabel gives the repaired node the policy's default label, the whole
// context, as Ignition's setfiles -F does (internal/exec/util/selinux.go):
// a node reconcile writes would otherwise carry what the kernel gave it, a
// label drift of its own. A hard link's inode is its target's, labelled
// with it; a node Ignition keeps is not relabelled.
func (r *Reconciler) relabel(w *writer, e *desired.Entry, a *Action) error {
	if r.Labels == nil || e.Type == desired.TypeHardLink || e.Type == desired.TypeNotMasked || e.Kind == desired.KindConfig {
		return nil
	}
	if e.Kind == desired.KindFile && (e.Content == nil || e.Content.Exact == nil && e.Content.Stored == nil && e.Content.Hash == nil && e.Content.Unverifiable == "") {
		return nil
	}
	o := ondisk.NewObserver(r.Root)
	defer o.Close()
	o.Declare(r.Declared)
	ob := o.Observe(e)
	t, ok := labelTypes[ob.Type]
	if !ok || ob.Err != nil || ob.Detour != nil {
		return nil
	}
	want, ok := r.Labels.Lookup(e.Path, t)
	if !ok {
		return nil
	}
	if v, _ := ob.Meta.Get(ondisk.XattrSELinux); strings.TrimRight(string(v), "\x00") == want && !r.DryRun {
		return nil
	}
	if r.DryRun {
		if has(a.Drift, drift.Label) {
			a.Done = append(a.Done, "set the SELinux label "+escape.Name(want))
		}
		return nil
	}
	err := w.atNode(e, func(p string) error {
		if err := unix.Setxattr(p, ondisk.XattrSELinux, append([]byte(want), 0), 0); err != nil {
			return opError("setting the SELinux label of", e.Path, err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	a.Done = append(a.Done, "set the SELinux label "+escape.Name(want))
	return nil
}
