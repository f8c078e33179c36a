package systemd_test

import (
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/drift-monitor/drift-monitor/test/harness"
)

// TestMetricsSocket: the shipped drift-monitor-metrics.socket and .service,
// under the real systemd, with the shipped bus policy: a scrape starts the
// unprivileged service (no network of its own), which answers
// from the daemon's GetMetrics — drifted on a host that was drifted when the
// daemon started, clean once repaired — while drift-monitor.service keeps
// PrivateNetwork=yes.
func TestMetricsSocket(t *testing.T) {
	t.Parallel()
	h := bootDaemon(t, setup{
		config:    etcFileAndSentinel,
		files:     []file{{etcFile, "tampered\n", 0o644}, sentinelFile},
		busPolicy: true,
	})
	// The container shares the host's network: the socket listens on a
	// free loopback port of the host's, set by a drop-in as an admin would.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	for _, u := range []string{"drift-monitor-metrics.socket", "drift-monitor-metrics.service"} {
		b, err := os.ReadFile("../../units/" + u)
		if err != nil {
			t.Fatal(err)
		}
		h.WriteFile(t, "/etc/systemd/system/"+u, b, 0o644)
	}
	h.WriteFile(t, "/etc/systemd/system/drift-monitor-metrics.socket.d/port.conf",
		[]byte("[Socket]\nListenStream=\nListenStream="+addr+"\n"), 0o644)
	h.MustRun(t, "systemctl", "daemon-reload")
	h.MustRun(t, "systemctl", "start", "drift-monitor-metrics.socket")

	url := "http://" + addr + "/metrics"
	get := func() (int, string) {
		c := http.Client{Timeout: 15 * time.Second}
		resp, err := c.Get(url)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	code, body := get()
	if code != http.StatusOK {
		t.Fatalf("GET %s: %d %s", url, code, body)
	}
	for _, want := range []string{`drift_monitor_state{state="drifted"} 1`, `drift_monitor_state{state="clean"} 0`,
		`drift_monitor_drift_entries{kind="content"} 1`, `drift_monitor_watched_paths 2`} {
		if !strings.Contains(body, want+"\n") {
			t.Errorf("GET /metrics lacks %s:\n%s", want, body)
		}
	}
	// Started by the scrape, unprivileged, without network; the daemon
	// keeps none either.
	show := func(unit, props string) string {
		return strings.TrimSpace(h.MustRun(t, "systemctl", "show", "-p", props, unit))
	}
	for _, p := range []string{"ActiveState=active", "PrivateNetwork=yes"} {
		if got := show("drift-monitor-metrics.service", strings.Split(p, "=")[0]); got != p {
			t.Errorf("drift-monitor-metrics.service: %s, want %s", got, p)
		}
	}
	if got := show(service, "PrivateNetwork"); got != "PrivateNetwork=yes" {
		t.Errorf("%s: %s", service, got)
	}
	pid := strings.TrimPrefix(show("drift-monitor-metrics.service", "MainPID"), "MainPID=")
	// /proc/PID belongs to the process's effective uid.
	if uid := strings.TrimSpace(h.sh(`stat -c %u /proc/"$1"`, pid)); uid == "0" || uid == "" {
		t.Errorf("metrics-http runs as root (pid %s)", pid)
	}

	from := h.mark()
	h.WriteFile(t, etcFile, []byte(etcFileOK.content), 0o644)
	h.waitRecord(from, harness.MsgDriftResolved, map[string]string{"DRIFT_PATH": etcFile})
	if code, body = get(); code != http.StatusOK || !strings.Contains(body, `drift_monitor_state{state="clean"} 1`+"\n") {
		t.Errorf("after the repair: %d\n%s", code, body)
	}
	t.Logf("scrape through the socket: %d bytes", len(body))
}

// TestMetricsTextfileDropIn: the shipped drop-in
// (packaging/prometheus/metrics-textfile.conf) turns the textfile on under
// the unit's hardening — ProtectSystem=strict, UMask=0077: the file appears
// in node_exporter's directory, mode 0644, saying drifted for a host that
// was drifted at start, with no temporary file left beside it.
func TestMetricsTextfileDropIn(t *testing.T) {
	t.Parallel()
	dropIn, err := os.ReadFile("../../packaging/prometheus/metrics-textfile.conf")
	if err != nil {
		t.Fatal(err)
	}
	const dir = "/var/lib/node_exporter/textfile_collector"
	h := bootDaemon(t, setup{
		config:   etcFileAndSentinel,
		files:    []file{{etcFile, "tampered\n", 0o644}, sentinelFile},
		commands: []string{"mkdir -p " + dir},
		dropIn:   string(dropIn),
	})
	// systemctl restart returned after READY=1, so after the first check;
	// the first write follows it on the writer's goroutine.
	var out string
	deadline := time.Now().Add(recordTimeout)
	for {
		o, _, code := h.run("sh", "-c", `cd "$1" && stat -c '%a %n' * && cat drift-monitor.prom`, "sh", dir)
		if out = o; code == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s/drift-monitor.prom within %s: %s", dir, recordTimeout, out)
		}
		time.Sleep(50 * time.Millisecond) // a poll interval inside a bounded wait
	}
	if !strings.HasPrefix(out, "644 drift-monitor.prom\n") {
		t.Errorf("the textfile directory holds (want only drift-monitor.prom, mode 644):\n%s", out)
	}
	if !strings.Contains(out, `drift_monitor_state{state="drifted"} 1`+"\n") {
		t.Errorf("the textfile does not say drifted:\n%s", out)
	}
}

// TestMetricsTextfileOnAFullFilesystem: under the shipped drop-in, a
// textfile that cannot be written (its file system full) is removed, so
// that node_exporter stops exporting what it last said (clean, while the
// host drifted), and the failure is journaled once however often the write
// is retried (each attempt's error named another random temporary file,
// and the record came every 30 s); with room again, the file says how the
// host is.
func TestMetricsTextfileOnAFullFilesystem(t *testing.T) {
	t.Parallel()
	dropIn, err := os.ReadFile("../../packaging/prometheus/metrics-textfile.conf")
	if err != nil {
		t.Fatal(err)
	}
	const dir = "/var/lib/node_exporter/textfile_collector"
	const prom = dir + "/drift-monitor.prom"
	h := bootDaemon(t, setup{
		config:   etcFileAndSentinel,
		files:    []file{etcFileOK, sentinelFile},
		commands: []string{"mkdir -p " + dir, "mount -t tmpfs -o size=256k tmpfs " + dir},
		dropIn:   string(dropIn),
	})
	says := func(what, state string) {
		t.Helper()
		h.WaitFor(t, recordTimeout, what, func() (bool, string) {
			out, _, code := h.run("cat", prom)
			return code == 0 && strings.Contains(out, `drift_monitor_state{state="`+state+`"} 1`+"\n"), out
		})
	}
	says("the textfile, clean", "clean")

	m := h.mark()
	// Changes for the writer to write, and fail to: drift, its repair,
	// drift again, each a write (at most one a second). Before each, the
	// file system filled up again (the removal of the textfile frees its
	// room), and an empty file in the textfile's place (it needs none): an
	// attempt that fails removes it, which is how the test sees it.
	for _, content := range []string{"tampered\n", etcFileOK.content, "tampered again\n"} {
		h.sh(`dd if=/dev/zero of="$1/.fill" bs=1k oflag=append conv=notrunc 2>/dev/null; touch "$1/drift-monitor.prom"`, dir)
		from := h.mark()
		h.WriteFile(t, etcFile, []byte(content), 0o644)
		id := harness.DriftDetected
		if content == etcFileOK.content {
			id = harness.MsgDriftResolved
		}
		h.waitRecord(from, id, map[string]string{"DRIFT_PATH": etcFile})
		h.WaitFor(t, recordTimeout, "a failed write, which removes the file in the textfile's place", func() (bool, string) {
			_, _, code := h.run("test", "-e", prom)
			return code != 0, "still there"
		})
	}
	h.waitStatus("Drift: 1 path differs (/etc/etc-file: content)")
	if got := h.between(m, h.mark(), harness.MsgMetricsFailed, nil); len(got) != 1 {
		t.Errorf("%d records of failed writes of one cause, want 1: %v", len(got), got)
	} else if !strings.Contains(got[0]["MESSAGE"], "no space left on device") || got[0]["METRICS_FILE"] != prom {
		t.Errorf("the record does not say why, or of which file: %s", got[0])
	}

	h.MustRun(t, "rm", dir+"/.fill")
	says("the textfile again, drifted", "drifted")
}
