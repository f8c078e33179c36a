package check

import (
	"fmt"

	"github.com/drift-monitor/drift-monitor/internal/drift"
	"github.com/drift-monitor/drift-monitor/internal/model"
	"github.com/drift-monitor/drift-monitor/internal/ondisk"
)

// account checks a user or group entry against the account files.
func (c *Checker) account(e *model.Entry, a *ondisk.Accounts) Outcome {
	if c.WaitForAccountLocks && a.Lock != nil {
		return Outcome{Unknown: true, Lock: a.Lock}
	}
	if a.Err != nil {
		return Outcome{Drift: []drift.Drift{{Kind: drift.Unreadable, Entry: e.Kind, Path: e.Path, User: e.User,
			Message: fmt.Sprintf("cannot examine %s: %v", drift.Noun(e), a.Err), EntryID: e.ID()}}}
	}
	return Outcome{Drift: drift.CompareAccount(e, a.DB, c.Key)}
}
