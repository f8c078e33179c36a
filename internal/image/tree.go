package image

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"sort"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/drift-monitor/drift-monitor/internal/ondisk"
)

// Tree compares a pristine /etc (an ostree deployment's /usr/etc) with the
// live one by ostree's own rules, those of `ostree admin config-diff`
// (ostreedev/ostree src/ostree/ot-admin-builtin-diff.c:
// ostree_diff_dirs(OSTREE_DIFF_FLAGS_IGNORE_XATTRS, usr/etc, etc)), which
// are also what the next deployment's /etc merge takes for a local change
// (src/libostree/ostree-sysroot-deploy.c, merge_configuration_from):
//
//   - two nodes of different types (GFileType: a FIFO, a socket and a
//     device are all "special") are modified, and nothing under them is
//     compared (src/libostree/ostree-diff.c, ostree_diff_dirs_with_options);
//   - two nodes of a type are equal when the checksum ostree gives them is
//     (ostree-core.c, ostree_checksum_file_from_input): uid, gid and the
//     whole st_mode, a symbolic link's target, a regular file's content;
//     a directory's uid, gid and mode (ostree_create_directory_metadata).
//     Extended attributes are not compared (IGNORE_XATTRS: the labels of
//     /usr/etc and /etc differ by policy), nor are times, nor a device's
//     numbers (not in the header ostree sums);
//   - a directory of the baseline that is gone is one removal: its
//     children are not listed; a directory that was added is listed with
//     every node under it (diff_add_dir_recurse);
//   - the two /etc directories themselves are not compared, only what
//     they hold.
//
// Unlike config-diff, the changes come sorted by path, and a content is
// compared byte for byte (stopping at the first difference, and not at all
// when the sizes differ) rather than by hashing both files whole.
//
// Every path is resolved inside Root: the two directories through
// ondisk.Root (as openat2(RESOLVE_IN_ROOT)), everything under them
// relative to its parent's descriptor, never following a link. Only
// regular files are opened for reading (O_NONBLOCK: a FIFO swapped in
// between the stat and the open does not block).
type Tree struct {
	Root *ondisk.Root
	// BaseRoot, when set, is the root Base is resolved in (a copy of the
	// root mount without the one over /etc); Root otherwise.
	BaseRoot *ondisk.Root
	// Base is the host path of the pristine /etc (/usr/etc), Live that of
	// the live one (/etc); changes are named by their Live paths.
	Base, Live string
}

// Diff compares the whole trees.
func (t *Tree) Diff(ctx context.Context) ([]Change, error) {
	_, cs, err := t.DiffAt(ctx, t.Live)
	return cs, err
}

// DiffAt compares what a change at host path p (Live or under it) can have
// affected: it returns the scope — p itself, or the ancestor of p whose
// own change covers p (removed, added, or of another type, so that
// nothing under it is compared on its own) — and every change at or under
// that scope. A caller that keeps the changes of an earlier Diff replaces
// those at or under scope with cs.
func (t *Tree) DiffAt(ctx context.Context, p string) (scope string, cs []Change, err error) {
	p = path.Clean(p)
	rel, ok := relUnder(p, t.Live)
	if !ok {
		return "", nil, fmt.Errorf("%s is not under %s", p, t.Live)
	}
	br := t.BaseRoot
	if br == nil {
		br = t.Root
	}
	bfd, err := openRootDir(br, t.Base)
	if err != nil {
		return "", nil, fmt.Errorf("the image's %s: %w", t.Base, err)
	}
	defer unix.Close(bfd)
	lfd, err := openRootDir(t.Root, t.Live)
	if err != nil {
		return "", nil, fmt.Errorf("%s: %w", t.Live, err)
	}
	defer unix.Close(lfd)
	w := &walker{ctx: ctx}
	if rel == "" {
		if err := w.dir(bfd, lfd, t.Live); err != nil {
			return "", nil, err
		}
		return t.Live, w.out, nil
	}
	names := strings.Split(rel, "/")
	cur := t.Live
	// Walk down from the top: the first ancestor that is not a directory
	// on both sides is the scope.
	bdir, ldir := bfd, lfd
	var opened []int
	defer func() {
		for _, fd := range opened {
			unix.Close(fd)
		}
	}()
	for i, name := range names {
		cur = path.Join(cur, name)
		if i == len(names)-1 {
			break
		}
		var bst, lst unix.Stat_t
		berr := fstatat(bdir, name, &bst)
		lerr := fstatat(ldir, name, &lst)
		if !bothDirs(berr, lerr, &bst, &lst) {
			if err := w.entry(bdir, ldir, name, cur); err != nil {
				return "", nil, err
			}
			return cur, w.out, nil
		}
		nb, err1 := openDir(bdir, name)
		nl, err2 := openDir(ldir, name)
		if err := errors.Join(err1, err2); err != nil {
			closeAll(nb, nl)
			w.problem(cur, err)
			return cur, w.out, nil
		}
		opened = append(opened, nb, nl)
		bdir, ldir = nb, nl
	}
	if err := w.entry(bdir, ldir, names[len(names)-1], cur); err != nil {
		return "", nil, err
	}
	return cur, w.out, nil
}

func bothDirs(berr, lerr error, bst, lst *unix.Stat_t) bool {
	return berr == nil && lerr == nil && bst.Mode&unix.S_IFMT == unix.S_IFDIR && lst.Mode&unix.S_IFMT == unix.S_IFDIR
}

// relUnder is p relative to dir ("" for dir itself).
func relUnder(p, dir string) (string, bool) {
	if p == dir {
		return "", true
	}
	if dir == "/" {
		return strings.TrimPrefix(p, "/"), strings.HasPrefix(p, "/")
	}
	rest, ok := strings.CutPrefix(p, dir+"/")
	return rest, ok
}

// walker collects the changes of one comparison.
type walker struct {
	ctx  context.Context
	out  []Change
	a, b []byte
	// shallow compares one node: nothing under a directory.
	shallow bool
}

func (w *walker) problem(p string, err error) {
	w.out = append(w.out, Change{Path: p, Op: Modified, Err: errText(err)})
}

// dir compares the entries of two directories open for reading, the live
// one at host path lp.
func (w *walker) dir(bfd, lfd int, lp string) error {
	if err := w.ctx.Err(); err != nil {
		return err
	}
	bnames, berr := readNames(bfd)
	lnames, lerr := readNames(lfd)
	if err := errors.Join(berr, lerr); err != nil {
		w.problem(lp, err)
		return nil
	}
	i, j := 0, 0
	for i < len(bnames) || j < len(lnames) {
		switch {
		case j == len(lnames) || i < len(bnames) && bnames[i] < lnames[j]:
			if err := w.entry(bfd, lfd, bnames[i], path.Join(lp, bnames[i])); err != nil {
				return err
			}
			i++
		case i == len(bnames) || lnames[j] < bnames[i]:
			if err := w.entry(bfd, lfd, lnames[j], path.Join(lp, lnames[j])); err != nil {
				return err
			}
			j++
		default:
			if err := w.entry(bfd, lfd, bnames[i], path.Join(lp, bnames[i])); err != nil {
				return err
			}
			i++
			j++
		}
	}
	return nil
}

// entry compares one name of two directories (either may lack it), and
// what is under it.
func (w *walker) entry(bfd, lfd int, name, p string) error {
	var bst, lst unix.Stat_t
	berr := fstatat(bfd, name, &bst)
	lerr := fstatat(lfd, name, &lst)
	switch {
	case isNotExist(berr) && isNotExist(lerr):
		return nil
	case berr != nil && !isNotExist(berr) || lerr != nil && !isNotExist(lerr):
		w.problem(p, errors.Join(berr, lerr))
		return nil
	case isNotExist(lerr):
		bn := nodeOf(&bst)
		if bn.Type == ondisk.Symlink {
			bn.Target, _ = readlinkat(bfd, name)
		}
		w.out = append(w.out, Change{Path: p, Op: Removed, Base: &bn})
		return nil
	case isNotExist(berr):
		return w.added(lfd, name, p, &lst)
	}
	bn, ln := nodeOf(&bst), nodeOf(&lst)
	if bn.Type != ln.Type {
		w.fillTargets(bfd, lfd, name, &bn, &ln)
		w.out = append(w.out, Change{Path: p, Op: Modified, What: WType, Base: &bn, Live: &ln})
		return nil
	}
	what := metaDiff(&bn, &ln)
	switch bn.Type {
	case ondisk.Symlink:
		w.fillTargets(bfd, lfd, name, &bn, &ln)
		if bn.Target != ln.Target {
			what |= WTarget
		}
	case ondisk.Regular:
		if bn.Size != ln.Size {
			what |= WContent
		} else {
			same, err := w.sameContent(bfd, lfd, name, bn.Size)
			if err != nil {
				w.problem(p, err)
				return nil
			}
			if !same {
				what |= WContent
			}
		}
	}
	if what != 0 {
		w.out = append(w.out, Change{Path: p, Op: Modified, What: what, Base: &bn, Live: &ln})
	}
	if bn.Type != ondisk.Directory || w.shallow {
		return nil
	}
	nb, err1 := openDir(bfd, name)
	nl, err2 := openDir(lfd, name)
	defer closeAll(nb, nl)
	if err := errors.Join(err1, err2); err != nil {
		w.problem(p, err)
		return nil
	}
	return w.dir(nb, nl, p)
}

// added records an added node and, for a directory, every node under it.
func (w *walker) added(lfd int, name, p string, st *unix.Stat_t) error {
	ln := nodeOf(st)
	if ln.Type == ondisk.Symlink {
		ln.Target, _ = readlinkat(lfd, name)
	}
	w.out = append(w.out, Change{Path: p, Op: Added, Live: &ln})
	if ln.Type != ondisk.Directory || w.shallow {
		return nil
	}
	if err := w.ctx.Err(); err != nil {
		return err
	}
	fd, err := openDir(lfd, name)
	if err != nil {
		w.problem(p, err)
		return nil
	}
	defer unix.Close(fd)
	names, err := readNames(fd)
	if err != nil {
		w.problem(p, err)
		return nil
	}
	for _, n := range names {
		var cst unix.Stat_t
		if err := fstatat(fd, n, &cst); err != nil {
			if !isNotExist(err) {
				w.problem(path.Join(p, n), err)
			}
			continue
		}
		if err := w.added(fd, n, path.Join(p, n), &cst); err != nil {
			return err
		}
	}
	return nil
}

func (w *walker) fillTargets(bfd, lfd int, name string, bn, ln *Node) {
	if bn.Type == ondisk.Symlink {
		bn.Target, _ = readlinkat(bfd, name)
	}
	if ln.Type == ondisk.Symlink {
		ln.Target, _ = readlinkat(lfd, name)
	}
}

// metaDiff compares what ostree's checksum holds of a node besides its
// content and target: the whole mode (permissions and, for special
// files, which kind), uid and gid.
func metaDiff(b, l *Node) What {
	var w What
	if b.Mode != l.Mode || b.Fmt != l.Fmt {
		w |= WMode
	}
	if b.UID != l.UID {
		w |= WOwner
	}
	if b.GID != l.GID {
		w |= WGroup
	}
	return w
}

// compareChunk is how much of each file is read at a time.
const compareChunk = 64 << 10

// sameContent compares two regular files of size n byte for byte. A file
// that is not regular any more (replaced since the stat) is an error: the
// next look at the path compares it again.
func (w *walker) sameContent(bfd, lfd int, name string, n int64) (bool, error) {
	return w.sameContentAt(bfd, name, lfd, name, n)
}

// sameContentAt is sameContent of two files of any names.
func (w *walker) sameContentAt(bfd int, bname string, lfd int, lname string, n int64) (bool, error) {
	if n == 0 {
		return true, nil
	}
	bf, err := openRegular(bfd, bname)
	if err != nil {
		return false, err
	}
	defer unix.Close(bf)
	lf, err := openRegular(lfd, lname)
	if err != nil {
		return false, err
	}
	defer unix.Close(lf)
	if w.a == nil {
		w.a, w.b = make([]byte, compareChunk), make([]byte, compareChunk)
	}
	for off := int64(0); off < n; {
		if err := w.ctx.Err(); err != nil {
			return false, err
		}
		k := int64(compareChunk)
		if n-off < k {
			k = n - off
		}
		x, err := preadFull(bf, w.a[:k], off)
		if err != nil {
			return false, err
		}
		y, err := preadFull(lf, w.b[:k], off)
		if err != nil {
			return false, err
		}
		if x != y || !bytes.Equal(w.a[:x], w.b[:y]) {
			return false, nil
		}
		if x < int(k) {
			return true, nil // both shrank alike since the stat
		}
		off += k
	}
	return true, nil
}

// hashFile writes the whole file open as fd to h, reading buf's length
// at a time.
func hashFile(fd int, h io.Writer, buf []byte) error {
	for off := int64(0); ; {
		n, err := unix.Pread(fd, buf, off)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return err
		}
		if n == 0 {
			return nil
		}
		h.Write(buf[:n])
		off += int64(n)
	}
}

func preadFull(fd int, p []byte, off int64) (int, error) {
	n := 0
	for n < len(p) {
		k, err := unix.Pread(fd, p[n:], off+int64(n))
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return n, err
		}
		if k == 0 {
			break
		}
		n += k
	}
	return n, nil
}

// nodeOf is a node of an lstat.
func nodeOf(st *unix.Stat_t) Node {
	n := Node{Mode: st.Mode & 0o7777, UID: st.Uid, GID: st.Gid}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
		n.Type, n.Size = ondisk.Regular, st.Size
	case unix.S_IFDIR:
		n.Type = ondisk.Directory
	case unix.S_IFLNK:
		n.Type = ondisk.Symlink
	default:
		n.Type, n.Fmt = ondisk.Other, st.Mode&unix.S_IFMT
	}
	return n
}

func fstatat(dfd int, name string, st *unix.Stat_t) error { return ondisk.Lstatat(dfd, name, st) }

func isNotExist(err error) bool { return errors.Is(err, unix.ENOENT) }

func readlinkat(dfd int, name string) (string, error) { return ondisk.Readlinkat(dfd, name) }

// openRootDir opens a host directory inside r for listing.
func openRootDir(r *ondisk.Root, p string) (int, error) {
	pfd, err := r.OpenDir(p)
	if err != nil {
		return -1, err
	}
	defer unix.Close(pfd)
	return openDir(pfd, ".")
}

// openDir opens a directory under dfd for listing, never through a link.
func openDir(dfd int, name string) (int, error) {
	for {
		fd, err := unix.Openat(dfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if !errors.Is(err, unix.EINTR) {
			return fd, err
		}
	}
}

// openRegular opens a regular file under dfd for reading: never through a
// link, never blocking on a FIFO, and refusing whatever is not regular.
func openRegular(dfd int, name string) (int, error) {
	var fd int
	var err error
	for {
		fd, err = unix.Openat(dfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC|unix.O_NOCTTY, 0)
		if !errors.Is(err, unix.EINTR) {
			break
		}
	}
	if err != nil {
		return -1, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		unix.Close(fd)
		if err == nil {
			err = ondisk.ErrNotRegular
		}
		return -1, err
	}
	return fd, nil
}

func closeAll(fds ...int) {
	for _, fd := range fds {
		if fd >= 0 {
			unix.Close(fd)
		}
	}
}

// readNames lists a directory open for reading, sorted, without . and ..
func readNames(fd int) ([]string, error) {
	if _, err := unix.Seek(fd, 0, 0); err != nil {
		return nil, err
	}
	buf := make([]byte, 16<<10)
	var names []string
	for {
		n, err := unix.ReadDirent(fd, buf)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if n <= 0 {
			break
		}
		_, _, names = unix.ParseDirent(buf[:n], -1, names)
	}
	sort.Strings(names)
	return names, nil
}

// errText is an error's text without the wrapping path (the change names it).
func errText(err error) string {
	var errno unix.Errno
	if errors.As(err, &errno) {
		return errno.Error()
	}
	return err.Error()
}
