package harness

import (
	"testing"

	"github.com/drift-monitor/drift-monitor/internal/journal"
)

func TestAttributionMessageIDs(t *testing.T) {
	if MsgAttribution != journal.MsgAttribution || MsgChangeDenied != journal.MsgChangeDenied {
		t.Errorf("attribution MESSAGE_IDs differ from internal/journal's")
	}
}
