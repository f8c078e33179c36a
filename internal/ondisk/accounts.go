package ondisk

import (
	"errors"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/drift-monitor/drift-monitor/internal/accountdb"
)

// Accounts is an observation of a root's account files (accountdb.Files).
type Accounts struct {
	DB  *accountdb.DB
	Err error
	// Locked names the lock file (accountdb.Locks) of a writer that is
	// still at work: the files may be half-way through its change (usermod
	// renames passwd, shadow, group and gshadow one after the other, and
	// unlocks them all at the end). Empty when none is held.
	Locked string
}

// ObserveAccounts reads the account files inside r, and whether a live
// shadow-utils writer holds their locks.
func (r *Root) ObserveAccounts() Accounts {
	var a Accounts
	a.Locked = r.accountLock()
	a.DB, a.Err = accountdb.Read(r)
	return a
}

// StaleAccountLock is how long a lock is taken to be its writer's at the
// most: shadow-utils' tools hold one for milliseconds (longer only while
// usermod --move-home or userdel --remove copy or remove a home), and give
// up waiting for one after 15 seconds themselves (lib/commonio.c,
// LOCK_TRIES and LOCK_SLEEP). An older lock whose pid happens to be alive
// again (a stale lock, its pid reused) must not keep the accounts unchecked.
const StaleAccountLock = time.Minute

// accountLock names the first lock file held by a live process. A lock
// file holds its writer's pid (commonio.c, do_lock_file); one whose
// process is gone is stale (shadow-utils removes such a lock itself when
// it next locks), and so is one that is not a pid, or older than
// StaleAccountLock.
func (r *Root) accountLock() string {
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
		pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
		if err != nil || pid <= 0 {
			continue
		}
		if _, mtime := o.Stat(l); time.Since(mtime) > StaleAccountLock {
			continue
		}
		if err := unix.Kill(pid, 0); err == nil || errors.Is(err, unix.EPERM) {
			return l
		}
	}
	return ""
}
