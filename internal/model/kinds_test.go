package model

import (
	"regexp"
	"slices"
	"testing"

	"github.com/drift-monitor/drift-monitor/internal/constscan"
)

// TestKindsHaveRows: every constant of type Kind declared in this
// package's sources has exactly one row in Kinds, and every row is of a
// declared kind: a kind added in any file without its row fails here, not
// in a consumer that would treat it as nothing.
func TestKindsHaveRows(t *testing.T) {
	var declared []Kind
	for _, v := range constscan.OfType(t, ".", "Kind", 20) {
		declared = append(declared, Kind(v))
	}
	for _, k := range declared {
		n := 0
		for _, m := range Kinds {
			if m.Kind == k {
				n++
			}
		}
		if n != 1 {
			t.Errorf("Kind %q has %d rows in Kinds, want 1", k, n)
		}
		if n == 1 && k.Means().Kind != k {
			t.Errorf("%q.Means() is the row of %q", k, k.Means().Kind)
		}
	}
	for _, m := range Kinds {
		if !slices.Contains(declared, m.Kind) {
			t.Errorf("Kinds has a row for %q, which no constant declares", m.Kind)
		}
	}
	if m := Kind("no-such-kind").Means(); m.Source != FromNothing || m.Events != FullChecksOnly || m.Audit != AuditNothing || m.Repair != NoRepair {
		t.Errorf("an unknown kind's row lets something happen: %+v", m)
	}
}

var messageID = regexp.MustCompile(`^[0-9a-f]{32}$`)

// TestRowsAgree: what one column says of a kind, the others do not
// contradict, so that every consumer of the table gives the same answer.
func TestRowsAgree(t *testing.T) {
	ids := map[string]Kind{}
	for _, m := range Kinds {
		t.Run(string(m.Kind), func(t *testing.T) {
			wantEvents := map[Source][]Events{
				FromNothing:   {FullChecksOnly},
				FromNode:      {NodeEvents, NodeAndTargetEvents},
				FromUnitState: {UnitFileEvents},
				FromCmdline:   {FullChecksOnly},
				FromOS:        {FullChecksOnly},
				FromAccounts:  {AccountEvents},
				FromImage:     {TreeEvents},
			}[m.Source]
			if !slices.Contains(wantEvents, m.Events) {
				t.Errorf("compared with source %d, re-checked on events %d", m.Source, m.Events)
			}
			// Only a node on disk may be audited: the kernel's views
			// (/proc, /sys), the booted deployment (a tree under
			// /ostree), the rpm database and what systemd places never.
			if m.Audit != AuditNothing && m.Source != FromNode && m.Source != FromAccounts {
				t.Errorf("source %d, yet an audit rule may watch it (%d)", m.Source, m.Audit)
			}
			if (m.Audit == AuditNodeAndTarget) != (m.Events == NodeAndTargetEvents) {
				t.Errorf("watched at its target (%d) and audited there (%d) disagree", m.Events, m.Audit)
			}
			if (m.ValueFiles != nil) != (m.Source == FromAccounts) {
				t.Errorf("compared with source %d, its values in files %q", m.Source, m.ValueFiles)
			}
			if (m.Repair == NoRepair) != (m.NotRepaired != "") {
				t.Errorf("repair %d, yet NotRepaired %q", m.Repair, m.NotRepaired)
			}
			if m.Repair == RepairNode && m.Source != FromNode || m.Repair == RepairAccount && m.Source != FromAccounts ||
				m.Repair == RepairEnablement && m.Source != FromUnitState || m.Repair == RepairNamed && m.Source != FromImage {
				t.Errorf("repaired as %d, compared with source %d", m.Repair, m.Source)
			}
			if m.Field == "" || len(m.Drift) == 0 {
				t.Errorf("a column is empty: field %q, %d kinds of drift", m.Field, len(m.Drift))
			}
			// Drift records, and their catalog text, are of the kinds
			// compared with something; the others carry notices only.
			if m.Source == FromNothing {
				if m.MessageID != "" || m.Subject != "" || m.Body != "" {
					t.Errorf("compared with nothing, yet it has drift records: %s %q", m.MessageID, m.Subject)
				}
				return
			}
			if !messageID.MatchString(m.MessageID) {
				t.Errorf("MessageID %q is not 32 lower-case hex digits", m.MessageID)
			}
			if other, dup := ids[m.MessageID]; dup {
				t.Errorf("MessageID %s is %s's too", m.MessageID, other)
			}
			ids[m.MessageID] = m.Kind
			if m.Subject == "" || m.Body == "" {
				t.Errorf("no catalog text: subject %q, body %d bytes", m.Subject, len(m.Body))
			}
			for i, d := range m.Drift {
				if slices.Contains(m.Drift[:i], d) {
					t.Errorf("Drift lists %q twice", d)
				}
			}
		})
	}
}
