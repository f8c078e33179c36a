package inhibit

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Monitor follows the inhibitors held in a directory. It keeps one read-only
// descriptor per lock file and probes it with a non-blocking exclusive flock:
// it never closes and reopens a file it is watching, because its own close
// would be an inotify event and it would probe forever.
//
// It follows the directory by its name, not by its inode: when the
// directory is removed, renamed away or replaced (rm -rf, then a new
// `drift-monitor inhibit` making it again), the watch that stays on the old
// inode would see none of the new one's locks, nor their holders' deaths.
// So it watches the parent directory for that name too — the removed
// directory's own IN_DELETE_SELF comes only once nothing holds a file of
// it open, and a holder's lock does — and looks at the name again at every
// Sync and Recheck. The monitor makes the directory again if it is gone,
// watches the new one, rescans it, and says so (DirStatus); lock files of
// the old one no longer count.
type Monitor struct {
	dir  string
	file *os.File // the inotify instance
	ifd  int
	out  chan []Inhibitor
	stat chan DirStatus
	// kick wakes the loop: the held set or the directory's state changed
	// outside it (Sync), and its timer may have to start.
	kick chan struct{}

	mu    sync.Mutex
	fds   map[string]int // lock file name → our descriptor
	held  []Inhibitor
	close chan struct{}
	done  chan struct{}
	// The directory as it is watched: its watch descriptor (-1 while it
	// cannot be watched) and identity; pwd is its parent's watch (-1:
	// none).
	wd, pwd  int
	dev, ino uint64
	status   DirStatus
}

// DirStatus says how the monitor follows its directory.
type DirStatus struct {
	// Replaced counts the times the directory was found removed, renamed
	// away or replaced, and followed anew; Why says what happened the last
	// time ("removed", "removed and made again", "replaced").
	Replaced uint64
	Why      string
	// Err is why the directory cannot be followed now (tried again every
	// Retry); nil while it is.
	Err error
}

// Recheck is how often held locks are probed again without an event: a
// holder that unlocks without closing (flock -u) makes no inotify event,
// and neither does a directory mounted over. It is what bounds a release
// that no event tells of.
const Recheck = time.Second

// Retry is how often a directory that cannot be followed is tried again.
const Retry = time.Second

// parentMask is what the parent's watch asks for: the directory's name
// coming and going.
const parentMask = unix.IN_CREATE | unix.IN_DELETE | unix.IN_MOVED_FROM | unix.IN_MOVED_TO | unix.IN_ONLYDIR |
	unix.IN_DELETE_SELF | unix.IN_MOVE_SELF

// watchMask is what the directory's watch asks for.
const watchMask = unix.IN_CREATE | unix.IN_MODIFY | unix.IN_CLOSE_WRITE | unix.IN_CLOSE_NOWRITE |
	unix.IN_MOVED_TO | unix.IN_MOVED_FROM | unix.IN_DELETE | unix.IN_ATTRIB | unix.IN_ONLYDIR | unix.IN_EXCL_UNLINK |
	unix.IN_DELETE_SELF | unix.IN_MOVE_SELF

// Watch starts following dir (creating it as root's private directory).
func Watch(dir string) (*Monitor, error) {
	if err := EnsureDir(dir); err != nil {
		return nil, err
	}
	ifd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return nil, fmt.Errorf("inotify_init1: %w", err)
	}
	m := &Monitor{dir: dir, file: os.NewFile(uintptr(ifd), "inotify"), ifd: ifd, out: make(chan []Inhibitor, 1),
		stat: make(chan DirStatus, 1), kick: make(chan struct{}, 1),
		fds: map[string]int{}, close: make(chan struct{}), done: make(chan struct{}), wd: -1, pwd: -1}
	m.mu.Lock()
	err = m.watchDirLocked()
	if err == nil {
		m.held = m.heldLocked()
	}
	m.mu.Unlock()
	if err != nil {
		m.file.Close()
		return nil, err
	}
	go m.loop()
	return m, nil
}

// watchDirLocked watches the directory at its name (making it if it is
// gone) and probes everything in it.
func (m *Monitor) watchDirLocked() error {
	if m.wd >= 0 {
		// The old inode's watch, if the kernel has not dropped it with the
		// inode: its events would be the old directory's.
		unix.InotifyRmWatch(m.ifd, uint32(m.wd))
		m.wd = -1
	}
	if err := EnsureDir(m.dir); err != nil {
		return err
	}
	// The parent's watch: the same descriptor while it is the same
	// directory. Without it the directory is still followed at every Sync
	// and Recheck.
	if pwd, err := unix.InotifyAddWatch(m.ifd, filepath.Dir(m.dir), parentMask); err == nil {
		m.pwd = pwd
	}
	wd, err := unix.InotifyAddWatch(m.ifd, m.dir, watchMask)
	if err != nil {
		return fmt.Errorf("watching %s: %w", m.dir, err)
	}
	var st unix.Stat_t
	if err := unix.Lstat(m.dir, &st); err != nil {
		unix.InotifyRmWatch(m.ifd, uint32(wd))
		return fmt.Errorf("examining %s: %w", m.dir, err)
	}
	m.wd, m.dev, m.ino = wd, st.Dev, st.Ino
	m.probeLocked("*")
	return nil
}

// checkDirLocked follows the directory anew when the one at its name is
// not the one watched (or none is, or removed says the watched one was
// removed or renamed away: a new directory may have its inode number), and
// reports whether the status changed.
func (m *Monitor) checkDirLocked(removed bool) bool {
	var st unix.Stat_t
	err := unix.Lstat(m.dir, &st)
	if !removed && m.wd >= 0 && err == nil && st.Dev == m.dev && st.Ino == m.ino {
		return false
	}
	why := "replaced"
	switch {
	case err != nil:
		why = "removed"
	case removed:
		why = "removed and made again"
	}
	if werr := m.watchDirLocked(); werr != nil {
		changed := m.status.Err == nil || m.status.Err.Error() != werr.Error()
		m.status.Err = werr
		return changed
	}
	if m.status.Err == nil {
		// Followed anew after a change (not only after a failure to).
		m.status.Replaced++
		m.status.Why = why
	}
	m.status.Err = nil
	return true
}

// Held returns the inhibitors held now.
func (m *Monitor) Held() []Inhibitor {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]Inhibitor(nil), m.held...)
}

// Sync probes every lock file of the directory now, as an event there
// would make the monitor do, and returns the held set. A caller that acts
// on another inotify instance's events (the daemon's declared paths) calls
// it first: a holder locks before it writes, but the two instances' events
// reach their readers in no order.
func (m *Monitor) Sync() []Inhibitor {
	m.update(nil, true)
	return m.Held()
}

// Changes delivers the held set whenever it changes (the latest only).
func (m *Monitor) Changes() <-chan []Inhibitor { return m.out }

// DirStatus delivers how the directory is followed whenever that changes
// (the latest only).
func (m *Monitor) DirStatus() <-chan DirStatus { return m.stat }

// Close stops the monitor.
func (m *Monitor) Close() error {
	close(m.close)
	err := m.file.Close()
	<-m.done
	m.mu.Lock()
	defer m.mu.Unlock()
	for name, fd := range m.fds {
		unix.Close(fd)
		delete(m.fds, name)
	}
	return err
}

func (m *Monitor) loop() {
	defer close(m.done)
	batches := make(chan []event)
	go func() {
		buf := make([]byte, 16<<10)
		for {
			n, err := m.file.Read(buf)
			if err != nil {
				close(batches)
				return
			}
			select {
			case batches <- parseEvents(buf[:n]):
			case <-m.close:
				return
			}
		}
	}()
	var tick *time.Ticker
	var tickC <-chan time.Time
	every := time.Duration(0)
	for {
		// Probed again without an event while something is held (a
		// release no event tells of), tried again while the directory
		// cannot be followed.
		m.mu.Lock()
		want := time.Duration(0)
		switch {
		case m.wd < 0:
			want = Retry
		case len(m.held) > 0:
			want = Recheck
		}
		m.mu.Unlock()
		if want != every {
			if tick != nil {
				tick.Stop()
				tick, tickC = nil, nil
			}
			if want > 0 {
				tick = time.NewTicker(want)
				tickC = tick.C
			}
			every = want
		}
		select {
		case <-m.close:
			if tick != nil {
				tick.Stop()
			}
			return
		case evs, ok := <-batches:
			if !ok {
				return
			}
			m.update(evs, false)
		case <-m.kick:
		case <-tickC:
			m.update(nil, true)
		}
	}
}

// update probes what the events name (all: the directory, then every
// lock file), and delivers what changed.
func (m *Monitor) update(evs []event, all bool) {
	m.mu.Lock()
	dirChanged := false
	for _, ev := range evs {
		switch {
		case ev.mask&unix.IN_Q_OVERFLOW != 0:
			all = true
		case ev.wd == m.pwd && ev.name == filepath.Base(m.dir):
			// The name went, or came.
			dirChanged = m.checkDirLocked(ev.mask&(unix.IN_DELETE|unix.IN_MOVED_FROM) != 0) || dirChanged
		case ev.wd == m.pwd && ev.mask&(unix.IN_DELETE_SELF|unix.IN_MOVE_SELF|unix.IN_IGNORED) != 0:
			// The parent went: the directory at the name is another.
			dirChanged = m.checkDirLocked(false) || dirChanged
		case ev.wd != m.wd:
			// A watch dropped before (the old directory's, the old
			// parent's): its last events say nothing of the new one.
		case ev.mask&(unix.IN_DELETE_SELF|unix.IN_MOVE_SELF|unix.IN_IGNORED|unix.IN_UNMOUNT) != 0:
			dirChanged = m.checkDirLocked(true) || dirChanged
		default:
			m.probeLocked(ev.name)
		}
	}
	if all {
		dirChanged = m.checkDirLocked(false) || dirChanged
		m.probeLocked("*")
	}
	now := m.heldLocked()
	changed := !slices.Equal(now, m.held)
	m.held = now
	status := m.status
	m.mu.Unlock()
	if changed {
		select {
		case <-m.out: // replace a value not yet taken
		default:
		}
		m.out <- now
	}
	if dirChanged {
		select {
		case <-m.stat:
		default:
		}
		m.stat <- status
	}
	if changed || dirChanged {
		select {
		case m.kick <- struct{}{}:
		default:
		}
	}
}

// event is one inotify event: its watch, mask and name.
type event struct {
	wd   int
	mask uint32
	name string
}

func parseEvents(buf []byte) []event {
	var evs []event
	for off := 0; off+unix.SizeofInotifyEvent <= len(buf); {
		raw := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
		nb := buf[off+unix.SizeofInotifyEvent : off+unix.SizeofInotifyEvent+int(raw.Len)]
		off += unix.SizeofInotifyEvent + int(raw.Len)
		if i := bytes.IndexByte(nb, 0); i >= 0 {
			nb = nb[:i]
		}
		evs = append(evs, event{wd: int(raw.Wd), mask: raw.Mask, name: string(nb)})
	}
	return evs
}

// probeLocked refreshes what is known of one name ("*": rescan everything).
func (m *Monitor) probeLocked(name string) {
	if name == "*" {
		ents, _ := os.ReadDir(m.dir)
		for _, e := range ents {
			m.probeLocked(e.Name())
		}
		for n := range m.fds {
			m.probeLocked(n)
		}
		return
	}
	if name == "" || strings.HasPrefix(name, ".") || !strings.HasSuffix(name, Suffix) {
		return
	}
	p := filepath.Join(m.dir, name)
	fd, ok := m.fds[name]
	if ok {
		// Is our descriptor still the file at that name?
		var a, b unix.Stat_t
		if unix.Fstat(fd, &a) != nil || unix.Lstat(p, &b) != nil || a.Ino != b.Ino || a.Dev != b.Dev {
			unix.Close(fd)
			delete(m.fds, name)
			ok = false
		}
	}
	if !ok {
		nfd, err := unix.Open(p, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC|unix.O_NOCTTY, 0)
		if err != nil {
			return // gone, or not a regular file we may open
		}
		// Files that are not root's are kept open too (and ignored by
		// heldLocked): closing them would be an event we react to again.
		m.fds[name] = nfd
	}
}

// heldLocked probes every known file and lists those locked by someone.
func (m *Monitor) heldLocked() []Inhibitor {
	var out []Inhibitor
	for name, fd := range m.fds {
		var st unix.Stat_t
		if unix.Fstat(fd, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG || st.Uid != 0 {
			continue
		}
		held := locked(fd)
		buf := make([]byte, 4096)
		n, _ := unix.Pread(fd, buf, 0)
		if n < 0 {
			n = 0
		}
		in := parse(filepath.Join(m.dir, name), buf[:n])
		if !held {
			// Left behind by a holder that died (SIGKILL): the pid it wrote is
			// gone, so nobody can be about to lock it again. Files without a
			// pid are the shell protocol's, which its users remove.
			if in.PID > 0 && unix.Kill(in.PID, 0) == unix.ESRCH {
				unix.Unlink(in.File)
				unix.Close(fd)
				delete(m.fds, name)
			}
			continue
		}
		out = append(out, in)
	}
	Sort(out)
	return out
}

// locked reports whether someone else holds a lock on the file.
func locked(fd int) bool {
	for {
		err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB)
		switch {
		case err == nil:
			unix.Flock(fd, unix.LOCK_UN)
			return false
		case errors.Is(err, unix.EINTR):
			continue
		default:
			return errors.Is(err, unix.EWOULDBLOCK)
		}
	}
}
