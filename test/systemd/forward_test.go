package systemd_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/drift-monitor/drift-monitor/test/harness"
)

// journalRemote and journalUpload are Debian's systemd-journal-remote
// package.
const (
	journalRemote = "/lib/systemd/systemd-journal-remote"
	journalUpload = "/lib/systemd/systemd-journal-upload"
)

// jsonNullAt: journalctl -o json prints FIELD=value of this many bytes or
// more as null without --all (systemd's JSON_THRESHOLD).
const jsonNullAt = 4096

// TestJournalForwarding sends the daemon's records through the real
// systemd-journal-upload (in the container, as a host would) to the real
// systemd-journal-remote (on the test's host, on loopback), and finds on
// the receiving side every MESSAGE_ID and DRIFT_* field of every drift
// record as the daemon wrote it — a diff far larger than 4 KiB included —
// and, read with plain `journalctl -o json` (what the OpenTelemetry journald
// receiver runs), no MESSAGE nor any field but a long DRIFT_DIFF lost as
// null.
func TestJournalForwarding(t *testing.T) {
	t.Parallel()
	for _, p := range []string{journalRemote, journalUpload} {
		if _, err := os.Stat(p); err != nil {
			harness.Unavailable(t, "%v (Debian package systemd-journal-remote)", err)
		}
	}
	// A world-readable declared file of 400 lines, so that its diff is
	// shown and passes 4 KiB (about 16 KiB each way).
	var want, got strings.Builder
	for i := range 400 {
		fmt.Fprintf(&want, "option-%03d = declared value\n", i)
		fmt.Fprintf(&got, "option-%03d = changed value\n", i)
	}
	const big = "/etc/big.conf"
	config := `{"ignition":{"version":"3.4.0"},"storage":{"files":[
 {"path":"` + big + `","mode":420,"contents":{"source":"data:;base64,` + base64.StdEncoding.EncodeToString([]byte(want.String())) + `"}},
 {"path":"/etc/sentinel","mode":420,"contents":{"source":"data:,s%0A"}}]}}`
	h := bootDaemon(t, setup{config: config, files: []file{{big, want.String(), 0o644}, sentinelFile}})
	h.waitStatus("No drift: watching 2 paths, 0 units")

	m := h.mark()
	// Renamed into place, as an editor does: the daemon sees the whole
	// new content at once.
	h.WriteFile(t, big+".new", []byte(got.String()), 0o644)
	h.MustRun(t, "mv", big+".new", big)
	h.MustRun(t, "chmod", "0600", sentinel)
	h.waitRecord(m, harness.DriftDetected, map[string]string{"DRIFT_PATH": big, "DRIFT_KIND": "content"})
	h.waitRecord(m, harness.DriftDetected, map[string]string{"DRIFT_PATH": sentinel, "DRIFT_KIND": "mode"})
	h.MustRun(t, "chmod", "0644", sentinel)
	h.waitRecord(m, harness.MsgDriftResolved, map[string]string{"DRIFT_PATH": sentinel})
	h.MustRun(t, "journalctl", "--sync")
	sent, err := h.Records()
	if err != nil {
		t.Fatal(err)
	}
	var drifts []harness.Record
	for _, r := range sent {
		if r.Matches(harness.DriftDetected, nil) || r.Matches(harness.MsgDriftResolved, nil) {
			drifts = append(drifts, r)
		}
	}
	if len(drifts) < 3 {
		t.Fatalf("%d drift records in the daemon's journal, want at least 3", len(drifts))
	}
	var bigDiff string
	for _, r := range drifts {
		if r["DRIFT_PATH"] == big && r.Matches(harness.DriftDetected, nil) {
			bigDiff = r["DRIFT_DIFF"]
		}
	}
	if len("DRIFT_DIFF=")+len(bigDiff) < jsonNullAt {
		t.Fatalf("the diff of %s is %d bytes: the test needs one past journalctl's JSON threshold", big, len(bigDiff))
	}

	// The receiving side, on loopback: the container shares the host's
	// network.
	dir := t.TempDir()
	out := filepath.Join(dir, "remote.journal")
	port := freePort(t)
	remote := exec.Command(journalRemote, "--listen-http=127.0.0.1:"+strconv.Itoa(port), "--split-mode=none", "--output="+out)
	logFile, err := os.Create(filepath.Join(dir, "remote.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	remote.Stdout, remote.Stderr = logFile, logFile
	remoteLog := func() string { b, _ := os.ReadFile(logFile.Name()); return string(b) }
	if err := remote.Start(); err != nil {
		t.Fatal(err)
	}
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		_ = remote.Process.Signal(syscall.SIGTERM)
		done := make(chan error, 1)
		go func() { done <- remote.Wait() }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = remote.Process.Kill()
			<-done
			t.Errorf("systemd-journal-remote did not stop within 30s of SIGTERM:\n%s", remoteLog())
		}
	}
	t.Cleanup(stop)
	h.WaitFor(t, recordTimeout, "systemd-journal-remote listening", func() (bool, string) {
		c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(port), time.Second)
		if err != nil {
			return false, err.Error() + "\n" + remoteLog()
		}
		c.Close()
		return true, ""
	})
	// --follow=no: upload what is there and exit.
	h.MustRun(t, journalUpload, "--url=http://127.0.0.1:"+strconv.Itoa(port), "--follow=no")
	stop()

	read := func(all bool) map[string]map[string]any {
		args := []string{"--file=" + out, "-o", "json", "--no-pager", "_SYSTEMD_INVOCATION_ID=" + h.inv}
		if all {
			args = append(args, "--all")
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		b, err := exec.CommandContext(ctx, "journalctl", args...).Output()
		if err != nil {
			t.Fatalf("journalctl %s: %v", strings.Join(args, " "), err)
		}
		recs := map[string]map[string]any{}
		for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			var r map[string]any
			if err := json.Unmarshal([]byte(line), &r); err != nil {
				t.Fatalf("journalctl -o json: %v: %.200s", err, line)
			}
			if ts, ok := r["__REALTIME_TIMESTAMP"].(string); ok {
				recs[ts] = r
			}
		}
		return recs
	}
	withAll, plain := read(true), read(false)
	for _, d := range drifts {
		ts := d["__REALTIME_TIMESTAMP"]
		all, ok := withAll[ts]
		if !ok {
			t.Errorf("not received: %s", d)
			continue
		}
		for k := range d {
			if k != "MESSAGE_ID" && k != "MESSAGE" && k != "PRIORITY" && !strings.HasPrefix(k, "DRIFT_") {
				continue
			}
			if got, _ := all[k].(string); got != d[k] {
				t.Errorf("%s of %s: received %.200q, sent %.200q", k, d, got, d[k])
			}
			long := len(k)+1+len(d[k]) >= jsonNullAt
			if v := plain[ts][k]; v == nil && !(long && k == "DRIFT_DIFF") {
				t.Errorf("%s of %s reads as null in journalctl -o json without --all (%d bytes)", k, d, len(d[k]))
			}
		}
	}
	if !strings.Contains(bigDiff, "\n-option-000 = declared value\n") || !strings.Contains(bigDiff, "\n+option-000 = changed value\n") {
		t.Errorf("the diff of %s does not show both sides: %.300q", big, bigDiff)
	}
	// What a forwarded drift costs: the export format is what
	// systemd-journal-upload sends (README, Fleets).
	for _, c := range []struct{ name, path, typ string }{
		{"mode drift", sentinel, harness.DriftDetected}, {"mode resolved", sentinel, "drift-resolved"}, {"400-line content drift", big, harness.DriftDetected},
	} {
		exp := h.MustRun(t, "journalctl", "-o", "export", "_SYSTEMD_INVOCATION_ID="+h.inv, "DRIFT_MONITOR_RECORD="+c.typ, "DRIFT_PATH="+c.path)
		t.Logf("%s: %d bytes in journal export format", c.name, len(exp))
	}
}

// freePort is a TCP port on 127.0.0.1 that was free a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
