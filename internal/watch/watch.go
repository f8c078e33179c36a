// Package watch keeps inotify watches on the directories that hold declared
// paths and on every directory on the way to them from the root, and
// delivers what happens to the names in them.
//
// Why raw inotify and not fsnotify: telling a complete write from a write in
// progress is the crux of a drift monitor that must not report a half-written
// file (the original MCO monitor marked nodes Degraded that way). inotify's
// IN_CLOSE_WRITE is the exact signal: the writer closed the file. fsnotify
// 1.10 receives it but keeps the operation unexported. The alternatives are
// worse: a read lease (F_SETLEASE) tells whether a writer holds the file open,
// but needs CAP_LEASE, and while we hold it a writer's open() blocks until
// the lease breaks; scanning /proc/*/fdinfo costs O(processes) per event. So
// this package reads inotify itself through golang.org/x/sys/unix; the daemon
// still uses fsnotify where its portable events are enough (the desired-state
// directories).
//
// It promises: every existing directory on the way from the root to one that
// holds declared paths is watched, so that moving, deleting or replacing any
// of them (by another directory, a file, or a symlink to elsewhere) is seen
// in its parent and delivered as a Rewatched event on its path, after the
// watches below it have been placed on what stands there now; a directory
// that does not exist yet is covered that way by its nearest existing
// ancestor, and the watches move down as directories appear; the cost of an
// event is that of what lies under the name it is about, whatever the number
// of paths elsewhere; a watch that cannot be added because the inotify limit
// is reached is reported (Exhausted) and every directory holding declared
// paths that it leaves unwatched or unguarded is listed by Polled, never
// dropped silently; a queue overflow is delivered as an Overflow event.
//
// A symlink on the way is followed where it points when the watches are
// placed: its own replacement or retargeting is seen in its parent, and the
// move or deletion of its target directory on that target's watch. It does
// not promise to see the directories above a symlink's target move (with
// /etc/app -> /opt/app, renaming /opt), unless they are themselves on the way
// to declared paths; the periodic full check covers that.
package watch

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path"
	"sort"
	"strings"
	"sync"
	"unsafe"

	"github.com/drift-monitor/drift-monitor/internal/ondisk"
	"golang.org/x/sys/unix"
)

// Op says what happened to a name.
type Op uint32

const (
	// Write: a writer closed the file after writing (IN_CLOSE_WRITE): the
	// write is complete.
	Write Op = 1 << iota
	// Modify: bytes were written or the file truncated; the writer may still
	// be going.
	Modify
	// Create: the name appeared (a new file may still be written).
	Create
	// MovedTo: another file was renamed onto the name (complete).
	MovedTo
	// Remove: the name was deleted or renamed away.
	Remove
	// Attrib: mode, owner or link count changed.
	Attrib
	// Overflow: the kernel dropped events; everything must be re-checked.
	Overflow
	// Rewatched: watches under Path changed (a directory appeared or
	// vanished); every declared path under it must be re-checked.
	Rewatched
)

var opNames = []string{"Write", "Modify", "Create", "MovedTo", "Remove", "Attrib", "Overflow", "Rewatched"}

// String names the bits of o, as "Create|Rewatched" (for messages and tests).
func (o Op) String() string {
	var names []string
	for i, n := range opNames {
		if o&(1<<i) != 0 {
			names = append(names, n)
		}
	}
	if rest := o &^ (1<<len(opNames) - 1); rest != 0 || len(names) == 0 {
		names = append(names, fmt.Sprintf("0x%x", uint32(rest)))
	}
	return strings.Join(names, "|")
}

// Event is something that happened to the name Path (a host path).
type Event struct {
	Path  string
	Op    Op
	IsDir bool
}

// dirMask is for a directory that holds declared paths: everything that can
// change one of them.
const dirMask = unix.IN_CLOSE_WRITE | unix.IN_MODIFY | unix.IN_CREATE | unix.IN_MOVED_TO |
	unix.IN_MOVED_FROM | unix.IN_DELETE | unix.IN_ATTRIB | unix.IN_DELETE_SELF | unix.IN_MOVE_SELF |
	unix.IN_ONLYDIR | unix.IN_EXCL_UNLINK

// routeMask is for a directory that is only on the way to declared paths
// (/, /etc, /var/log when /var/log/app holds some): names appearing,
// vanishing or renamed there, and the directory itself going. Not writes nor
// attribute changes: those of undeclared files in /var/log or /etc would be
// dropped here anyway, after filling the kernel's queue, whose overflow costs
// a full check. The attributes of a directory on the way do not change what
// is declared below it (the daemon reads with CAP_DAC_READ_SEARCH).
const routeMask = unix.IN_CREATE | unix.IN_MOVED_TO | unix.IN_MOVED_FROM | unix.IN_DELETE |
	unix.IN_DELETE_SELF | unix.IN_MOVE_SELF | unix.IN_ONLYDIR

// ErrExhausted is returned (wrapped) when the inotify watch limit is reached.
var ErrExhausted = errors.New("inotify watches exhausted (fs.inotify.max_user_watches)")

// node is a directory on the way to declared paths (a route): one that holds
// some (wanted) or an ancestor of one. The nodes form a tree from "/".
// Invariant: a node has a watch only if its parent has one, so that the
// parent's watch sees it appear, vanish or be replaced.
type node struct {
	path   string
	parent *node
	kids   []*node
	wanted bool
	wd     int32 // its watch; 0 for none (inotify's descriptors start at 1)
}

// Watcher watches the directories that hold a set of paths, and every
// directory on the way to them.
type Watcher struct {
	root *ondisk.Root
	file *os.File
	fd   int

	mu sync.Mutex
	// nodes: the routes by host path; top is "/".
	nodes map[string]*node
	top   *node
	// byWD: the routes a watch descriptor stands for (two host paths may
	// resolve to one directory).
	byWD    map[int32][]*node
	watched int
	// polled: wanted directories that lack a watch, or one on the way to
	// them, because the limit was reached: their paths must be polled.
	polled map[string]bool
	// onMissing, in tests, runs when a directory was found missing: it
	// creates it to reproduce the race with a concurrent mkdir. limit, in
	// tests, is a watch limit of the watcher's own (0: the kernel's).
	onMissing func(dir string)
	limit     int
}

// New starts an inotify instance for directories inside root.
func New(root *ondisk.Root) (*Watcher, error) {
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return nil, fmt.Errorf("inotify_init1: %w", err)
	}
	return &Watcher{
		root: root, fd: fd, file: os.NewFile(uintptr(fd), "inotify"),
		nodes: map[string]*node{}, byWD: map[int32][]*node{}, polled: map[string]bool{},
	}, nil
}

// Close stops the watcher; a blocked Read returns.
func (w *Watcher) Close() error { return w.file.Close() }

// Watch makes the set of directories to watch exactly dirs (host paths),
// with every directory on the way to them. Directories that do not exist
// are covered by their nearest existing ancestor. It returns ErrExhausted
// (wrapped) when some could not be watched; those are listed by Polled.
func (w *Watcher) Watch(dirs []string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	old := w.nodes
	w.nodes, w.top = map[string]*node{}, nil
	for _, d := range dirs {
		w.nodeLocked(path.Join("/", d)).wanted = true
	}
	// Keep the watches still needed with the same mask; drop the others
	// (one whose mask changes is placed again below).
	for p, o := range old {
		if o.wd == 0 {
			continue
		}
		n := w.nodes[p]
		if n == nil || n.wanted != o.wanted {
			w.unwatchLocked(o)
			continue
		}
		n.wd = o.wd
		for i, x := range w.byWD[o.wd] {
			if x == o {
				w.byWD[o.wd][i] = n
			}
		}
	}
	w.polled = map[string]bool{}
	return w.coverLocked(w.top)
}

// nodeLocked returns the route p, adding it and its ancestors if new.
func (w *Watcher) nodeLocked(p string) *node {
	if n := w.nodes[p]; n != nil {
		return n
	}
	n := &node{path: p}
	w.nodes[p] = n
	if p == "/" {
		w.top = n
		return n
	}
	n.parent = w.nodeLocked(path.Dir(p))
	n.parent.kids = append(n.parent.kids, n)
	return n
}

func dirsOf(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for d := range m {
		out = append(out, d)
	}
	sort.Strings(out)
	return out
}

// coverLocked watches n and the routes below it, from the top down: a
// directory is tried only once its parent is watched, so that one created,
// moved in or replaced meanwhile makes an event there and none goes unseen.
// Where a directory does not exist (or is not one), what lies below waits
// for that event.
func (w *Watcher) coverLocked(n *node) error {
	if n == nil {
		return nil
	}
	if n.wd == 0 {
		err := w.addLocked(n)
		if errors.Is(err, ErrExhausted) {
			w.pollLocked(n)
			return err
		}
		if err != nil {
			// ENOENT, ENOTDIR, ELOOP: not there (yet).
			if w.onMissing != nil {
				w.onMissing(n.path)
			}
			return nil
		}
	}
	var exhausted error
	for _, k := range n.kids {
		if err := w.coverLocked(k); err != nil {
			exhausted = err
		}
	}
	return exhausted
}

// coverAgainLocked covers n, starting from its topmost ancestor without a
// watch (all below that one have none either).
func (w *Watcher) coverAgainLocked(n *node) error {
	from := n
	for a := n.parent; a != nil; a = a.parent {
		if a.wd == 0 {
			from = a
		}
	}
	return w.coverLocked(from)
}

// pollLocked lists the wanted directories at or under n as polled: without
// a watch on n, nothing says when they move.
func (w *Watcher) pollLocked(n *node) {
	if n.wanted {
		w.polled[n.path] = true
	}
	for _, k := range n.kids {
		w.pollLocked(k)
	}
}

func (w *Watcher) addLocked(n *node) error {
	dfd, err := w.root.OpenDir(n.path)
	if err != nil {
		return err
	}
	defer unix.Close(dfd)
	if w.limit > 0 && w.watched >= w.limit {
		return fmt.Errorf("watching %s: %w", n.path, ErrExhausted)
	}
	mask := uint32(routeMask)
	if n.wanted {
		mask = dirMask
	}
	// Another route may resolve to the same directory (through a symlink)
	// and share its watch: IN_MASK_ADD keeps the union of their masks
	// rather than the last one (fs/notify/inotify/inotify_user.c,
	// inotify_update_existing_watch).
	wd, err := unix.InotifyAddWatch(w.fd, fmt.Sprintf("/proc/self/fd/%d", dfd), mask|unix.IN_MASK_ADD)
	if err != nil {
		if errors.Is(err, unix.ENOSPC) {
			return fmt.Errorf("watching %s: %w", n.path, ErrExhausted)
		}
		return fmt.Errorf("watching %s: %w", n.path, err)
	}
	n.wd = int32(wd)
	w.byWD[n.wd] = append(w.byWD[n.wd], n)
	w.watched++
	return nil
}

// unwatchLocked drops n's watch, and the kernel's once no route shares it.
func (w *Watcher) unwatchLocked(n *node) {
	wd := n.wd
	n.wd = 0
	w.watched--
	rest := w.byWD[wd][:0]
	for _, x := range w.byWD[wd] {
		if x != n {
			rest = append(rest, x)
		}
	}
	if len(rest) == 0 {
		delete(w.byWD, wd)
		unix.InotifyRmWatch(w.fd, uint32(wd))
		return
	}
	w.byWD[wd] = rest
}

// rewatchLocked drops the watches at and under n and covers n again: what
// stands at its path now may be another directory, a file, a symlink to
// elsewhere, or nothing. It costs what lies under n, whatever the number of
// routes elsewhere.
func (w *Watcher) rewatchLocked(n *node) error {
	w.dropLocked(n)
	return w.coverAgainLocked(n)
}

func (w *Watcher) dropLocked(n *node) {
	if n.wd != 0 {
		w.unwatchLocked(n)
	}
	delete(w.polled, n.path)
	for _, k := range n.kids {
		w.dropLocked(k)
	}
}

// Polled lists the wanted directories that have no watch because the limit
// was reached; their paths must be polled.
func (w *Watcher) Polled() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return dirsOf(w.polled)
}

// Retry tries again to watch the polled directories; it returns
// ErrExhausted (wrapped) while some still cannot be watched.
func (w *Watcher) Retry() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	dirs := dirsOf(w.polled)
	w.polled = map[string]bool{}
	var exhausted error
	for _, d := range dirs {
		if n := w.nodes[d]; n != nil {
			if err := w.coverAgainLocked(n); err != nil {
				exhausted = err
			}
		}
	}
	return exhausted
}

// Read blocks until events arrive and returns them. The error
// ErrExhausted (wrapped) comes with events when a directory that appeared
// could not be watched. Read returns os.ErrClosed after Close.
func (w *Watcher) Read(buf []byte) ([]Event, error) {
	for {
		n, err := w.file.Read(buf)
		if err != nil {
			return nil, err
		}
		evs, err := w.parse(buf[:n])
		if len(evs) > 0 || err != nil {
			return evs, err
		}
	}
}

// ReadBufferSize fits a burst of events with long names.
const ReadBufferSize = 64 << 10

func (w *Watcher) parse(buf []byte) ([]Event, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	var evs []Event
	var exhausted error
	for off := 0; off+unix.SizeofInotifyEvent <= len(buf); {
		raw := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
		name := ""
		if raw.Len > 0 {
			nb := buf[off+unix.SizeofInotifyEvent : off+unix.SizeofInotifyEvent+int(raw.Len)]
			if i := bytes.IndexByte(nb, 0); i >= 0 {
				nb = nb[:i]
			}
			name = string(nb)
		}
		off += unix.SizeofInotifyEvent + int(raw.Len)
		mask := raw.Mask
		if mask&unix.IN_Q_OVERFLOW != 0 {
			evs = append(evs, Event{Path: "/", Op: Overflow})
			continue
		}
		// A copy: rewatching below changes the lists.
		nodes := append([]*node(nil), w.byWD[raw.Wd]...)
		if mask&(unix.IN_IGNORED|unix.IN_DELETE_SELF|unix.IN_MOVE_SELF) != 0 {
			// The watched directory itself went away (or moved): its watch is
			// gone or now points elsewhere; watch what stands there now.
			// Usually its parent's watch said so first, and the rewatch
			// then dropped this one: nothing is left to do.
			for _, n := range nodes {
				if n.wd != raw.Wd {
					continue
				}
				if err := w.rewatchLocked(n); err != nil {
					exhausted = err
				}
				evs = append(evs, Event{Path: n.path, Op: Rewatched | Remove, IsDir: true})
			}
			if mask&unix.IN_IGNORED != 0 {
				delete(w.byWD, raw.Wd)
			}
			continue
		}
		if name == "" {
			// An event on the directory itself. Its attributes are seen
			// from its parent, but not when it is a mount point: the
			// kernel tells a mount's root's changes to its own watches
			// only (fsnotify_parent stops at the root of a mount). So a
			// wanted directory's own attribute change is delivered too
			// (twice, where its parent's watch has it as well: a check
			// is idempotent).
			if mask&unix.IN_ATTRIB != 0 {
				for _, n := range nodes {
					if n.wanted && n.wd == raw.Wd {
						evs = append(evs, Event{Path: n.path, Op: Attrib, IsDir: true})
					}
				}
			}
			continue
		}
		isDir := mask&unix.IN_ISDIR != 0
		for _, n := range nodes {
			p := path.Join(n.path, name)
			op := toOp(mask)
			if k := w.nodes[p]; k != nil && op&(Create|MovedTo|Remove) != 0 {
				// A directory on the way to declared paths appeared,
				// vanished or was replaced (by another, a file, a symlink):
				// watch what stands there now, and have everything under it
				// checked.
				if err := w.rewatchLocked(k); err != nil {
					exhausted = err
				}
				evs = append(evs, Event{Path: p, Op: op | Rewatched, IsDir: isDir})
				continue
			}
			if n.wanted {
				evs = append(evs, Event{Path: p, Op: op, IsDir: isDir})
			}
			// Otherwise an undeclared name on the way: nothing to check.
		}
	}
	return evs, exhausted
}

func toOp(mask uint32) Op {
	var op Op
	if mask&unix.IN_CLOSE_WRITE != 0 {
		op |= Write
	}
	if mask&unix.IN_MODIFY != 0 {
		op |= Modify
	}
	if mask&unix.IN_CREATE != 0 {
		op |= Create
	}
	if mask&unix.IN_MOVED_TO != 0 {
		op |= MovedTo
	}
	if mask&(unix.IN_DELETE|unix.IN_MOVED_FROM) != 0 {
		op |= Remove
	}
	if mask&unix.IN_ATTRIB != 0 {
		op |= Attrib
	}
	return op
}
