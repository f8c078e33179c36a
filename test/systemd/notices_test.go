package systemd_test

import (
	"testing"

	"github.com/drift-monitor/drift-monitor/test/harness"
)

// harness.MsgNotice is MsgNotice (internal/journal/catalog.go), spelled out as
// harness_test.go's ids are.

// TestNoticeJournaledOnce: what the daemon cannot verify (a file from a
// remote source without a verification hash) is in the journal, with its
// own MESSAGE_ID, once: not again at a reload's full check.
func TestNoticeJournaledOnce(t *testing.T) {
	t.Parallel()
	const remote = "/etc/remote.conf"
	h := bootDaemon(t, setup{
		config: `{"ignition":{"version":"3.4.0"},"storage":{"files":[
 {"path":"/etc/etc-file","mode":420,"contents":{"source":"data:,hello%20world%0A"}},
 {"path":"/etc/remote.conf","mode":420,"contents":{"source":"https://example.com/remote.conf"}}]}}`,
		files: []file{etcFileOK, {remote, "fetched at first boot\n", 0o644}},
	})
	fields := map[string]string{"DRIFT_PATH": remote, "DRIFT_KIND": "unverifiable", "DRIFT_ENTRY": "file"}
	r, _ := h.waitRecord(0, harness.MsgNotice, fields)
	if p := r["PRIORITY"]; p != "5" {
		t.Errorf("notice record PRIORITY=%s, want 5 (notice): %s", p, r)
	}
	m := h.mark()
	h.MustRun(t, "systemctl", "reload", service)
	_, at := h.waitRecord(m, harness.MsgReloaded, nil)
	if got := h.between(0, at, harness.MsgNotice, fields); len(got) != 1 {
		t.Errorf("%d notice records for %s up to the reload, want 1: %v", len(got), remote, got)
	}
	if got := h.between(0, at, harness.DriftDetected, nil); len(got) != 0 {
		t.Errorf("a notice is not drift: %v", got)
	}
}
