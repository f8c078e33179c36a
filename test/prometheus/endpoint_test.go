package prometheus

import (
	"bufio"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/drift-monitor/drift-monitor/test/harness"
)

// scrape GETs url and returns the status and body.
func scrape(url string) (int, string, error) {
	c := http.Client{Timeout: 15 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	var b strings.Builder
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		b.WriteString(sc.Text() + "\n")
	}
	return resp.StatusCode, b.String(), sc.Err()
}

// TestMetricsEndpoint: `drift-monitor metrics-http`, socket-activated by
// systemd-socket-activate as drift-monitor-metrics.socket does it, answers
// 503 while the daemon is not on the bus, then the daemon's metrics
// (through GetMetrics on a private system bus): drifted for a host that
// was drifted when the daemon started, clean once repaired; and what it
// serves passes `promtool check metrics`.
func TestMetricsEndpoint(t *testing.T) {
	harness.RequireTools(t, "promtool", "systemd-socket-activate")
	bin := harness.Binary(t)
	dir := t.TempDir()
	os.Chmod(dir, 0o755)
	// Permissive: the shipped policy's GetMetrics rule is the packaging
	// tier's to test.
	bus := harness.PrivateBus(t, harness.PermissiveBus)
	t.Setenv("DBUS_SYSTEM_BUS_ADDRESS", bus)
	root, cfg := newHost(t, dir, "server evil.example.com iburst\n")

	port := freePort(t)
	url := "http://" + addr(port) + "/metrics"
	ep := start(t, dir, "metrics-http", "systemd-socket-activate", "-l", addr(port),
		"-E", "DBUS_SYSTEM_BUS_ADDRESS="+bus, bin, "metrics-http")
	waitFor(t, chainTimeout, "the endpoint's socket", func() bool {
		code, body, err := scrape(url)
		if err == nil && code != http.StatusServiceUnavailable {
			t.Fatalf("with no daemon on the bus: %d %q, want 503", code, body)
		}
		return err == nil
	}, ep)

	daemon := start(t, dir, "drift-monitor", bin, "daemon", "--root", root, "--config", cfg, "--no-cache",
		"--inhibit-dir", filepath.Join(dir, "inhibit"), "--exclude-from=")
	procs := []*proc{ep, daemon}
	var body string
	waitFor(t, chainTimeout, "metrics from the endpoint", func() bool {
		code, b, err := scrape(url)
		if err != nil {
			return false
		}
		if code == http.StatusOK {
			body = b
			return true
		}
		if code != http.StatusServiceUnavailable {
			t.Fatalf("GET /metrics: %d %q", code, b)
		}
		return false
	}, procs...)
	// The first answer is already the first check's: drifted, never clean.
	for _, want := range []string{`drift_monitor_state{state="drifted"} 1`, `drift_monitor_state{state="clean"} 0`,
		`drift_monitor_drift_entries{kind="content"} 1`} {
		if !strings.Contains(body, want+"\n") {
			t.Errorf("GET /metrics lacks %s:\n%s", want, body)
		}
	}
	promtoolCheck(t, "GET /metrics", []byte(body))

	replace(t, filepath.Join(root, "etc/chrony.conf"), chrony)
	waitFor(t, chainTimeout, "clean at the endpoint", func() bool {
		code, b, err := scrape(url)
		return err == nil && code == http.StatusOK && strings.Contains(b, `drift_monitor_state{state="clean"} 1`+"\n")
	}, procs...)
}
