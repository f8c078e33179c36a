package image

import (
	"context"
	"errors"
	"io/fs"
	"path"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/drift-monitor/drift-monitor/internal/ondisk"
)

// systemd-confext merges configuration extensions over /etc as a
// read-only overlay, and marks the merged tree with a directory of its
// own (systemd src/sysext/sysext.c: image_class_info[IMAGE_CONFEXT],
// ".systemd-confext", whose "dev" holds the overlay's device — a tree whose
// device differs is a copy, not a merge: is_our_mount_point — and whose
// "confexts" lists the merged extensions' names). Extensions are found by
// name in confext's search path (src/shared/discover-image.c,
// image_search_path[IMAGE_CONFEXT]).
const (
	confextDir = EtcDir + "/.systemd-confext"
)

var confextSearchPath = []string{"/run/confexts", "/var/lib/confexts", "/usr/local/lib/confexts", "/usr/lib/confexts"}

// Extensions are the confexts merged over /etc.
type Extensions struct {
	// Dirs are the merged extensions that are directories (host paths),
	// by name; Opaque names those whose files cannot be read (a disk
	// image, or not found).
	Dirs   map[string]string
	Names  []string
	Opaque []string
	root   *ondisk.Root
	raw    []byte
}

// ReadExtensions reads which confexts are merged over the root's /etc.
// None is an empty set.
func ReadExtensions(r *ondisk.Root) (*Extensions, error) {
	x := &Extensions{Dirs: map[string]string{}, root: r}
	list, err := r.ReadFile(confextDir + "/confexts")
	if errors.Is(err, fs.ErrNotExist) {
		return x, nil
	}
	if err != nil {
		return nil, err
	}
	if !mergedHere(r) {
		return x, nil
	}
	x.raw = list
	for _, n := range strings.Split(string(list), "\n") {
		n = strings.TrimSpace(n)
		if n == "" || strings.Contains(n, "/") {
			continue
		}
		x.Names = append(x.Names, n)
		found := false
		for _, d := range confextSearchPath {
			p := path.Join(d, n)
			if isDir(r, path.Join(p, "etc")) {
				x.Dirs[n] = p
				found = true
				break
			}
		}
		if !found {
			x.Opaque = append(x.Opaque, n)
		}
	}
	return x, nil
}

// mergedHere: .systemd-confext/dev names the device /etc is on.
func mergedHere(r *ondisk.Root) bool {
	b, err := r.ReadFile(confextDir + "/dev")
	if err != nil {
		return false
	}
	var st unix.Stat_t
	fd, err := r.OpenDir(EtcDir)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	if err := unix.Fstat(fd, &st); err != nil {
		return false
	}
	maj, min, ok := strings.Cut(strings.TrimSpace(string(b)), ":")
	return ok && maj == strconv.FormatUint(uint64(unix.Major(st.Dev)), 10) && min == strconv.FormatUint(uint64(unix.Minor(st.Dev)), 10)
}

// Unknown says which merged extensions' files cannot be known (a disk
// image, or not found in the search path): what they provide is taken for
// undeclared changes. "" when there is none.
func (x *Extensions) Unknown() string {
	if x == nil || len(x.Opaque) == 0 {
		return ""
	}
	return "the files of the merged confext " + strings.Join(x.Opaque, ", ") + " cannot be read (a disk image, or not in " +
		strings.Join(confextSearchPath, ", ") + "): what it provides is reported as undeclared"
}

func (x *Extensions) stamp() string {
	if x == nil || len(x.raw) == 0 {
		return ""
	}
	return ";confexts:" + strings.Join(x.Names, ",")
}

// Provides says which merged extension explains the live node at host
// path p: one whose own etc has a node there that the live one equals
// by the comparison's rules (a local change made over an extension's
// file, through a mutable merge, is not the extension's). "" when none.
func (x *Extensions) Provides(ctx context.Context, p string) string {
	if x == nil {
		return ""
	}
	rel, ok := relUnder(p, EtcDir)
	if !ok || rel == "" {
		return ""
	}
	for _, n := range x.Names {
		dir, ok := x.Dirs[n]
		if !ok {
			continue
		}
		t := &Tree{Root: x.root, Base: path.Join(dir, "etc"), Live: EtcDir}
		if t.sameNode(ctx, rel) {
			return n
		}
	}
	return ""
}

// sameNode reports whether Base and Live both have a node at rel and
// the two are equal (nothing under a directory compared).
func (t *Tree) sameNode(ctx context.Context, rel string) bool {
	dir, name := path.Split(rel)
	br := t.BaseRoot
	if br == nil {
		br = t.Root
	}
	bfd, err := br.OpenDir(path.Join(t.Base, dir))
	if err != nil {
		return false
	}
	defer unix.Close(bfd)
	lfd, err := t.Root.OpenDir(path.Join(t.Live, dir))
	if err != nil {
		return false
	}
	defer unix.Close(lfd)
	var st unix.Stat_t
	if fstatat(bfd, name, &st) != nil || fstatat(lfd, name, &st) != nil {
		return false
	}
	w := &walker{ctx: ctx, shallow: true}
	if err := w.entry(bfd, lfd, name, path.Join(t.Live, rel)); err != nil {
		return false
	}
	return len(w.out) == 0
}
