package ondisk

import (
	"errors"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Meta is what Ignition never sets on a node and the kernel keeps beside its
// mode and owner: extended attributes (ACLs, file capabilities, SELinux
// labels, user.* and trusted.* values) and the immutable and append-only
// flags. It is observed in the same pass as the rest, without following a
// link: statx(AT_SYMLINK_NOFOLLOW) gives the flags, and the xattrs are listed
// through an O_PATH|O_NOFOLLOW descriptor of the node (flistxattr on an O_PATH
// descriptor fails with EBADF; listxattr on /proc/self/fd/N reads the node
// itself, a symlink's own xattrs included — AIDE's src/do_md.c does the same).
type Meta struct {
	// Observed: the node exists and its metadata was examined (Err aside).
	Observed bool
	// Err is a failure to list or read the xattrs (the flags still hold).
	Err error
	// Immutable and Append are the inode's FS_IMMUTABLE_FL and FS_APPEND_FL,
	// as statx reports them; AttrMask says which flags the filesystem
	// supports (stx_attributes_mask).
	Immutable, Append bool
	AttrMask          uint64
	// Xattrs are the node's extended attributes, by name; the values of every
	// name present (a listing only names them).
	Xattrs []Xattr
	// ParentDefaultACL is the parent directory's system.posix_acl_default:
	// what a node created in it inherits. Read only for a node that has an
	// ACL of its own (nil otherwise, and when the parent has none).
	ParentDefaultACL []byte
	// Names are the account names of the ids in the node's ACLs, from the
	// root's account databases (filled only for a node with an ACL).
	Names Names
}

// Xattr is one extended attribute.
type Xattr struct {
	Name  string
	Value []byte
}

// Get returns the value of the named xattr and whether the node has it.
func (m *Meta) Get(name string) ([]byte, bool) {
	for _, x := range m.Xattrs {
		if x.Name == name {
			return x.Value, true
		}
	}
	return nil, false
}

// Xattr names with a meaning of their own.
const (
	XattrACLAccess  = "system.posix_acl_access"
	XattrACLDefault = "system.posix_acl_default"
	XattrCapability = "security.capability"
	XattrSELinux    = "security.selinux"
)

// SeesTrusted reports whether this process can list trusted.* xattrs: the
// kernel leaves them out of listxattr without CAP_SYS_ADMIN (verified on
// 6.18 under `capsh --drop=cap_sys_admin`), so a process without it cannot
// tell a node without them from one with them.
var SeesTrusted = sync.OnceValue(func() bool { return HasCapability(unix.CAP_SYS_ADMIN) })

// HasCapability reports whether the capability is in this process's
// effective set (/proc/self/status, CapEff).
func HasCapability(c int) bool {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return false
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "CapEff:"); ok {
			caps, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			return err == nil && caps&(1<<c) != 0
		}
	}
	return false
}

// statxAt is fstatat by statx, which also gives the inode flags that chattr
// sets (immutable, append) without opening the node. AT_STATX_DONT_SYNC: a
// network filesystem answers from its cache, as fstatat does.
func statxAt(dfd int, name string, st *unix.Stat_t, m *Meta) error {
	var sx unix.Statx_t
	for {
		err := unix.Statx(dfd, name, unix.AT_SYMLINK_NOFOLLOW|unix.AT_STATX_DONT_SYNC, unix.STATX_BASIC_STATS, &sx)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if errors.Is(err, unix.ENOSYS) {
			return fstatat(dfd, name, st)
		}
		if err != nil {
			return err
		}
		break
	}
	*st = unix.Stat_t{
		Dev: unix.Mkdev(sx.Dev_major, sx.Dev_minor), Ino: sx.Ino,
		Mode: uint32(sx.Mode), Uid: sx.Uid, Gid: sx.Gid, Size: int64(sx.Size),
	}
	// What fill reads, the rest left zero.
	st.Mtim = unix.NsecToTimespec(sx.Mtime.Sec*1e9 + int64(sx.Mtime.Nsec))
	st.Ctim = unix.NsecToTimespec(sx.Ctime.Sec*1e9 + int64(sx.Ctime.Nsec))
	m.AttrMask = sx.Attributes_mask
	m.Immutable = sx.Attributes&unix.STATX_ATTR_IMMUTABLE != 0
	m.Append = sx.Attributes&unix.STATX_ATTR_APPEND != 0
	return nil
}

// fdPath names an open descriptor for the path-based xattr calls.
func fdPath(fd int) string { return "/proc/self/fd/" + strconv.Itoa(fd) }

// xattrs lists and reads the xattrs of the node name in dfd, and, when it
// has an ACL, its parent's default ACL. On Linux 6.13 and later,
// listxattrat and getxattrat (AT_SYMLINK_NOFOLLOW) read them relative to the
// directory descriptor, one system call for a node without any (the common
// case, which costs no more than that); before, an O_PATH|O_NOFOLLOW
// descriptor of the node and the /proc/self/fd link to it.
func (o *Observer) xattrs(dfd int, name string, m *Meta) {
	m.Observed = true
	m.Xattrs, m.Err = o.readXattrs(dfd, name)
	o.parentACL(dfd, m)
}

// readXattrs reads the xattrs of the node name in dfd, by listxattrat and
// getxattrat where the kernel has them.
func (o *Observer) readXattrs(dfd int, name string) ([]Xattr, error) {
	if !noXattrat.Load() {
		xs, err := o.readXattrsAt(dfd, name)
		if !xattratMissing(err) {
			return xs, err
		}
		noXattrat.Store(true)
	}
	fd, err := openPath(dfd, name)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	return ReadXattrs(fdPath(fd))
}

func (o *Observer) parentACL(dfd int, m *Meta) {
	_, acc := m.Get(XattrACLAccess)
	_, def := m.Get(XattrACLDefault)
	if m.Err == nil && (acc || def) {
		m.ParentDefaultACL, m.Err = getxattr(fdPath(dfd), XattrACLDefault)
		m.Names = o.idNames()
	}
}

// xattratMissing reports whether listxattrat is not to be had: ENOSYS
// from a kernel before 6.13, or EPERM from a seccomp filter that does not
// know the call. systemd 252's @system-service, which the unit's
// SystemCallFilter= allows, predates it, and the unit's
// SystemCallErrorNumber=EPERM answers every call outside the list so; a
// listxattr of a node is never refused with EPERM otherwise.
func xattratMissing(err error) bool {
	return errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EPERM)
}

// noXattrat is set once the kernel turned out to lack listxattrat.
var noXattrat atomic.Bool

// readXattrsAt is ReadXattrs of the node name in dfd by listxattrat and
// getxattrat, never following a link at name.
func (o *Observer) readXattrsAt(dfd int, name string) ([]Xattr, error) {
	if o.xbuf == nil {
		o.xbuf = make([]byte, 1024)
	}
	// The name as the kernel takes it, made once for both calls.
	o.nbuf = append(append(o.nbuf[:0], name...), 0)
	if strings.IndexByte(name, 0) >= 0 {
		return nil, unix.EINVAL
	}
	p := &o.nbuf[0]
	xs, buf, err := readXattrs(o.xbuf,
		func(b []byte) (int, error) { return listxattrat(dfd, p, b) },
		func(x string) ([]byte, error) {
			if o.NoLabel && x == XattrSELinux {
				return nil, nil
			}
			return getxattrAt(dfd, p, x)
		})
	o.xbuf = buf
	return xs, err
}

// readXattrs lists names with list into buf (grown as needed, and
// returned) and reads each value with get, sorted by name. A filesystem
// without xattrs has none; a name gone since the listing is left out.
func readXattrs(buf []byte, list func([]byte) (int, error), get func(string) ([]byte, error)) ([]Xattr, []byte, error) {
	var n int
	for {
		var err error
		n, err = list(buf)
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case errors.Is(err, unix.ERANGE):
			sz, err := list(nil)
			if err != nil {
				return nil, buf, err
			}
			buf = make([]byte, sz+64)
			continue
		case errors.Is(err, unix.ENOTSUP):
			return nil, buf, nil
		case err != nil:
			return nil, buf, err
		}
		break
	}
	if n == 0 {
		return nil, buf, nil
	}
	var xs []Xattr
	for _, x := range strings.Split(strings.TrimSuffix(string(buf[:n]), "\x00"), "\x00") {
		if x == "" {
			continue
		}
		v, err := get(x)
		if errors.Is(err, unix.ENODATA) {
			continue // removed since the listing
		}
		if err != nil {
			return xs, buf, err
		}
		xs = append(xs, Xattr{Name: x, Value: v})
	}
	sort.Slice(xs, func(i, j int) bool { return xs[i].Name < xs[j].Name })
	return xs, buf, nil
}

func listxattrat(dfd int, p *byte, buf []byte) (int, error) {
	var bp unsafe.Pointer
	if len(buf) > 0 {
		bp = unsafe.Pointer(&buf[0])
	}
	n, _, e := unix.Syscall6(unix.SYS_LISTXATTRAT, uintptr(dfd), uintptr(unsafe.Pointer(p)), unix.AT_SYMLINK_NOFOLLOW,
		uintptr(bp), uintptr(len(buf)), 0)
	runtime.KeepAlive(p)
	runtime.KeepAlive(buf)
	if e != 0 {
		return 0, e
	}
	return int(n), nil
}

// xattrArgs is the kernel's struct xattr_args (include/uapi/linux/xattr.h).
type xattrArgs struct {
	value uint64
	size  uint32
	flags uint32
}

// getxattrAt reads one value of the node named p (NUL-terminated) in dfd.
func getxattrAt(dfd int, p *byte, attr string) ([]byte, error) {
	a, err := unix.BytePtrFromString(attr)
	if err != nil {
		return nil, err
	}
	buf := make([]byte, 128)
	for {
		args := xattrArgs{value: uint64(uintptr(unsafe.Pointer(&buf[0]))), size: uint32(len(buf))}
		n, _, e := unix.Syscall6(unix.SYS_GETXATTRAT, uintptr(dfd), uintptr(unsafe.Pointer(p)), unix.AT_SYMLINK_NOFOLLOW,
			uintptr(unsafe.Pointer(a)), uintptr(unsafe.Pointer(&args)), unsafe.Sizeof(args))
		runtime.KeepAlive(buf)
		runtime.KeepAlive(p)
		runtime.KeepAlive(a)
		switch {
		case e == unix.EINTR:
			continue
		case e == unix.ERANGE:
			buf = make([]byte, 2*len(buf)+1024)
			if len(buf) > 1<<20 {
				return nil, e
			}
			continue
		case e != 0:
			return nil, e
		}
		return buf[:n:n], nil
	}
}

// idNames reads the root's account databases once per observer, for the
// names in ACL messages; unreadable ones leave the ids as numbers.
func (o *Observer) idNames() Names {
	if o.names != nil {
		return *o.names
	}
	n := Names{Users: map[uint32]string{}, Groups: map[uint32]string{}}
	for i, f := range []string{"/etc/passwd", "/usr/lib/passwd", "/etc/group", "/usr/lib/group"} {
		data, err := o.dirs.root.ReadFile(f)
		if err != nil {
			continue
		}
		m := n.Users
		if i >= 2 {
			m = n.Groups
		}
		for _, l := range strings.Split(string(data), "\n") {
			fields := strings.Split(l, ":")
			if len(fields) < 3 || strings.HasPrefix(l, "#") {
				continue
			}
			id, err := strconv.ParseUint(fields[2], 10, 32)
			if _, dup := m[uint32(id)]; err == nil && !dup {
				m[uint32(id)] = fields[0]
			}
		}
	}
	o.names = &n
	return n
}

func openPath(dfd int, name string) (int, error) {
	for {
		fd, err := unix.Openat(dfd, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if !errors.Is(err, unix.EINTR) {
			return fd, err
		}
	}
}

// ReadXattrs lists the xattrs of p (following p itself when it is a
// /proc/self/fd link: the node the descriptor holds) and reads the value of
// each, sorted by name. A filesystem without xattrs has none.
func ReadXattrs(p string) ([]Xattr, error) {
	xs, _, err := readXattrs(make([]byte, 256),
		func(b []byte) (int, error) { return unix.Listxattr(p, b) },
		func(x string) ([]byte, error) { return getxattr(p, x) })
	return xs, err
}

// getxattr reads one value; nil without error when it is not there.
func getxattr(p, name string) ([]byte, error) {
	buf := make([]byte, 128)
	for {
		n, err := unix.Getxattr(p, name, buf)
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case errors.Is(err, unix.ERANGE):
			sz, err := unix.Getxattr(p, name, nil)
			if err != nil {
				return nil, err
			}
			buf = make([]byte, sz+16)
			continue
		case errors.Is(err, unix.ENODATA), errors.Is(err, unix.ENOTSUP):
			return nil, nil
		case err != nil:
			return nil, err
		}
		return buf[:n:n], nil
	}
}
