package ondisk

import (
	"errors"
	"path"

	"github.com/drift-monitor/drift-monitor/internal/model"
	"golang.org/x/sys/unix"
)

// Flags are the inode flags that chattr sets and statx reports without
// opening the node: immutable and append-only (Meta.Immutable, Meta.Append).
type Flags uint8

const (
	FlagImmutable Flags = 1 << iota
	FlagAppend
)

// HasMeta reports whether the entry declares a node whose metadata (xattrs,
// ACLs, flags) is observed and compared.
func HasMeta(e *model.Entry) bool { return hasMeta(e) }

// Flags returns the immutable and append-only flags of what stands at a host
// path, located as Observe locates it (parents resolved inside the root, the
// last component never followed) with one statx and no open; ok is false
// when nothing can be examined there (absent, behind a detour, an error).
// It is the cheap look the daemon's flag sweep takes between full checks;
// the observation that judges the entry is still Observe's.
func (o *Observer) Flags(hostPath string) (f Flags, ok bool) {
	dir, base := path.Split(hostPath)
	dfd, detour, err := o.dirs.get(path.Clean(dir))
	if err != nil || detour != nil {
		return 0, false
	}
	var sx unix.Statx_t
	for {
		// Mask 0: stx_attributes is filled whatever is asked for.
		err = unix.Statx(dfd, base, unix.AT_SYMLINK_NOFOLLOW|unix.AT_STATX_DONT_SYNC, 0, &sx)
		if !errors.Is(err, unix.EINTR) {
			break
		}
	}
	if err != nil {
		return 0, false
	}
	if sx.Attributes&unix.STATX_ATTR_IMMUTABLE != 0 {
		f |= FlagImmutable
	}
	if sx.Attributes&unix.STATX_ATTR_APPEND != 0 {
		f |= FlagAppend
	}
	return f, true
}
