package ondisk

import (
	"errors"
	"path"
	"strconv"
	"strings"

	"github.com/drift-monitor/drift-monitor/internal/model"
	"golang.org/x/sys/unix"
)

// Where a declared path is.
//
// Ignition writes a file through the symbolic links it finds among the
// file's parent directories (internal/exec/util/util.go, Util.JoinPath:
// every parent component is resolved, rooted at the destination, one link at
// a time), and it resolves every path before it creates anything
// (internal/exec/stages/files/filesystemEntries.go, getOrderedCreationList):
// the links it follows are the image's own (/home -> var/home,
// /usr/local -> ../var/usrlocal on Fedora CoreOS, /etc/ssl/certs ->
// ../pki/tls/certs on Fedora) and the config's declared links. The observer
// follows exactly those:
//
//   - a link the config declares, when it has the declared target;
//   - a link the config does not declare, when the root's owner made it
//     (root on a live host) and it leads into a directory every user may
//     enter, as the image's links do.
//
// Any other link among the parents — a declared directory that is a link
// now, a declared link with another target, a link another user made, or one
// into a directory not everyone may enter — moves the path out of its
// declared location: the observation reports the link (Observation.Detour)
// and nothing below it is opened. The daemon can read what its
// CAP_DAC_READ_SEARCH lets it; whoever made such a link may not, and must
// not learn it from the monitor's reports.

// Declared is what a desired state declares at the paths a resolution may
// meet as parent directories: its symbolic links, with their targets, and
// its directories. A nil *Declared declares nothing.
type Declared struct {
	links map[string]string
	dirs  map[string]bool
}

// Declare collects the links and directories among entries.
func Declare(entries []model.Entry) *Declared {
	d := &Declared{links: map[string]string{}, dirs: map[string]bool{}}
	for i := range entries {
		switch e := &entries[i]; e.Type {
		case model.TypeSymlink:
			d.links[e.Path] = e.Target
		case model.TypeDirectory:
			d.dirs[e.Path] = true
		}
	}
	return d
}

func (d *Declared) link(p string) (target string, ok bool) {
	if d == nil {
		return "", false
	}
	target, ok = d.links[p]
	return target, ok
}

func (d *Declared) dir(p string) bool { return d != nil && d.dirs[p] }

// Detour is a symbolic link among a declared path's parent directories that
// the observer did not follow: the path is not where it was declared.
type Detour struct {
	// Path is the link's host path, where the resolution met it.
	Path string
	// Target is the link's target, as written.
	Target string
	// Want is the target the config declares for this link; "" when the
	// config declares none (the link stands where a directory should).
	Want string
}

// locateDir opens a host directory that holds declared paths: like openDir,
// but a symbolic link on the way is followed only as the package doc says;
// any other ends the resolution with a Detour (and no descriptor).
func (r *Root) locateDir(hostDir string, decl *Declared) (int, *Detour, error) {
	fd, _, detour, err := r.locate(hostDir, decl)
	return fd, detour, err
}

// locate is locateDir, and the host path the directory resolved to: where
// Ignition's JoinPath, which follows the same links, put what it wrote
// there (hostDir itself when no link was on the way).
func (r *Root) locate(hostDir string, decl *Declared) (int, string, *Detour, error) {
	rel := relative(hostDir)
	// Most paths have no link on the way: one system call says so.
	fd, ok, err := r.openat2(rel, unix.RESOLVE_IN_ROOT|unix.RESOLVE_NO_MAGICLINKS|unix.RESOLVE_NO_SYMLINKS)
	if ok && !errors.Is(err, unix.ELOOP) {
		return fd, hostDir, nil, err
	}
	return r.walk(rel, decl, true)
}

// level is a directory the walk is in: its descriptor and host path.
type level struct {
	fd   int
	path string
}

// checkMark, followed by an index into the walk's links, is queued after a
// link's target: when the walk reaches it, the target is resolved and the
// link can be judged by where it led. A NUL never occurs in a component.
const checkMark = "\x00"

// walk is openat2(RESOLVE_IN_ROOT) in user space: it resolves rel component
// by component with O_NOFOLLOW, expanding symlinks as if the root were /,
// never leaving it ("..", absolute targets). With judge, every link is
// judged as the package doc says before the walk goes on below it. One
// system call per component or more: used where openat2 is unavailable or a
// link is on the way.
func (r *Root) walk(rel string, decl *Declared, judge bool) (int, string, *Detour, error) {
	return r.walkWith(&walker{decl: decl, judge: judge}, rel)
}

// walkWith is walk with the walker w (its judgement, its visit).
func (r *Root) walkWith(w *walker, rel string) (int, string, *Detour, error) {
	fd, err := unix.Dup(r.fd)
	if err != nil {
		return -1, "", nil, err
	}
	w.r, w.todo, w.cur = r, strings.Split(rel, "/"), level{fd, "/"}
	for len(w.todo) > 0 {
		c := w.todo[0]
		w.todo = w.todo[1:]
		if detour, err := w.step(c); err != nil || detour != nil {
			w.closeAll()
			return -1, "", detour, err
		}
	}
	for _, l := range w.stack {
		unix.Close(l.fd)
	}
	return w.cur.fd, w.cur.path, nil, nil
}

// walker is the state of one walk.
type walker struct {
	r     *Root
	decl  *Declared
	judge bool
	todo  []string // the components left, checkMarks included
	cur   level    // fd -1 once closed
	stack []level  // the directories above cur, for ".."
	links []Detour // the links whose targets are being resolved
	// visit, when set, is told of every directory entered and every link
	// followed (Walk); its error ends the walk.
	visit func(Step) error
}

func (w *walker) closeAll() {
	if w.cur.fd >= 0 {
		unix.Close(w.cur.fd)
		w.cur.fd = -1
	}
	for _, l := range w.stack {
		unix.Close(l.fd)
	}
	w.stack = nil
}

// step resolves one component: it descends into a directory, follows a
// link, or judges a link whose target it has reached (a checkMark). It
// returns the detour that ends the walk, if any.
func (w *walker) step(c string) (*Detour, error) {
	switch {
	case c == "" || c == ".":
		return nil, nil
	case c == "..":
		if len(w.stack) > 0 {
			unix.Close(w.cur.fd)
			w.cur, w.stack = w.stack[len(w.stack)-1], w.stack[:len(w.stack)-1]
		}
		return nil, nil
	case strings.HasPrefix(c, checkMark):
		i, _ := strconv.Atoi(c[len(checkMark):])
		open, err := w.r.reachable(w.cur.fd)
		if err != nil || open {
			return nil, err
		}
		return &w.links[i], nil
	}
	fd, err := unix.Openat(w.cur.fd, c, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, err
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		w.stack = append(w.stack, w.cur)
		w.cur = level{fd, path.Join(w.cur.path, c)}
		return nil, w.tell(StepDir, w.cur.path, &st)
	case unix.S_IFLNK:
		unix.Close(fd)
		if err := w.tell(StepLink, path.Join(w.cur.path, c), &st); err != nil {
			return nil, err
		}
		return w.follow(c, int(st.Uid))
	default:
		unix.Close(fd)
		return nil, unix.ENOTDIR
	}
}

// follow reads the link c in the current directory (owned by uid), judges
// it when the walk judges, and queues its target's components.
func (w *walker) follow(c string, uid int) (*Detour, error) {
	if len(w.links) >= maxSymlinks {
		return nil, unix.ELOOP
	}
	target, err := readlinkat(w.cur.fd, c)
	if err != nil {
		return nil, err
	}
	link := Detour{Path: path.Join(w.cur.path, c), Target: target}
	w.links = append(w.links, link)
	if w.judge {
		if d := w.judgeLink(link, uid); d != nil {
			return d, nil
		}
	}
	if strings.HasPrefix(target, "/") {
		// Absolute: from the root again.
		w.closeAll()
		fd, err := unix.Dup(w.r.fd)
		if err != nil {
			return nil, err
		}
		w.cur = level{fd, "/"}
	}
	w.todo = append(strings.Split(target, "/"), w.todo...)
	return nil, nil
}

// judgeLink judges a link on the way, as the package doc says: nil when the
// walk goes on through it (for an image's link, to be judged again where
// its target leads: a checkMark queued after the target), else the detour.
func (w *walker) judgeLink(link Detour, uid int) *Detour {
	want, declared := w.decl.link(link.Path)
	switch {
	case declared && link.Target == want:
		// Followed as Ignition followed it.
	case declared:
		link.Want = want
		return &link
	case w.decl.dir(link.Path) || !w.r.trustedOwner(uid):
		return &link
	default:
		// The image's link, if it leads where anyone may go.
		w.todo = append([]string{checkMark + strconv.Itoa(len(w.links)-1)}, w.todo...)
	}
	return nil
}

// trustedOwner reports whether a link's owner is the root's: root, or
// whoever owns a tree checked with --root.
func (r *Root) trustedOwner(uid int) bool { return uid == 0 || uid == r.uid }

// maxDepth bounds the climb of reachable (PATH_MAX / 2: "a/" per level).
const maxDepth = unix.PathMax / 2

// reachable reports whether every user may enter the directory dirfd: it
// and each directory above it, up to the root, grant others search (x).
// The root itself is not asked: a tree checked with --root may be private
// to whoever checks it, and is / to what is inside. The climb goes through
// "..", so it follows where the directory really is (past bind mounts),
// not the path it was reached by.
func (r *Root) reachable(dirfd int) (bool, error) {
	cur, err := unix.Dup(dirfd)
	if err != nil {
		return false, err
	}
	defer func() { unix.Close(cur) }()
	var prev unix.Stat_t
	for i := 0; i < maxDepth; i++ {
		var st unix.Stat_t
		if err := unix.Fstat(cur, &st); err != nil {
			return false, err
		}
		switch {
		case st.Dev == r.dev && st.Ino == r.ino:
			return true, nil
		case i > 0 && st.Dev == prev.Dev && st.Ino == prev.Ino:
			// The top of the mount namespace, and the root was not on the
			// way: the directory is not inside the root (any more).
			return false, nil
		case st.Mode&0o001 == 0:
			return false, nil
		}
		prev = st
		up, err := unix.Openat(cur, "..", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return false, err
		}
		unix.Close(cur)
		cur = up
	}
	return false, nil
}
