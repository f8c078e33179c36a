// Package writers refuses a file that drift-monitor takes its settings
// from — a desired config, a first-boot record, the exclusion file — when
// a user other than root could have written it, or made another file
// stand in its place. What such a file says decides what reconcile writes
// as root, what the daemon reports and what it leaves alone: a user who
// could write one could hide a drift, or have /etc/shadow rewritten.
//
// The rule (Check): the file itself, and every node that the resolution
// of its path passes through from the root down — each directory entered,
// each symbolic link followed, the directory that holds it — must be owned
// by a trusted user (root; whoever runs the command; the owner of the
// root tree checked, a tree of theirs) and writable by no one else: no
// write bit for others, none for a group that is not trusted (root's
// group, or the group of whoever runs the command: a user's private group
// as umask 002 leaves it; the daemon and reconcile run as root and trust
// root's group only). A sticky directory (/tmp) may be writable by others:
// they may add names to it, not replace or remove one that is not theirs,
// and the next node on the path must be a trusted user's — except the
// directory a file was found in by listing it (a desired-state
// directory), where a name added is a config added. A link's mode means
// nothing; its owner is what may change it (in a sticky directory), and
// must be trusted.
//
// This is OpenSSH's StrictModes (misc.c, safe_path: the file and every
// directory of its canonical path up to "/" must be root's or the user's,
// and neither group- nor world-writable), followed along the path as it
// resolves rather than along the canonical path alone: the directory that
// holds a link on the way decides where the path leads as much as the one
// that holds the file. The walk starts at the root checked: what is above
// a tree given with --root is not in the tree (whoever runs the command
// named it), and the root directory itself is checked.
//
// It does not promise an atomic view: a node changed after the walk is seen
// at the next reading (the daemon reads its settings again when they
// change). A user who can write a node on the path keeps that access, so
// a path swapped and swapped back between the open and the walk is still
// refused.
package writers

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/drift-monitor/drift-monitor/internal/ondisk"
)

// ErrOthersMayWrite is wrapped by the error of a file that a user other
// than root could have written, or put in the place of another (Error).
var ErrOthersMayWrite = errors.New("a user other than root could have written it")

// Error says why a file is refused. Its message does not name the file:
// the caller does, as it names the file in its other errors.
type Error struct {
	// Node is the directory or link on the file's path that others may
	// write, as the caller names paths; "" for the file itself.
	Node string
	// Kind is what Node is: "directory" or "link".
	Kind string
	// Why gives its mode and owner, and who may write it.
	Why string
}

func (e *Error) Error() string {
	if e.Node == "" {
		return e.Why + ": " + ErrOthersMayWrite.Error()
	}
	return "through " + e.Kind + " " + e.Node + ": " + e.Why + ": " + ErrOthersMayWrite.Error()
}

func (e *Error) Unwrap() error { return ErrOthersMayWrite }

// Root is a tree whose paths Check walks: *ondisk.Root.
type Root interface {
	// Join names a host path inside the root, for messages.
	Join(hostPath string) string
	// Owner is the uid that owns the root directory.
	Owner() int
	// Walk visits the nodes of a host path's resolution (ondisk.Root.Walk).
	Walk(hostPath string, visit func(ondisk.Step) error) error
}

// Options say how a file was found and how paths are named.
type Options struct {
	// Listed: the file was found by listing the directory that holds it
	// (a desired-state directory); that directory may not be sticky.
	Listed bool
	// Name names a host path in the error; nil names it inside the root
	// (Root.Join).
	Name func(hostPath string) string
}

// Check refuses the file at host path p inside root, open as f (nil: the
// file is judged as the walk finds it), when a user other than a trusted
// one could have written it or a node on its path (see the package doc):
// an *Error. Any other error says why the path could not be walked.
func Check(root Root, p string, f *os.File, o Options) error {
	if o.Name == nil {
		o.Name = root.Join
	}
	return check(root, p, f, trustedBy(root.Owner()), o)
}

// CheckHost is Check of a path of this machine (absolute, or relative to
// the working directory), not of a root's host path: a config named on
// the command line. owner is trusted as a root tree's owner is.
func CheckHost(name string, f *os.File, owner int, o Options) error {
	abs, err := filepath.Abs(name)
	if err != nil {
		return err
	}
	r, err := ondisk.OpenRoot("/")
	if err != nil {
		return err
	}
	defer r.Close()
	if o.Name == nil {
		o.Name = func(p string) string { return p }
	}
	return check(r, abs, f, trustedBy(owner), o)
}

func check(root Root, p string, f *os.File, t trust, o Options) error {
	opened := false
	if f != nil {
		var st unix.Stat_t
		if err := unix.Fstat(int(f.Fd()), &st); err != nil {
			return err
		}
		if why := t.node(st.Uid, st.Gid, st.Mode, false); why != "" {
			return &Error{Why: why}
		}
		opened = true
	}
	return root.Walk(p, func(s ondisk.Step) error {
		var why, kind string
		switch s.Kind {
		case ondisk.StepEnd:
			if !opened {
				why = t.node(s.UID, s.GID, s.Mode, false)
			}
			if why != "" {
				return &Error{Why: why}
			}
			return nil
		case ondisk.StepLink:
			kind = "link"
			if !t.uid(s.UID) {
				why = fmt.Sprintf("owned by uid %d", s.UID)
			}
		case ondisk.StepHolder:
			kind, why = "directory", t.node(s.UID, s.GID, s.Mode, !o.Listed)
		default:
			kind, why = "directory", t.node(s.UID, s.GID, s.Mode, true)
		}
		if why != "" {
			return &Error{Node: o.Name(s.Path), Kind: kind, Why: why}
		}
		return nil
	})
}

// trust says which owners and groups may write.
type trust struct{ uids, gids [3]uint32 }

// trustedBy trusts root, whoever runs this and owner (the root tree's);
// root's group and that of whoever runs this.
func trustedBy(owner int) trust {
	euid, egid := uint32(os.Geteuid()), uint32(os.Getegid())
	return trust{uids: [3]uint32{0, euid, uint32(owner)}, gids: [3]uint32{0, egid, egid}}
}

func (t trust) uid(u uint32) bool { return u == t.uids[0] || u == t.uids[1] || u == t.uids[2] }

func (t trust) gid(g uint32) bool { return g == t.gids[0] || g == t.gids[1] || g == t.gids[2] }

// node describes who may write a node of this owner, group and mode (as
// st_mode), when that is not only trusted users; "" when it is. With
// stickyOK, a sticky directory's others are allowed (see the package doc).
func (t trust) node(uid, gid, mode uint32, stickyOK bool) string {
	perm := mode & 0o7777
	switch {
	case !t.uid(uid):
		return fmt.Sprintf("owned by uid %d (mode %04o)", uid, perm)
	case stickyOK && mode&unix.S_IFMT == unix.S_IFDIR && mode&unix.S_ISVTX != 0:
		return ""
	case mode&0o002 != 0:
		return fmt.Sprintf("mode %04o, owned by uid %d: writable by every user", perm, uid)
	case mode&0o020 != 0 && !t.gid(gid):
		return fmt.Sprintf("mode %04o, owned by uid %d and group %d: writable by that group", perm, uid, gid)
	}
	return ""
}
