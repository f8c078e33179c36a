package daemon

import (
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/drift-monitor/drift-monitor/internal/journal"
)

// Moving away a directory that holds only declared directories, and
// re-creating it with other content, is reported at once by a daemon with
// no periodic check: as missing, then as the content that is there now.
func TestAncestorMovedAndRecreated(t *testing.T) {
	root := t.TempDir()
	cfg := filepath.Join(t.TempDir(), "c.ign")
	os.WriteFile(cfg, []byte(`{"ignition":{"version":"3.4.0"},"storage":{"files":[
 {"path":"/etc/storm/d1/f","mode":420,"contents":{"source":"data:,one%0A"}},
 {"path":"/etc/storm/d2/f","mode":420,"contents":{"source":"data:,two%0A"}}]}}`), 0o644)
	write := func(p, content string) {
		t.Helper()
		os.MkdirAll(filepath.Dir(filepath.Join(root, p)), 0o755)
		if err := os.WriteFile(filepath.Join(root, p), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("/etc/storm/d1/f", "one\n")
	write("/etc/storm/d2/f", "two\n")

	rec := &records{}
	runDaemon(t, Options{Root: root, Configs: []string{cfg}, Log: slog.New(rec)}, &fakeNotifier{ready: make(chan struct{}, 1)})
	m := rec.mark()
	if err := os.Rename(filepath.Join(root, "/etc/storm"), filepath.Join(root, "/etc/storm.gone")); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/etc/storm/d1/f", "/etc/storm/d2/f"} {
		rec.wait(t, m, journal.RecordDriftDetected, map[string]string{"DRIFT_PATH": p, "DRIFT_KIND": "missing"})
	}
	m = rec.mark()
	write("/etc/storm/d1/f", "tampered\n")
	write("/etc/storm/d2/f", "two\n")
	rec.wait(t, m, journal.RecordDriftDetected, map[string]string{"DRIFT_PATH": "/etc/storm/d1/f", "DRIFT_KIND": "content"})
	// os.WriteFile creates the file before it writes: a daemon that looks
	// in between sees it empty, and the drift it resolves is then that
	// content, not the missing file.
	rec.wait(t, m, journal.MsgDriftResolved, map[string]string{"DRIFT_PATH": "/etc/storm/d2/f"})
	// The watches followed: a later change in the new tree is seen too.
	m = rec.mark()
	write("/etc/storm/d2/f", "tampered\n")
	rec.wait(t, m, journal.RecordDriftDetected, map[string]string{"DRIFT_PATH": "/etc/storm/d2/f", "DRIFT_KIND": "content"})
}
