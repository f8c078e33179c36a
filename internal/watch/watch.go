// Package watch keeps inotify watches on the directories that hold declared
// paths, and delivers what happens to the names in them.
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
// It promises: a directory that does not exist yet is covered by a watch on
// its nearest existing ancestor, and the watch moves down as directories
// appear and back up as they vanish; a watch that cannot be added because the
// inotify limit is reached is reported (Exhausted) and the directory is listed
// by Polled, never dropped silently; a queue overflow is delivered as an
// Overflow event. It does not promise to see changes made through a symlinked
// parent directory after the symlink itself is retargeted; the periodic full
// check covers that.
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

// Event is something that happened to the name Path (a host path).
type Event struct {
	Path  string
	Op    Op
	IsDir bool
}

const dirMask = unix.IN_CLOSE_WRITE | unix.IN_MODIFY | unix.IN_CREATE | unix.IN_MOVED_TO |
	unix.IN_MOVED_FROM | unix.IN_DELETE | unix.IN_ATTRIB | unix.IN_DELETE_SELF | unix.IN_MOVE_SELF |
	unix.IN_ONLYDIR | unix.IN_EXCL_UNLINK

// ErrExhausted is returned (wrapped) when the inotify watch limit is reached.
var ErrExhausted = errors.New("inotify watches exhausted (fs.inotify.max_user_watches)")

// Watcher watches the directories that hold a set of paths.
type Watcher struct {
	root *ondisk.Root
	file *os.File
	fd   int

	mu sync.Mutex
	// wanted: directories that hold declared paths; routes: those and all
	// their ancestors (names whose appearance moves a watch down).
	wanted map[string]bool
	routes map[string]bool
	// byWD: the host directories a watch descriptor stands for (two host
	// paths may resolve to one directory).
	byWD  map[int32][]string
	byDir map[string]int32
	// polled: wanted directories that could not be watched (limit reached).
	polled map[string]bool
	// onMissing, in tests, runs when a directory was found missing: it
	// creates it to reproduce the race with a concurrent mkdir.
	onMissing func(dir string)
}

// New starts an inotify instance for directories inside root.
func New(root *ondisk.Root) (*Watcher, error) {
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return nil, fmt.Errorf("inotify_init1: %w", err)
	}
	return &Watcher{
		root: root, fd: fd, file: os.NewFile(uintptr(fd), "inotify"),
		wanted: map[string]bool{}, routes: map[string]bool{},
		byWD: map[int32][]string{}, byDir: map[string]int32{}, polled: map[string]bool{},
	}, nil
}

// Close stops the watcher; a blocked Read returns.
func (w *Watcher) Close() error { return w.file.Close() }

// Watch makes the set of directories to watch exactly dirs (host paths).
// Directories that do not exist are covered by their nearest existing
// ancestor. It returns ErrExhausted (wrapped) when some could not be watched;
// those are listed by Polled.
func (w *Watcher) Watch(dirs []string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.wanted = map[string]bool{}
	w.routes = map[string]bool{}
	for _, d := range dirs {
		d = path.Clean(d)
		w.wanted[d] = true
		for p := d; ; p = path.Dir(p) {
			if w.routes[p] && p != d {
				break
			}
			w.routes[p] = true
			if p == "/" {
				break
			}
		}
	}
	// Drop watches no longer needed.
	for d, wd := range w.byDir {
		if !w.routes[d] {
			w.unwatchLocked(d, wd)
		}
	}
	w.polled = map[string]bool{}
	return w.ensureLocked(dirsOf(w.wanted))
}

func dirsOf(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for d := range m {
		out = append(out, d)
	}
	sort.Strings(out)
	return out
}

// ensureLocked watches each wanted directory, or its nearest existing ancestor.
func (w *Watcher) ensureLocked(dirs []string) error {
	var exhausted error
	for _, d := range dirs {
		// A directory below the ancestor just watched may have appeared
		// between the failed attempt on it and the watch on the ancestor:
		// its creation then made no event. Once an ancestor is watched, try
		// the wanted directory again (each round adds a deeper watch or
		// stops, so the rounds are bounded by the depth).
		for again := true; again; {
			again = false
			for p := d; ; p = path.Dir(p) {
				if _, ok := w.byDir[p]; ok {
					break
				}
				err := w.addLocked(p)
				if err == nil {
					again = p != d
					break
				}
				if errors.Is(err, ErrExhausted) {
					exhausted = err
					w.polled[d] = true
					break
				}
				if p == "/" {
					break // the root itself cannot be watched: nothing more to try
				}
				// ENOENT, ENOTDIR: not there (yet); watch further up.
				if w.onMissing != nil {
					w.onMissing(p)
				}
			}
		}
	}
	return exhausted
}

func (w *Watcher) addLocked(dir string) error {
	dfd, err := w.root.OpenDir(dir)
	if err != nil {
		return err
	}
	defer unix.Close(dfd)
	wd, err := unix.InotifyAddWatch(w.fd, fmt.Sprintf("/proc/self/fd/%d", dfd), dirMask)
	if err != nil {
		if errors.Is(err, unix.ENOSPC) {
			return fmt.Errorf("watching %s: %w", dir, ErrExhausted)
		}
		return fmt.Errorf("watching %s: %w", dir, err)
	}
	w.byDir[dir] = int32(wd)
	for _, d := range w.byWD[int32(wd)] {
		if d == dir {
			return nil
		}
	}
	w.byWD[int32(wd)] = append(w.byWD[int32(wd)], dir)
	return nil
}

func (w *Watcher) unwatchLocked(dir string, wd int32) {
	delete(w.byDir, dir)
	rest := w.byWD[wd][:0]
	for _, d := range w.byWD[wd] {
		if d != dir {
			rest = append(rest, d)
		}
	}
	if len(rest) == 0 {
		delete(w.byWD, wd)
		unix.InotifyRmWatch(w.fd, uint32(wd))
		return
	}
	w.byWD[wd] = rest
}

// rewatchLocked drops every watch at or under prefix and watches the wanted
// directories there again (each, or its nearest existing ancestor).
func (w *Watcher) rewatchLocked(prefix string) error {
	for d, wd := range w.byDir {
		if under(d, prefix) {
			w.unwatchLocked(d, wd)
		}
	}
	var dirs []string
	for d := range w.wanted {
		if under(d, prefix) || under(prefix, d) {
			dirs = append(dirs, d)
			delete(w.polled, d)
		}
	}
	sort.Strings(dirs)
	return w.ensureLocked(dirs)
}

// under reports whether p is prefix or lies beneath it.
func under(p, prefix string) bool {
	return p == prefix || prefix == "/" || strings.HasPrefix(p, prefix+"/")
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
	return w.ensureLocked(dirs)
}

// Watched is the number of directories watched.
func (w *Watcher) Watched() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.byDir)
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
		dirs := w.byWD[raw.Wd]
		if mask&(unix.IN_IGNORED|unix.IN_DELETE_SELF|unix.IN_MOVE_SELF) != 0 {
			// The watched directory itself went away (or moved): its watch is
			// gone or now points elsewhere; cover its paths from above.
			for _, d := range append([]string(nil), dirs...) {
				if err := w.rewatchLocked(d); err != nil {
					exhausted = err
				}
				evs = append(evs, Event{Path: d, Op: Rewatched | Remove, IsDir: true})
			}
			if mask&unix.IN_IGNORED != 0 {
				delete(w.byWD, raw.Wd)
			}
			continue
		}
		if name == "" {
			continue // an event on the directory itself: its attributes are seen from its parent
		}
		isDir := mask&unix.IN_ISDIR != 0
		for _, d := range dirs {
			p := path.Join(d, name)
			op := toOp(mask)
			if isDir && w.routes[p] && op&(Create|MovedTo|Remove) != 0 {
				// A directory on the way to watched paths appeared or vanished:
				// move the watches down or up.
				if err := w.rewatchLocked(p); err != nil {
					exhausted = err
				}
				op |= Rewatched
			}
			evs = append(evs, Event{Path: p, Op: op, IsDir: isDir})
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
