package daemon

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/drift-monitor/drift-monitor/internal/accountdb"
	"github.com/drift-monitor/drift-monitor/internal/escape"
	"github.com/drift-monitor/drift-monitor/internal/ondisk"
	"github.com/drift-monitor/drift-monitor/internal/watch"
)

// The account files are read when their writers are done with them. A
// shadow-utils tool (useradd, usermod, vipw) holds a lock file while it
// rewrites them one after the other: while a live writer holds one, the user
// and group entries are unknown (check.Checker.WaitForAccountLocks), the
// state is "checking" and the status line says what it waits for, never
// clean. The lock's removal is an event that re-checks them; a writer that
// dies holding it, and a lock that outlives ondisk.StaleAccountLock (written
// by anyone who may write it, with a pid that lives), raise none, so while
// one is honoured the entries are checked again every accountLockPoll. And a
// file rewritten in place (cat passwd.copy >/etc/passwd) is read when its
// writer closes it, or after Settle of quiet, as a declared file is
// (accountFileWrite): read half-way, its users did not exist.

// accountLockPoll is how often the account entries are checked again while a
// lock keeps them unknown.
const accountLockPoll = 2 * time.Second

// accountWait is the lock the user and group entries wait for.
type accountWait struct {
	lock *ondisk.AccountLock // nil: none
	poll *time.Ticker        // while lock is not nil
}

// C delivers the re-checks' ticks (nil while no lock is honoured).
func (a *accountWait) C() <-chan time.Time {
	if a.poll == nil {
		return nil
	}
	return a.poll.C
}

// noteAccountLock takes the lock the last check of the account entries
// honoured (nil: none, they were judged).
func (d *Daemon) noteAccountLock(l *ondisk.AccountLock) {
	d.acct.lock = l
	switch {
	case l != nil && d.acct.poll == nil:
		d.acct.poll = time.NewTicker(accountLockPoll)
	case l == nil && d.acct.poll != nil:
		d.acct.poll.Stop()
		d.acct.poll = nil
	}
}

// accountEntries are the user and group entries: the index lists them
// under every account lock (index.targets).
func (d *Daemon) accountEntries() []int { return d.ix.targets[accountdb.Locks[0]] }

// noteAccountOutcome takes what the check of entry i says of the lock.
func (d *Daemon) noteAccountOutcome(i int, lock *ondisk.AccountLock) {
	if lock != nil || (d.acct.lock != nil && slices.Contains(d.accountEntries(), i)) {
		d.noteAccountLock(lock)
	}
}

// recheckAccounts checks the account entries again while a lock keeps them
// unknown: its writer may be gone, or the lock stale.
func (d *Daemon) recheckAccounts(ctx context.Context) {
	d.checkEntries(ctx, d.accountEntries())
}

// accountLockStatus is what the status line says of the lock honoured ("":
// none).
func (d *Daemon) accountLockStatus() string {
	if d.acct.lock == nil {
		return ""
	}
	return fmt.Sprintf("%s (PID %d)", escape.Name(d.acct.lock.File), d.acct.lock.PID)
}

// accountFileWrite reports whether an event on p is a write to an account
// file that its writer is not done with: the entries it affects wait for it
// (writes.completes). A write in place that its writer closed waits
// accountQuiet more: an admin's loop of rewrites (cat passwd.copy
// >/etc/passwd, again and again) truncates the file for the next one while
// the check of the last one would read it; a file renamed into place
// (shadow-utils, vipw) is complete at once.
func (d *Daemon) accountFileWrite(p string, op watch.Op, dir bool) bool {
	if dir || !slices.Contains(accountdb.Files[:], p) {
		return false
	}
	if op&watch.Write != 0 && op&(watch.MovedTo|watch.Remove) == 0 {
		d.writes.armFor(p, accountQuiet)
		return true
	}
	return !d.writes.completes(p, op, d.isRegular)
}

// accountQuiet is how long an account file closed after a write in place
// stays quiet before it is read.
const accountQuiet = 250 * time.Millisecond
