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
type Monitor struct {
	dir  string
	file *os.File // the inotify instance
	out  chan []Inhibitor

	mu    sync.Mutex
	fds   map[string]int // lock file name → our descriptor
	held  []Inhibitor
	close chan struct{}
	done  chan struct{}
}

// Recheck is how often held locks are probed again without an event: a
// holder that unlocks without closing (flock -u) makes no inotify event.
const Recheck = 5 * time.Second

// Watch starts following dir (creating it as root's private directory).
func Watch(dir string) (*Monitor, error) {
	if err := EnsureDir(dir); err != nil {
		return nil, err
	}
	ifd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return nil, fmt.Errorf("inotify_init1: %w", err)
	}
	const mask = unix.IN_CREATE | unix.IN_MODIFY | unix.IN_CLOSE_WRITE | unix.IN_CLOSE_NOWRITE |
		unix.IN_MOVED_TO | unix.IN_MOVED_FROM | unix.IN_DELETE | unix.IN_ATTRIB | unix.IN_ONLYDIR | unix.IN_EXCL_UNLINK
	if _, err := unix.InotifyAddWatch(ifd, dir, mask); err != nil {
		unix.Close(ifd)
		return nil, fmt.Errorf("watching %s: %w", dir, err)
	}
	m := &Monitor{dir: dir, file: os.NewFile(uintptr(ifd), "inotify"), out: make(chan []Inhibitor, 1),
		fds: map[string]int{}, close: make(chan struct{}), done: make(chan struct{})}
	ents, err := os.ReadDir(dir)
	if err != nil {
		m.file.Close()
		return nil, err
	}
	m.mu.Lock()
	for _, e := range ents {
		m.probeLocked(e.Name())
	}
	m.held = m.heldLocked()
	m.mu.Unlock()
	go m.loop()
	return m, nil
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
	m.update([]string{"*"})
	return m.Held()
}

// Changes delivers the held set whenever it changes (the latest only).
func (m *Monitor) Changes() <-chan []Inhibitor { return m.out }

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
	names := make(chan []string)
	go func() {
		buf := make([]byte, 16<<10)
		for {
			n, err := m.file.Read(buf)
			if err != nil {
				close(names)
				return
			}
			select {
			case names <- parseNames(buf[:n]):
			case <-m.close:
				return
			}
		}
	}()
	var tick *time.Ticker
	var tickC <-chan time.Time
	for {
		m.mu.Lock()
		holding := len(m.held) > 0
		m.mu.Unlock()
		if holding && tick == nil {
			tick = time.NewTicker(Recheck)
			tickC = tick.C
		} else if !holding && tick != nil {
			tick.Stop()
			tick, tickC = nil, nil
		}
		select {
		case <-m.close:
			if tick != nil {
				tick.Stop()
			}
			return
		case ns, ok := <-names:
			if !ok {
				return
			}
			m.update(ns)
		case <-tickC:
			m.mu.Lock()
			var all []string
			for n := range m.fds {
				all = append(all, n)
			}
			m.mu.Unlock()
			m.update(all)
		}
	}
}

func (m *Monitor) update(names []string) {
	m.mu.Lock()
	for _, n := range names {
		m.probeLocked(n)
	}
	now := m.heldLocked()
	changed := !slices.Equal(now, m.held)
	m.held = now
	m.mu.Unlock()
	if changed {
		select {
		case <-m.out: // replace a value not yet taken
		default:
		}
		m.out <- now
	}
}

func parseNames(buf []byte) []string {
	var names []string
	for off := 0; off+unix.SizeofInotifyEvent <= len(buf); {
		raw := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
		nb := buf[off+unix.SizeofInotifyEvent : off+unix.SizeofInotifyEvent+int(raw.Len)]
		off += unix.SizeofInotifyEvent + int(raw.Len)
		if i := bytes.IndexByte(nb, 0); i >= 0 {
			nb = nb[:i]
		}
		if raw.Mask&unix.IN_Q_OVERFLOW != 0 {
			names = append(names, "*")
			continue
		}
		names = append(names, string(nb))
	}
	return names
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
