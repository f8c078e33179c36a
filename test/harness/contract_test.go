package harness

import (
	"testing"

	"github.com/drift-monitor/drift-monitor/internal/journal"
	"github.com/drift-monitor/drift-monitor/internal/model"
	"github.com/google/go-cmp/cmp"
)

// TestMessageIDsAreTheCatalogs: the ids the tiers wait for are the daemon's.
// A change on either side fails here, not as a timeout in a tier.
func TestMessageIDsAreTheCatalogs(t *testing.T) {
	want := map[string]string{
		"Started": journal.MsgStarted, "Ready": journal.MsgReady,
		"DriftResolved": journal.MsgDriftResolved,
		"Reloaded":      journal.MsgReloaded, "LoadFailed": journal.MsgLoadFailed,
		"WatchesExhausted": journal.MsgWatchesExhausted, "WatchesRestored": journal.MsgWatchesRestored,
		"Inhibited": journal.MsgInhibited, "Resumed": journal.MsgResumed,
		"Stopping": journal.MsgStopping, "HookFailed": journal.MsgHookFailed,
		"BusLost": journal.MsgBusLost, "BusRestored": journal.MsgBusRestored,
		"Notice": journal.MsgNotice, "Reconciled": journal.MsgReconciled,
		"ConfigIgnored": journal.MsgConfigIgnored, "NothingToWatch": journal.MsgNothingToWatch,
		"InhibitorsRewatched": journal.MsgInhibitorsRewatched,
		"Undeclared":          journal.MsgUndeclared, "UndeclaredGone": journal.MsgUndeclaredGone, "Image": journal.MsgImage,
		"MetricsFailed": journal.MsgMetricsFailed, "LoadSlow": journal.MsgLoadSlow,
	}
	got := map[string]string{
		"Started": MsgStarted, "Ready": MsgReady,
		"DriftResolved": MsgDriftResolved,
		"Reloaded":      MsgReloaded, "LoadFailed": MsgLoadFailed,
		"WatchesExhausted": MsgWatchesExhausted, "WatchesRestored": MsgWatchesRestored,
		"Inhibited": MsgInhibited, "Resumed": MsgResumed,
		"Stopping": MsgStopping, "HookFailed": MsgHookFailed,
		"BusLost": MsgBusLost, "BusRestored": MsgBusRestored,
		"Notice": MsgNotice, "Reconciled": MsgReconciled,
		"ConfigIgnored": MsgConfigIgnored, "NothingToWatch": MsgNothingToWatch,
		"InhibitorsRewatched": MsgInhibitorsRewatched,
		"Undeclared":          MsgUndeclared, "UndeclaredGone": MsgUndeclaredGone, "Image": MsgImage,
		"MetricsFailed": MsgMetricsFailed, "LoadSlow": MsgLoadSlow,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("MESSAGE_IDs (-want internal/journal +got harness):\n%s", diff)
	}
	kinds := map[string]string{}
	for _, m := range model.Kinds {
		if m.MessageID != "" {
			kinds[string(m.Kind)] = m.MessageID
		}
		if journal.RecordOf(m.MessageID) != DriftDetected && m.MessageID != "" {
			t.Errorf("the record of %s drift is of type %q, want %q", m.Kind, journal.RecordOf(m.MessageID), DriftDetected)
		}
	}
	if diff := cmp.Diff(kinds, DriftDetectedIDs); diff != "" {
		t.Errorf("MESSAGE_IDs of drift by kind of entry (-want model.Kinds +got harness):\n%s", diff)
	}
}
