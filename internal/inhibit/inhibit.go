// Package inhibit implements the inhibitor protocol that lets update tools
// suspend drift reporting while they change the configuration on purpose.
//
// An inhibitor is a lock file in Dir (/run/drift-monitor/inhibit.d, mode
// 0700, root's) that its holder keeps locked with flock(2). The lock lives in
// the holder's open file description, so:
//   - it dies with its holder: when the last descriptor closes (exit, SIGKILL)
//     the kernel drops the lock, and the close is an inotify event;
//   - it survives the daemon: the daemon only probes locks, it holds none, so
//     a crash, restart or package upgrade of the daemon finds them again;
//   - only root can take one: nobody else can create, open or lock a file in
//     a 0700 root directory, and the daemon ignores files root does not own.
//
// The protocol, for any language or a shell:
//
//	exec 9>/run/drift-monitor/inhibit.d/my-updater.lock   # create (root only)
//	flock 9                                                # take the lock
//	printf 'who=my-updater why=applying config v42 pid=%d\n' $$ >&9  # then write: the write is the signal
//	... change the configuration ...
//	exec 9>&-                                              # release (or just exit)
//
// The write after the lock matters: creating a file and locking it are two
// steps, and a probe between them would see an unlocked file; the write that
// follows the lock tells the daemon to look again. Take does the same
// atomically (lock, write, then rename into place).
//
// It does not promise anything about a holder that passes its descriptor on:
// the inhibitor lasts as long as any copy is open.
package inhibit

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/drift-monitor/drift-monitor/internal/fsx"
)

// Dir is where inhibitor lock files live.
const Dir = "/run/drift-monitor/inhibit.d"

// Suffix of inhibitor lock files; other names in Dir are ignored.
const Suffix = ".lock"

// Inhibitor is one held inhibitor.
type Inhibitor struct {
	Who  string `json:"who"`
	Why  string `json:"why"`
	PID  int    `json:"pid,omitempty"`
	File string `json:"file"`
}

// String renders "who (pid N): why", as the status line shows it.
func (i Inhibitor) String() string {
	s := i.Who
	if i.PID > 0 {
		s += fmt.Sprintf(" (pid %d)", i.PID)
	}
	if i.Why != "" {
		s += ": " + i.Why
	}
	return s
}

// Lock is an inhibitor taken by this process.
type Lock struct {
	f    *os.File
	path string
}

// File is the descriptor that holds the lock (to pass it on, e.g. over D-Bus).
func (l *Lock) File() *os.File { return l.f }

// Path is the lock file.
func (l *Lock) Path() string { return l.path }

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9_.@-]+`)

// EnsureDir creates dir as root's private directory if it is missing, and
// refuses one that others could write to.
func EnsureDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("creating %s: %w", dir, err)
	}
	var st unix.Stat_t
	if err := unix.Lstat(dir, &st); err != nil {
		return fmt.Errorf("examining %s: %w", dir, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return fmt.Errorf("%s: not a directory", dir)
	}
	if st.Uid != 0 || st.Mode&0o022 != 0 {
		return fmt.Errorf("%s: must be owned by root and writable by root only (uid %d, mode %04o)", dir, st.Uid, st.Mode&0o7777)
	}
	return nil
}

// Take takes an inhibitor for who, why and pid: it locks a new file, writes
// who and why into it, and renames it into place, so that the daemon never
// sees it unlocked.
func Take(dir, who, why string, pid int) (*Lock, error) {
	if strings.TrimSpace(who) == "" {
		return nil, errors.New("an inhibitor needs a non-empty who")
	}
	if err := EnsureDir(dir); err != nil {
		return nil, err
	}
	base := unsafeName.ReplaceAllString(who, "_")
	if len(base) > 64 {
		base = base[:64]
	}
	dfd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("creating an inhibitor in %s: %w", dir, err)
	}
	defer unix.Close(dfd)
	fd, tmpName, err := fsx.CreateTemp(dfd, ".take-*") // 0600
	if err != nil {
		return nil, fmt.Errorf("creating an inhibitor in %s: %w", dir, err)
	}
	tmp := os.NewFile(uintptr(fd), filepath.Join(dir, tmpName))
	fail := func(err error) (*Lock, error) {
		unix.Unlinkat(dfd, tmpName, 0)
		tmp.Close()
		return nil, err
	}
	if err := unix.Flock(int(tmp.Fd()), unix.LOCK_SH); err != nil {
		return fail(fmt.Errorf("locking %s: %w", tmp.Name(), err))
	}
	content := fmt.Sprintf("who=%s\nwhy=%s\npid=%d\n", oneLine(who), oneLine(why), pid)
	if _, err := tmp.WriteString(content); err != nil {
		return fail(fmt.Errorf("writing %s: %w", tmp.Name(), err))
	}
	final, err := place(dfd, dir, tmpName, fmt.Sprintf("%s-%d", base, pid))
	if err != nil {
		return fail(err)
	}
	return &Lock{f: tmp, path: final}, nil
}

// placing serialises place within a process: the daemon takes the
// inhibitors of every D-Bus caller, concurrently.
var placing sync.Mutex

// place renames the locked file tmp to the first name NAME.lock,
// NAME-2.lock, … that holds no inhibitor. One process may hold several
// inhibitors under one who (a D-Bus client with two operations under way;
// every caller outside the daemon's pid namespace has pid 0): renaming over
// a held one would orphan its lock — the daemon would stop seeing it while
// it is still held, and its release would remove the other one's file. A
// name whose file nobody holds any more (a D-Bus caller closed its
// descriptor) is reused, so that a long-lived caller does not pile up files.
func place(dfd int, dir, tmp, name string) (string, error) {
	placing.Lock()
	defer placing.Unlock()
	for n := 1; ; n++ {
		base := name + Suffix
		if n > 1 {
			base = fmt.Sprintf("%s-%d%s", name, n, Suffix)
		}
		final := filepath.Join(dir, base)
		err := fsx.RenameNoReplace(dfd, tmp, base)
		if err == nil {
			return final, nil
		}
		if !errors.Is(err, unix.EEXIST) {
			return "", fmt.Errorf("placing %s: %w", final, err)
		}
		if released(final) {
			if err := fsx.Rename(dfd, tmp, base); err != nil {
				return "", fmt.Errorf("placing %s: %w", final, err)
			}
			return final, nil
		}
	}
}

// released reports whether the file at p is a lock that nobody holds.
func released(p string) bool {
	fd, err := unix.Open(p, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC|unix.O_NOCTTY, 0)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	return unix.Fstat(fd, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFREG && !locked(fd)
}

// Release drops the inhibitor: the file is removed, then the lock released.
func (l *Lock) Release() error {
	err := os.Remove(l.path)
	if cerr := l.f.Close(); err == nil {
		err = cerr
	}
	return err
}

// CloseKeepingFile closes this process's descriptor but leaves the file: the
// lock stays held as long as another copy of the descriptor is open (one
// passed over D-Bus).
func (l *Lock) CloseKeepingFile() error { return l.f.Close() }

func oneLine(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '\n' || r == '\r' {
			return ' '
		}
		return r
	}, s)
}

// parse reads who, why and pid from a lock file's content ("key=value" lines;
// also "key=value" words on one line, as a shell one-liner writes them).
func parse(name string, content []byte) Inhibitor {
	in := Inhibitor{File: name}
	sc := bufio.NewScanner(bytes.NewReader(content))
	for sc.Scan() {
		line := sc.Text()
		for _, k := range []string{"who=", "why=", "pid="} {
			i := strings.Index(line, k)
			if i < 0 || (i > 0 && line[i-1] != ' ') {
				continue
			}
			v := line[i+len(k):]
			// A value runs to the next key on the same line, if any.
			for _, k2 := range []string{" who=", " why=", " pid="} {
				if j := strings.Index(v, k2); j >= 0 {
					v = v[:j]
				}
			}
			v = strings.TrimSpace(v)
			switch k {
			case "who=":
				in.Who = v
			case "why=":
				in.Why = v
			case "pid=":
				in.PID, _ = strconv.Atoi(v)
			}
		}
	}
	if in.Who == "" {
		in.Who = strings.TrimSuffix(filepath.Base(name), Suffix)
	}
	return in
}

// Sort orders inhibitors by file name.
func Sort(ins []Inhibitor) {
	sort.Slice(ins, func(i, j int) bool { return ins[i].File < ins[j].File })
}
