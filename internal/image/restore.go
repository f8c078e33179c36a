package image

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/drift-monitor/drift-monitor/internal/fsx"
	"github.com/drift-monitor/drift-monitor/internal/model"
	"github.com/drift-monitor/drift-monitor/internal/ondisk"
)

// Restoring an undeclared change to the image's default (`reconcile
// --image PATH`): a plan of plain desired entries — the image's nodes, as
// a config would declare them — that package reconcile writes as it writes
// any declared node, plus, for a path the image does not have, its removal.

// maxRestore bounds the content of one file read from the image to restore
// it: a file of /etc is kilobytes.
const maxRestore = 64 << 20

// Restoration is the plan that puts one path back as the image has it.
type Restoration struct {
	Path string
	// Entries are the image's nodes at and (for a directory the live /etc
	// lacks) under Path, shallowest first.
	Entries []model.Entry
	// Remove: the path is not the image's at all: the live node is
	// removed (a file, a link, an empty directory).
	Remove bool
	// Refused says why the path cannot be restored; Command is what the
	// admin can run instead.
	Refused, Command string
}

// Restore plans the restoration of the change c.
func (b *Baseline) Restore(ctx context.Context, r *ondisk.Root, c *Change) Restoration {
	rs := Restoration{Path: c.Path}
	switch {
	case c.Err != "":
		rs.Refused = "it could not be compared with the image: " + c.Err
	case b.RPM != nil:
		b.restoreRPM(c, &rs)
	case b.Tree != nil:
		b.Tree.restore(ctx, c, &rs)
	default:
		rs.Refused = b.Unavailable
	}
	return rs
}

// restoreRPM: rpm's database keeps a file's metadata and digest, never its
// content: a mode, an owner, a group, a link target, an empty directory
// can be put back; a content only by reinstalling the package.
func (b *Baseline) restoreRPM(c *Change, rs *Restoration) {
	reinstall := "dnf reinstall " + strings.ReplaceAll(c.Owner, ",", " ")
	if c.Op == Removed || c.What&(WContent|WDevice|WCaps) != 0 || c.What&WType != 0 && c.Base.Type != ondisk.Directory && c.Base.Type != ondisk.Symlink {
		rs.Refused = "the rpm database keeps no copy of the package's content"
		rs.Command = reinstall
		return
	}
	e := nodeEntry(c.Path, c.Base)
	if e.Kind == model.KindFile {
		e.Content = nil // the live content is the package's (rpm -V says so): not written
	}
	rs.Entries = []model.Entry{e}
}

// restore: the image's tree has every node whole.
func (t *Tree) restore(ctx context.Context, c *Change, rs *Restoration) {
	if c.Op == Added {
		rs.Remove = true
		if c.Live != nil && c.Live.Type == ondisk.Directory {
			if n, err := t.liveEntries(c.Path); err != nil || n > 0 {
				rs.Refused = fmt.Sprintf("the directory the image does not have holds %d entries: restore (or remove) them first", n)
				if err != nil {
					rs.Refused = "the directory the image does not have cannot be listed: " + errText(err)
				}
			}
		}
		return
	}
	whole := c.Op == Removed || c.What&WType != 0
	err := t.baseNodes(ctx, c.Path, whole, func(e model.Entry) { rs.Entries = append(rs.Entries, e) })
	if err != nil {
		rs.Refused, rs.Entries = err.Error(), nil
	}
}

func (t *Tree) baseRoot() *ondisk.Root {
	if t.BaseRoot != nil {
		return t.BaseRoot
	}
	return t.Root
}

// liveEntries counts what a live directory holds.
func (t *Tree) liveEntries(p string) (int, error) {
	fd, err := openRootDir(t.Root, p)
	if err != nil {
		return 0, err
	}
	defer unix.Close(fd)
	names, err := readNames(fd)
	return len(names), err
}

// baseNodes calls fn with the image's node at host path p (a Live path)
// as an entry and, with whole, every node under it, shallowest first.
func (t *Tree) baseNodes(ctx context.Context, p string, whole bool, fn func(model.Entry)) error {
	rel, ok := relUnder(p, t.Live)
	if !ok || rel == "" {
		return fmt.Errorf("%s is not under %s", p, t.Live)
	}
	br := t.baseRoot()
	dir, name := path.Split(path.Join(t.Base, rel))
	dfd, err := br.OpenDir(path.Clean(dir))
	if err != nil {
		return fmt.Errorf("the image's %s: %w", path.Clean(dir), err)
	}
	defer unix.Close(dfd)
	var walk func(dfd int, name, p string) error
	walk = func(dfd int, name, p string) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		var st unix.Stat_t
		if err := fstatat(dfd, name, &st); err != nil {
			return fmt.Errorf("the image's %s: %s", p, errText(err))
		}
		n := nodeOf(&st)
		e := nodeEntry(p, &n)
		switch n.Type {
		case ondisk.Other:
			return fmt.Errorf("the image has a special file at %s: not restored", p)
		case ondisk.Symlink:
			if e.Target, err = readlinkat(dfd, name); err != nil {
				return fmt.Errorf("the image's %s: %s", p, errText(err))
			}
		case ondisk.Regular:
			b, err := readBase(dfd, name, n.Size)
			if err != nil {
				return fmt.Errorf("the image's %s: %s", p, errText(err))
			}
			e.Content = &model.Content{Exact: b}
		}
		fn(e)
		if n.Type != ondisk.Directory || !whole {
			return nil
		}
		cfd, err := openDir(dfd, name)
		if err != nil {
			return fmt.Errorf("the image's %s: %s", p, errText(err))
		}
		defer unix.Close(cfd)
		names, err := readNames(cfd)
		if err != nil {
			return fmt.Errorf("the image's %s: %s", p, errText(err))
		}
		for _, cn := range names {
			if err := walk(cfd, cn, path.Join(p, cn)); err != nil {
				return err
			}
		}
		return nil
	}
	return walk(dfd, name, p)
}

func readBase(dfd int, name string, size int64) ([]byte, error) {
	if size > maxRestore {
		return nil, fmt.Errorf("larger than %d bytes", maxRestore)
	}
	fd, err := openRegular(dfd, name)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	buf := make([]byte, size)
	n, err := preadFull(fd, buf, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	return buf[:n], nil
}

// nodeEntry is a node as a config would declare it: its type, mode,
// owner, group and link target (content aside).
func nodeEntry(p string, n *Node) model.Entry {
	mode, uid, gid := n.Mode, int(n.UID), int(n.GID)
	e := model.Entry{Path: p, Mode: &mode, UID: &uid, GID: &gid}
	switch n.Type {
	case ondisk.Directory:
		e.Kind, e.Type = model.KindDirectory, model.TypeDirectory
	case ondisk.Symlink:
		e.Kind, e.Type, e.Mode, e.Target = model.KindLink, model.TypeSymlink, nil, n.Target
	default:
		e.Kind, e.Type = model.KindFile, model.TypeRegular
	}
	return e
}

// RemoveAdded removes the live node at host path p that the image does
// not have (Restoration.Remove): a file, a link, or an empty directory,
// through the one writer (fsx); its directory is synced.
func RemoveAdded(r *ondisk.Root, p string) error {
	dir, name := path.Split(p)
	dfd, err := r.OpenDir(path.Clean(dir))
	if err != nil {
		return err
	}
	defer unix.Close(dfd)
	var st unix.Stat_t
	if err := fstatat(dfd, name, &st); err != nil {
		return err
	}
	fs := fsx.Sys{}
	if err := fs.Remove(dfd, name, st.Mode&unix.S_IFMT == unix.S_IFDIR); err != nil {
		return err
	}
	return fs.SyncDir(dfd)
}
