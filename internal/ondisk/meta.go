package ondisk

import (
	"bytes"
	"errors"
	"os"
	"runtime"
	"slices"
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
// z is name, NUL-terminated: the kernel's copy of it, made once for this
// call and the xattrs' (see ObserveContext).
func statxAt(dfd int, name string, z *byte, st *unix.Stat_t, m *Meta) error {
	var sx unix.Statx_t
	for {
		err := statx(dfd, z, unix.AT_SYMLINK_NOFOLLOW|unix.AT_STATX_DONT_SYNC, unix.STATX_BASIC_STATS, &sx)
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

// statx is unix.Statx of a name already NUL-terminated (unix.Statx copies
// its string into a new one at every call).
func statx(dfd int, z *byte, flags, mask int, sx *unix.Statx_t) error {
	_, _, e := unix.Syscall6(unix.SYS_STATX, uintptr(dfd), uintptr(unsafe.Pointer(z)), uintptr(flags), uintptr(mask),
		uintptr(unsafe.Pointer(sx)), 0)
	runtime.KeepAlive(z)
	if e != 0 {
		return e
	}
	return nil
}

// fdPath names an open descriptor for the path-based xattr calls.
func fdPath(fd int) string { return "/proc/self/fd/" + strconv.Itoa(fd) }

// xattrs lists and reads the xattrs of the node name in dfd, and, when it
// has an ACL, its parent's default ACL. On Linux 6.13 and later,
// listxattrat and getxattrat (AT_SYMLINK_NOFOLLOW) read them relative to the
// directory descriptor, one system call for a node without any (the common
// case, which costs no more than that); before, an O_PATH|O_NOFOLLOW
// descriptor of the node and the /proc/self/fd link to it. o.nbuf holds
// name, NUL-terminated (see ObserveContext).
func (o *Observer) xattrs(dfd int, name string, m *Meta) {
	m.Observed = true
	m.Xattrs, m.Err = o.readXattrs(dfd, name)
	o.parentACL(dfd, m)
}

// readXattrs reads the xattrs of the node name in dfd, by listxattrat and
// getxattrat where the kernel has them.
func (o *Observer) readXattrs(dfd int, name string) ([]Xattr, error) {
	if !noXattrat.Load() {
		xs, err := readXattrsWith(&o.xattr, atCalls{dfd: dfd, p: &o.nbuf[0]}, o.NoLabel)
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
	return readXattrsWith(&o.xattr, pathCalls(fdPath(fd)), o.NoLabel)
}

// xattrsOf is xattrs of the node open as fd (in dfd).
func (o *Observer) xattrsOf(fd, dfd int, m *Meta) {
	m.Observed = true
	m.Xattrs, m.Err = readXattrsWith(&o.xattr, fdCalls(fd), o.NoLabel)
	o.parentACL(dfd, m)
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

// xattrScratch is what reading one node's xattrs needs, kept by an
// Observer for the next node: the listing, the values as read, and where
// each lies. A full check reads the xattrs of every declared node, and on
// an SELinux host every node has one: allocating these per node was most
// of the metadata's cost (BenchmarkMetaCost). What a reading returns is copied out of
// them (readXattrsWith), so no Observation shares them.
type xattrScratch struct {
	list  []byte
	vals  []byte
	spans []xattrSpan
	// last is what the last reading returned: nodes side by side mostly
	// have the same xattrs (on an SELinux host, the same label), and the
	// same copy serves them all (no Observation changes what it holds).
	last []Xattr
}

// xattrSpan is one xattr in the scratch buffers: its name is
// list[name:nameEnd], its value vals[val:valEnd] (val < 0: not read).
type xattrSpan struct{ name, nameEnd, val, valEnd int }

// xattrCalls are the two system calls a reading makes, on one node: list
// fills buf with its NUL-terminated names, get reads the value of the name
// z (NUL-terminated) into buf. Both return the length the kernel gave, and
// its errno.
type xattrCalls interface {
	list(buf []byte) (int, error)
	get(z []byte, buf []byte) (int, error)
}

// atCalls reads the node p (NUL-terminated) in dfd without following it.
type atCalls struct {
	dfd int
	p   *byte
}

func (c atCalls) list(buf []byte) (int, error) { return listxattrat(c.dfd, c.p, buf) }
func (c atCalls) get(z, buf []byte) (int, error) {
	return getxattrat(c.dfd, c.p, &z[0], buf)
}

// fdCalls reads the node open as a descriptor (not O_PATH: flistxattr
// refuses those with EBADF).
type fdCalls int

func (c fdCalls) list(buf []byte) (int, error) { return unix.Flistxattr(int(c), buf) }
func (c fdCalls) get(z, buf []byte) (int, error) {
	var bp unsafe.Pointer
	if len(buf) > 0 {
		bp = unsafe.Pointer(&buf[0])
	}
	n, _, e := unix.Syscall6(unix.SYS_FGETXATTR, uintptr(c), uintptr(unsafe.Pointer(&z[0])), uintptr(bp), uintptr(len(buf)), 0, 0)
	runtime.KeepAlive(z)
	runtime.KeepAlive(buf)
	if e != 0 {
		return 0, e
	}
	return int(n), nil
}

// pathCalls reads the node a path names (a /proc/self/fd link: the node
// its descriptor holds).
type pathCalls string

func (c pathCalls) list(buf []byte) (int, error) { return unix.Listxattr(string(c), buf) }
func (c pathCalls) get(z, buf []byte) (int, error) {
	return unix.Getxattr(string(c), string(z[:len(z)-1]), buf)
}

// xattrValueMax bounds a value read: the kernel's XATTR_SIZE_MAX is 64 KiB.
const xattrValueMax = 1 << 20

// readXattrsWith lists the node's names with c and reads each value, into
// s's buffers (grown as needed), and returns them copied out, sorted by
// name: one allocation for the values of the node, one for the list, and
// none for the names the kernel and Ignition's writers give (see
// internXattrName). A filesystem without xattrs has none; a name gone since
// the listing is left out. noLabel lists the SELinux label without reading
// its value (nil).
func readXattrsWith[C xattrCalls](s *xattrScratch, c C, noLabel bool) ([]Xattr, error) {
	n, err := listInto(s, c)
	if err != nil || n == 0 {
		return nil, err
	}
	s.vals, s.spans = s.vals[:0], s.spans[:0]
	for i := 0; i < n; {
		j := bytes.IndexByte(s.list[i:n], 0)
		if j < 0 {
			return nil, unix.EINVAL // the kernel ends every name with a NUL
		}
		sp := xattrSpan{name: i, nameEnd: i + j, val: -1}
		i += j + 1
		switch {
		case sp.name == sp.nameEnd:
			continue
		case noLabel && string(s.list[sp.name:sp.nameEnd]) == XattrSELinux:
		default:
			ok, err := getInto(s, c, s.list[sp.name:sp.nameEnd+1], &sp)
			if err != nil {
				return nil, err
			}
			if !ok {
				continue // removed since the listing
			}
		}
		s.spans = append(s.spans, sp)
	}
	return s.copyOut(), nil
}

// listInto lists the names into s.list, growing it to the size the kernel
// asks for; ENOTSUP (a filesystem without xattrs) lists none.
func listInto[C xattrCalls](s *xattrScratch, c C) (int, error) {
	if s.list == nil {
		s.list = make([]byte, 1024)
	}
	for {
		n, err := c.list(s.list)
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case errors.Is(err, unix.ERANGE):
			sz, err := c.list(nil)
			if err != nil {
				return 0, err
			}
			s.list = make([]byte, sz+64)
			continue
		case errors.Is(err, unix.ENOTSUP):
			return 0, nil
		}
		return n, err
	}
}

// getInto appends the value of the name z (NUL-terminated) to s.vals and
// sets where it lies in sp; false when the node no longer has it.
func getInto[C xattrCalls](s *xattrScratch, c C, z []byte, sp *xattrSpan) (bool, error) {
	off := len(s.vals)
	room := 256
	for {
		s.vals = slices.Grow(s.vals[:off], room)
		n, err := c.get(z, s.vals[off:off+room])
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case errors.Is(err, unix.ERANGE) && room < xattrValueMax:
			room = 2*room + 1024
			continue
		case errors.Is(err, unix.ENODATA):
			s.vals = s.vals[:off]
			return false, nil
		case err != nil:
			s.vals = s.vals[:off]
			return false, err
		}
		s.vals = s.vals[:off+n]
		sp.val, sp.valEnd = off, off+n
		return true, nil
	}
}

// copyOut returns the xattrs in s's spans, in storage of their own (or
// shared with the last reading's, when they are the same).
func (s *xattrScratch) copyOut() []Xattr {
	if len(s.spans) == 0 {
		return nil
	}
	if s.sameAsLast() {
		return s.last
	}
	xs := make([]Xattr, len(s.spans))
	vals := []byte{}
	if len(s.vals) > 0 {
		vals = bytes.Clone(s.vals)
	}
	for k, sp := range s.spans {
		xs[k].Name = internXattrName(s.list[sp.name:sp.nameEnd])
		if sp.val >= 0 {
			xs[k].Value = vals[sp.val:sp.valEnd:sp.valEnd]
		}
	}
	slices.SortFunc(xs, func(a, b Xattr) int { return strings.Compare(a.Name, b.Name) })
	s.last = xs
	return xs
}

// sameAsLast: the spans hold what the last reading returned, name for
// name and value for value.
func (s *xattrScratch) sameAsLast() bool {
	if len(s.spans) != len(s.last) {
		return false
	}
	for _, sp := range s.spans {
		x, ok := findXattr(s.last, s.list[sp.name:sp.nameEnd])
		if !ok || (sp.val < 0) != (x.Value == nil) || sp.val >= 0 && !bytes.Equal(x.Value, s.vals[sp.val:sp.valEnd]) {
			return false
		}
	}
	return true
}

// findXattr is the xattr of xs named name.
func findXattr(xs []Xattr, name []byte) (Xattr, bool) {
	for _, x := range xs {
		if x.Name == string(name) {
			return x, true
		}
	}
	return Xattr{}, false
}

// internXattrName is name as a string, the ones nearly every node has
// without a copy of their own.
func internXattrName(name []byte) string {
	for _, k := range [...]string{XattrSELinux, XattrACLAccess, XattrACLDefault, XattrCapability} {
		if string(name) == k {
			return k
		}
	}
	return string(name)
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

// getxattrat reads into buf the value of the xattr attr (NUL-terminated)
// of the node p (NUL-terminated) in dfd, without following it.
func getxattrat(dfd int, p, attr *byte, buf []byte) (int, error) {
	args := xattrArgs{size: uint32(len(buf))}
	if len(buf) > 0 {
		args.value = uint64(uintptr(unsafe.Pointer(&buf[0])))
	}
	n, _, e := unix.Syscall6(unix.SYS_GETXATTRAT, uintptr(dfd), uintptr(unsafe.Pointer(p)), unix.AT_SYMLINK_NOFOLLOW,
		uintptr(unsafe.Pointer(attr)), uintptr(unsafe.Pointer(&args)), unsafe.Sizeof(args))
	runtime.KeepAlive(buf)
	runtime.KeepAlive(p)
	runtime.KeepAlive(attr)
	if e != 0 {
		return 0, e
	}
	return int(n), nil
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
