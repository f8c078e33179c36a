package systemd_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/drift-monitor/drift-monitor/test/harness"
)

// npdConfig is what node-problem-detector reads of a custom plugin
// monitor's config (pkg/custompluginmonitor/types/config.go and types.go in
// kubernetes/node-problem-detector): the fields the shipped one uses.
type npdConfig struct {
	Plugin       string `json:"plugin"`
	PluginConfig struct {
		Timeout         string `json:"timeout"`
		MaxOutputLength int    `json:"max_output_length"`
	} `json:"pluginConfig"`
	Source     string `json:"source"`
	Conditions []struct {
		Type, Reason, Message string
	} `json:"conditions"`
	Rules []struct {
		Type      string   `json:"type"`
		Condition string   `json:"condition"`
		Reason    string   `json:"reason"`
		Path      string   `json:"path"`
		Args      []string `json:"args"`
		Timeout   string   `json:"timeout"`
	} `json:"rules"`
}

// npdStatus is a plugin result as node-problem-detector maps it
// (toConditionStatus in pkg/custompluginmonitor/custom_plugin_monitor.go):
// exit 0 is OK (condition False), 1 a problem (True), anything else,
// a timeout included, Unknown.
type npdStatus string

const (
	npdOK      npdStatus = "OK"
	npdProblem npdStatus = "NonOK"
	npdUnknown npdStatus = "Unknown"
)

// runLikeNPD runs the plugin inside the container the way
// node-problem-detector's plugin.run does (pkg/custompluginmonitor/plugin/
// plugin.go): in a process group of its own, killed as a group at the
// timeout, at most 4096 bytes of stdout read, trimmed of surrounding space,
// cut at max_output_length bytes; the exit status decides. It returns the
// status, the condition message and how long the plugin took.
func runLikeNPD(t *testing.T, h *host, path string, args []string, timeout time.Duration, maxOutput int) (npdStatus, string, time.Duration) {
	t.Helper()
	cmd := exec.Command("nsenter", append([]string{"-t", strconv.Itoa(h.InitPID), "-a", "--", path}, args...)...)
	cmd.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = io.Discard
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	killed := false
	timer := time.AfterFunc(timeout, func() {
		mu.Lock()
		killed = true
		mu.Unlock()
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	})
	out, _ := io.ReadAll(io.LimitReader(stdout, 4096))
	_, _ = io.Copy(io.Discard, stdout)
	werr := cmd.Wait()
	took := time.Since(start)
	timer.Stop()
	if _, ok := werr.(*exec.ExitError); werr != nil && !ok {
		t.Fatalf("waiting for %s: %v", path, werr)
	}
	msg := strings.TrimSpace(string(out))
	mu.Lock()
	if killed {
		msg = fmt.Sprintf("Timeout when running plugin %q: state - %s. output - %q", path, cmd.ProcessState, msg)
	}
	mu.Unlock()
	if len(msg) > maxOutput {
		msg = msg[:maxOutput]
	}
	switch cmd.ProcessState.Sys().(syscall.WaitStatus).ExitStatus() {
	case 0:
		return npdOK, msg, took
	case 1:
		return npdProblem, msg, took
	}
	return npdUnknown, msg, took
}

// TestNodeProblemDetectorPlugin runs the shipped custom plugin monitor
// config's rule exactly as node-problem-detector would, against the real
// daemon in a booted systemd: clean is OK with "No drift", a drift is a
// problem whose 80-byte message still names it, a stopped daemon and a
// daemon that does not answer (SIGSTOP) are Unknown with a message that
// says so — and the plugin answers before node-problem-detector's timeout.
func TestNodeProblemDetectorPlugin(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("../../packaging/node-problem-detector/drift-monitor.json")
	if err != nil {
		t.Fatal(err)
	}
	var cfg npdConfig
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(&cfg); err != nil {
		t.Fatalf("the shipped plugin config: %v", err)
	}
	if cfg.Plugin != "custom" || len(cfg.Rules) != 1 || len(cfg.Conditions) != 1 ||
		cfg.Rules[0].Type != "permanent" || cfg.Rules[0].Condition != "ConfigDrift" || cfg.Conditions[0].Type != "ConfigDrift" {
		t.Fatalf("the shipped plugin config has no permanent ConfigDrift rule with its default condition: %+v", cfg)
	}
	rule := cfg.Rules[0]
	global, err := time.ParseDuration(cfg.PluginConfig.Timeout)
	if err != nil {
		t.Fatal(err)
	}
	timeout := global
	if rule.Timeout != "" {
		if timeout, err = time.ParseDuration(rule.Timeout); err != nil || timeout > global {
			t.Fatalf("rule timeout %q: %v (NPD refuses one above the global %v)", rule.Timeout, err, global)
		}
	}
	maxOut := cfg.PluginConfig.MaxOutputLength
	if maxOut == 0 {
		maxOut = 80 // NPD's default
	}

	// A declared path long enough that the status line passes 80 bytes.
	const long = "/etc/a-rather-long-directory-name/with-a-long-file-name.conf"
	config := `{"ignition":{"version":"3.4.0"},"storage":{"files":[
 {"path":"` + long + `","mode":420,"contents":{"source":"data:,x%0A"}},
 {"path":"/etc/sentinel","mode":420,"contents":{"source":"data:,s%0A"}}]}}`
	h := bootDaemon(t, setup{config: config, files: []file{{long, "x\n", 0o644}, sentinelFile}, busPolicy: true})
	h.waitStatus("No drift: watching 2 paths, 0 units")
	run := func(t *testing.T) (npdStatus, string, time.Duration) {
		return runLikeNPD(t, h, rule.Path, rule.Args, timeout, maxOut)
	}
	expect := func(t *testing.T, wantStatus npdStatus, wantPrefix string) {
		t.Helper()
		st, msg, took := run(t)
		t.Logf("plugin: %s %q after %v", st, msg, took.Round(time.Millisecond))
		if st != wantStatus || !strings.HasPrefix(msg, wantPrefix) {
			t.Errorf("plugin: %s %q (after %v), want %s starting %q", st, msg, took.Round(time.Millisecond), wantStatus, wantPrefix)
		}
		if strings.Contains(msg, "\n") {
			t.Errorf("plugin message %q has more than one line", msg)
		}
	}

	t.Run("clean", func(t *testing.T) {
		expect(t, npdOK, "No drift: watching 2 paths, 0 units")
	})
	t.Run("drift", func(t *testing.T) {
		h := h.in(t)
		m := h.mark()
		h.MustRun(t, "chmod", "0600", long)
		h.waitRecord(m, harness.DriftDetected, map[string]string{"DRIFT_PATH": long})
		// Cut at 80 bytes the message still says drift, how much, and starts naming the path.
		expect(t, npdProblem, "Drift: 1 path differs (/etc/a-rather-long-directory-name/")
		m = h.mark()
		h.MustRun(t, "chmod", "0644", long)
		h.waitRecord(m, harness.MsgDriftResolved, map[string]string{"DRIFT_PATH": long})
		expect(t, npdOK, "No drift:")
	})
	t.Run("not answering", func(t *testing.T) {
		h := h.in(t)
		pid := h.prop("MainPID")
		h.MustRun(t, "kill", "-STOP", pid)
		defer h.MustRun(t, "kill", "-CONT", pid)
		st, msg, took := run(t)
		t.Logf("plugin: %s %q after %v", st, msg, took.Round(time.Millisecond))
		if st != npdUnknown || !strings.HasPrefix(msg, "Unknown: drift-monitor did not answer") {
			t.Errorf("plugin against a stopped process: %s %q after %v, want Unknown from drift-monitor itself, before NPD's %v timeout",
				st, msg, took.Round(time.Millisecond), timeout)
		}
	})
	t.Run("not running", func(t *testing.T) {
		h := h.in(t)
		h.MustRun(t, "systemctl", "stop", service)
		expect(t, npdUnknown, "Unknown: drift-monitor is not running")
	})
}
