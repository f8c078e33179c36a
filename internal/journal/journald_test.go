package journal

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"log/slog"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestJournaldRoundTrip sends a record through go-systemd's journal.Send to
// the real journald and reads it back with journalctl. It needs a running
// journald (the systemd tier runs it inside a booted container) and skips
// elsewhere.
func TestJournaldRoundTrip(t *testing.T) {
	if _, err := os.Stat("/run/systemd/journal/socket"); err != nil {
		t.Skip("no journald here (/run/systemd/journal/socket); the systemd tier runs this")
	}
	journalctl, err := exec.LookPath("journalctl")
	if err != nil {
		t.Skip("journalctl not installed")
	}
	run := make([]byte, 8)
	if _, err := rand.Read(run); err != nil {
		t.Fatal(err)
	}
	runID := hex.EncodeToString(run)

	var plain bytes.Buffer
	l := slog.New(NewHandler(&plain, WithNative(true)))
	l.Warn("Drift: /etc/a b content differs\n-want\n+got",
		MessageID(msgFileDrift), Kind("content"), Path("/etc/a b"), "test-run", runID)
	if plain.Len() != 0 {
		t.Fatalf("the record fell back to plain output: %q", plain.String())
	}

	var rec map[string]any
	deadline := time.Now().Add(10 * time.Second)
	for {
		out, err := exec.Command(journalctl, "-o", "json", "--no-pager", "TEST_RUN="+runID).Output()
		if err != nil {
			t.Fatalf("journalctl: %v", err)
		}
		if len(bytes.TrimSpace(out)) > 0 {
			if err := json.Unmarshal(bytes.Split(bytes.TrimSpace(out), []byte("\n"))[0], &rec); err != nil {
				t.Fatalf("journalctl -o json: %v\n%s", err, out)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the record did not show up in the journal within 10s")
		}
		time.Sleep(50 * time.Millisecond)
	}
	got := map[string]any{}
	for _, k := range []string{"MESSAGE", "PRIORITY", "SYSLOG_IDENTIFIER", "MESSAGE_ID", "DRIFT_KIND", "DRIFT_PATH", "TEST_RUN"} {
		got[k] = rec[k]
	}
	want := map[string]any{
		"MESSAGE":           "Drift: /etc/a b content differs\n-want\n+got",
		"PRIORITY":          "4",
		"SYSLOG_IDENTIFIER": "drift-monitor",
		"MESSAGE_ID":        msgFileDrift,
		"DRIFT_KIND":        "content",
		"DRIFT_PATH":        "/etc/a b",
		"TEST_RUN":          runID,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("journal record (-want +got):\n%s", diff)
	}
	if rec["CODE_FILE"] == nil || rec["CODE_FUNC"] == nil {
		t.Errorf("no CODE_FILE/CODE_FUNC in %v", rec)
	}
}
