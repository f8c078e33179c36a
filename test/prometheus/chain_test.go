package prometheus

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/drift-monitor/drift-monitor/test/harness"
	"sigs.k8s.io/yaml"
)

// chainTimeout bounds each wait on the chain. The chain itself takes
// seconds from a drift to the webhook (1 s scrapes and evaluations, the rule's
// shortened for:, Alertmanager's 1 s group_wait); the bound is for a loaded
// two-core machine.
const chainTimeout = 90 * time.Second

const chrony = "server time.example.com iburst\n"

// webhook is Alertmanager's receiver: it keeps every notification.
type webhook struct {
	mu   sync.Mutex
	msgs []notification
}

type notification struct {
	at     time.Time
	Status string `json:"status"`
	Alerts []struct {
		Status string            `json:"status"`
		Labels map[string]string `json:"labels"`
	} `json:"alerts"`
}

func (w *webhook) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	var n notification
	if err := json.NewDecoder(r.Body).Decode(&n); err != nil {
		http.Error(rw, err.Error(), http.StatusBadRequest)
		return
	}
	n.at = time.Now()
	w.mu.Lock()
	w.msgs = append(w.msgs, n)
	w.mu.Unlock()
}

// first returns when the first notification after from had alertname in
// the given status.
func (w *webhook) first(alertname, status string, from time.Time) (time.Time, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, n := range w.msgs {
		for _, a := range n.Alerts {
			if a.Labels["alertname"] == alertname && a.Status == status && !n.at.Before(from) {
				return n.at, true
			}
		}
	}
	return time.Time{}, false
}

func (w *webhook) names() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var s []string
	for _, n := range w.msgs {
		for _, a := range n.Alerts {
			s = append(s, a.Labels["alertname"]+"="+a.Status)
		}
	}
	return s
}

// testRules is the shipped rules file with ConfigDriftDetected's for:
// shortened, so that the test waits seconds rather than a minute; every
// expression is the shipped one.
func testRules(t *testing.T, dir string) string {
	t.Helper()
	b, err := os.ReadFile(rulesFile(t))
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatalf("%s: %v", rulesFile(t), err)
	}
	found := false
	for _, g := range doc["groups"].([]any) {
		for _, r := range g.(map[string]any)["rules"].([]any) {
			if r := r.(map[string]any); r["alert"] == "ConfigDriftDetected" {
				r["for"], found = "2s", true
			}
		}
	}
	if !found {
		t.Fatal("no ConfigDriftDetected rule in the shipped rules")
	}
	out, err := yaml.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "rules.yml")
	writeFile(t, p, string(out), 0o644)
	return p
}

// newHost makes a root declaring one file, /etc/chrony.conf with chrony's
// content, and puts content there; it returns the root and the config.
func newHost(t *testing.T, dir, content string) (root, cfg string) {
	t.Helper()
	root = filepath.Join(dir, "root")
	writeFile(t, filepath.Join(root, "etc/chrony.conf"), content, 0o644)
	cfg = filepath.Join(dir, "desired.ign")
	writeFile(t, cfg, fmt.Sprintf(`{"ignition":{"version":"3.4.0"},"storage":{"files":[{"path":"/etc/chrony.conf","mode":420,"overwrite":true,
		"contents":{"source":"data:,%s"}}]}}`, strings.ReplaceAll(strings.TrimSuffix(chrony, "\n"), " ", "%20")+"%0A"), 0o644)
	// The digest key the daemon makes goes to the test's directory, not
	// the host's /var/lib/drift-monitor.
	t.Setenv("STATE_DIRECTORY", filepath.Join(dir, "state"))
	return root, cfg
}

// promtoolCheck runs `promtool check metrics` on an exposition: no error,
// no lint.
func promtoolCheck(t *testing.T, what string, text []byte) {
	t.Helper()
	check := exec.Command("promtool", "check", "metrics")
	check.Stdin = strings.NewReader(string(text))
	out, err := check.CombinedOutput()
	if err != nil || len(strings.TrimSpace(string(out))) != 0 {
		t.Errorf("promtool check metrics on %s: %v\n%s\non:\n%s", what, err, out, text)
	}
}

func writeFile(t *testing.T, p, s string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(s), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
}

// replace writes p's new content the way an editor or a config tool does:
// a temporary file renamed into place.
func replace(t *testing.T, p, s string) {
	t.Helper()
	writeFile(t, p+".tmp", s, 0o644)
	if err := os.Rename(p+".tmp", p); err != nil {
		t.Fatal(err)
	}
}

func httpGet(url string) (string, error) {
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var b strings.Builder
	buf := make([]byte, 64<<10)
	for {
		n, err := resp.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			break
		}
	}
	if resp.StatusCode != http.StatusOK {
		return b.String(), fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return b.String(), nil
}

// TestDriftAlertChain: a drift on the host makes ConfigDriftDetected fire at
// Alertmanager's webhook, through the real node_exporter, Prometheus (with
// the shipped rules) and Alertmanager; restoring the file resolves it. The
// daemon's real textfile passes `promtool check metrics`.
func TestDriftAlertChain(t *testing.T) {
	harness.RequireTools(t, "promtool", "prometheus", "prometheus-node-exporter", "prometheus-alertmanager")
	bin := harness.Binary(t)
	dir := t.TempDir()
	os.Chmod(dir, 0o755)

	root, cfg := newHost(t, dir, chrony)
	textdir := filepath.Join(dir, "textfile")
	if err := os.Mkdir(textdir, 0o755); err != nil {
		t.Fatal(err)
	}
	prom := filepath.Join(textdir, "drift-monitor.prom")

	// The receiver, then the components, each on a free loopback port.
	hook := &webhook{}
	hl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: hook}
	go srv.Serve(hl)
	t.Cleanup(func() { srv.Close() })

	daemon := start(t, dir, "drift-monitor", bin, "daemon", "--root", root, "--config", cfg, "--bus=false", "--no-cache",
		"--inhibit-dir", filepath.Join(dir, "inhibit"), "--exclude-from=", "--metrics-textfile", prom)
	waitFor(t, chainTimeout, "the daemon's textfile", func() bool { _, err := os.Stat(prom); return err == nil }, daemon)

	// promtool on the real output.
	text, err := os.ReadFile(prom)
	if err != nil {
		t.Fatal(err)
	}
	promtoolCheck(t, prom, text)

	nePort, promPort, amPort := freePort(t), freePort(t), freePort(t)
	ne := start(t, dir, "node_exporter", "prometheus-node-exporter", "--collector.disable-defaults", "--collector.textfile",
		"--collector.textfile.directory="+textdir, "--web.listen-address="+addr(nePort))

	writeFile(t, filepath.Join(dir, "am.yml"), fmt.Sprintf(`route:
  receiver: test
  group_by: [alertname, instance]
  group_wait: 1s
  group_interval: 1s
  repeat_interval: 1h
receivers:
  - name: test
    webhook_configs:
      - url: http://%s/
        send_resolved: true
`, hl.Addr()), 0o644)
	am := start(t, dir, "alertmanager", "prometheus-alertmanager", "--config.file="+filepath.Join(dir, "am.yml"),
		"--storage.path="+filepath.Join(dir, "am"), "--web.listen-address="+addr(amPort), "--cluster.listen-address=")

	writeFile(t, filepath.Join(dir, "prom.yml"), fmt.Sprintf(`global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files: [%q]
alerting:
  alertmanagers:
    - static_configs:
        - targets: [%q]
scrape_configs:
  - job_name: node
    static_configs:
      - targets: [%q]
`, testRules(t, dir), addr(amPort), addr(nePort)), 0o644)
	pr := start(t, dir, "prometheus", "prometheus", "--config.file="+filepath.Join(dir, "prom.yml"),
		"--storage.tsdb.path="+filepath.Join(dir, "tsdb"), "--web.listen-address="+addr(promPort))
	procs := []*proc{daemon, ne, am, pr}

	// Clean, and seen clean by Prometheus through node_exporter.
	query := fmt.Sprintf("http://%s/api/v1/query?query=drift_monitor_state%%7Bstate%%3D%%22clean%%22%%7D%%3D%%3D1", addr(promPort))
	waitFor(t, chainTimeout, "Prometheus seeing drift_monitor_state{state=\"clean\"} == 1", func() bool {
		b, err := httpGet(query)
		return err == nil && strings.Contains(b, `"state":"clean"`)
	}, procs...)
	waitFor(t, chainTimeout, "Alertmanager ready", func() bool {
		_, err := httpGet("http://" + addr(amPort) + "/-/ready")
		return err == nil
	}, procs...)
	if _, ok := hook.first("ConfigDriftDetected", "firing", time.Time{}); ok {
		t.Fatalf("ConfigDriftDetected fired on a clean host: %v", hook.names())
	}

	drifted := time.Now()
	replace(t, filepath.Join(root, "etc/chrony.conf"), "server evil.example.com iburst\n")
	var fired time.Time
	waitFor(t, chainTimeout, "ConfigDriftDetected firing at the webhook", func() bool {
		var ok bool
		fired, ok = hook.first("ConfigDriftDetected", "firing", drifted)
		return ok
	}, procs...)
	t.Logf("drift to alert at the webhook: %s (scrape and evaluation every 1s, for: 2s, group_wait 1s)", fired.Sub(drifted).Round(10*time.Millisecond))

	restored := time.Now()
	replace(t, filepath.Join(root, "etc/chrony.conf"), chrony)
	waitFor(t, chainTimeout, "ConfigDriftDetected resolved at the webhook", func() bool {
		_, ok := hook.first("ConfigDriftDetected", "resolved", restored)
		return ok
	}, procs...)
	r, _ := hook.first("ConfigDriftDetected", "resolved", restored)
	t.Logf("restore to resolved at the webhook: %s", r.Sub(restored).Round(10*time.Millisecond))
	for _, n := range hook.names() {
		if !strings.HasPrefix(n, "ConfigDriftDetected=") {
			t.Errorf("another alert reached the webhook: %s (all: %v)", n, hook.names())
		}
	}
}
