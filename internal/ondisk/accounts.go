package ondisk

import (
	"bytes"
	"errors"
	"strconv"
	"time"

	"golang.org/x/sys/unix"

	"github.com/drift-monitor/drift-monitor/internal/accountdb"
)

// Accounts is an observation of a root's account files (accountdb.Files).
type Accounts struct {
	DB  *accountdb.DB
	Err error
	// Lock is the lock (accountdb.Locks) of a writer that is still at
	// work: the files may be half-way through its change (usermod renames
	// passwd, shadow, group and gshadow one after the other, and unlocks
	// them all at the end). Nil when none is held.
	Lock *AccountLock
}

// AccountLock is a lock on the account files held by a live writer.
type AccountLock struct {
	File string // the lock file, a host path
	PID  int    // the writer it names
	// Since is when it was taken (the lock file's modification time):
	// StaleAccountLock after it, it is no longer taken to be a writer's.
	Since time.Time
}

// ObserveAccounts reads the account files inside r, and whether a live
// shadow-utils writer holds their locks.
func (r *Root) ObserveAccounts() Accounts {
	var a Accounts
	a.Lock = r.accountLock()
	a.DB, a.Err = accountdb.Read(r)
	return a
}

// StaleAccountLock is how long a lock is taken to be its writer's at the
// most: shadow-utils' tools hold one for milliseconds (longer only while
// usermod --move-home or userdel --remove copy or remove a home), and give
// up waiting for one after 15 seconds themselves (lib/commonio.c,
// LOCK_TRIES and LOCK_SLEEP). An older lock whose pid happens to be alive
// again (a stale lock, its pid reused), or that anyone who may write the
// lock file wrote with a pid that lives (1), must not keep the accounts
// unchecked.
const StaleAccountLock = time.Minute

// accountLock returns the first lock held by a live process, nil when none
// is. A lock is held as shadow-utils itself holds it (lib/commonio.c,
// do_lock_file): it names a pid that is alive. One whose process is gone is
// stale (shadow-utils removes such a lock itself when it next locks), and so
// is one that names no pid as shadow-utils reads one (lockPID), and one
// older than StaleAccountLock.
func (r *Root) accountLock() *AccountLock {
	o := NewObserver(r)
	defer o.Close()
	for _, l := range accountdb.Locks {
		data, err := r.ReadFile(l)
		if err != nil {
			// Absent, or unreadable: a lock that cannot be read cannot
			// be told from a stale one, and waiting on it could wait
			// for ever.
			continue
		}
		pid, ok := lockPID(data)
		if !ok {
			continue
		}
		_, mtime := o.Stat(l)
		if time.Since(mtime) > StaleAccountLock {
			continue
		}
		if err := unix.Kill(pid, 0); err == nil || errors.Is(err, unix.EPERM) {
			return &AccountLock{File: l, PID: pid, Since: mtime}
		}
	}
	return nil
}

// lockPID reads the pid of a lock file as shadow-utils writes and reads it
// (lib/commonio.c, do_lock_file): it writes the pid in decimal followed by
// its NUL terminator ("138\0"; strlen + 1 bytes), and reads back the bytes
// up to the first NUL as a C string, which must be a decimal number from 1
// to the largest pid_t, nothing else (lib/atoi/getnum.h, get_pid: a2i with
// no end pointer). A lock it cannot read so it takes to be held by no one:
// its tools refuse to go on while it is there.
func lockPID(data []byte) (int, bool) {
	if i := bytes.IndexByte(data, 0); i >= 0 {
		data = data[:i]
	}
	if len(data) == 0 || len(data) > 10 {
		return 0, false
	}
	for _, c := range data {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	pid, err := strconv.ParseInt(string(data), 10, 32)
	if err != nil || pid < 1 {
		return 0, false
	}
	return int(pid), true
}
