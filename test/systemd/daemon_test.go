package systemd_test

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/drift-monitor/drift-monitor/test/harness"
	"github.com/drift-monitor/drift-monitor/test/nspawn"
)

// What the tests provision: the seed's /etc/etc-file, the sentinel, and a
// unit Ignition would have written and enabled.
const (
	etcFile     = "/etc/etc-file"
	demoUnit    = "dm-demo.service"
	demoUnitTxt = "[Unit]\nDescription=Demo\n\n[Service]\nExecStart=/bin/true\nRemainAfterExit=yes\n\n[Install]\nWantedBy=multi-user.target\n"
)

var (
	etcFileOK    = file{etcFile, "hello world\n", 0o644}
	demoUnitFile = file{"/etc/systemd/system/" + demoUnit, demoUnitTxt, 0o644}
	enableDemo   = "systemctl daemon-reload && systemctl enable --quiet " + demoUnit
)

// etcFileAndSentinel declares exactly etcFileOK and sentinelFile.
const etcFileAndSentinel = `{"ignition":{"version":"3.4.0"},"storage":{"files":[
 {"path":"/etc/etc-file","mode":420,"contents":{"source":"data:,hello%20world%0A"}},
 {"path":"/etc/sentinel","mode":420,"contents":{"source":"data:,s%0A"}}]}}`

// demoUnitJSON is demoUnit as an Ignition systemd.units item.
var demoUnitJSON = fmt.Sprintf(`{"name":%q,"enabled":true,"contents":%q}`, demoUnit, demoUnitTxt)

// demoHost declares and provisions etcFileOK, sentinelFile and demoUnit,
// enabled: "No drift: watching 3 paths, 1 unit".
var demoHost = setup{
	config: `{"ignition":{"version":"3.4.0"},"storage":{"files":[
 {"path":"/etc/etc-file","mode":420,"contents":{"source":"data:,hello%20world%0A"}},
 {"path":"/etc/sentinel","mode":420,"contents":{"source":"data:,s%0A"}}]},
 "systemd":{"units":[` + demoUnitJSON + `]}}`,
	files:    []file{etcFileOK, sentinelFile, demoUnitFile},
	commands: []string{enableDemo},
}

// TestStatusAndJournal proves, against systemd's own view of the service,
// that the STATUS= line is exact when clean and when drifted (systemctl show
// and systemctl status), that a drift is journaled once when it appears and
// once when it is resolved, with MESSAGE_ID, PRIORITY, DRIFT_* and
// SYSLOG_IDENTIFIER as journal fields, and that
// `journalctl -u drift-monitor DRIFT_PATH=...` selects those records.
func TestStatusAndJournal(t *testing.T) {
	t.Parallel()
	h := bootDaemon(t, demoHost)
	const clean = "No drift: watching 3 paths, 1 unit"
	const drifted = "Drift: 1 path differs (/etc/etc-file: content)"

	h.waitStatus(clean)
	h.statusShows(clean)

	m := h.mark()
	h.sh(`printf 'not-the-data' >/etc/etc-file`)
	det, _ := h.waitRecord(m, harness.DriftDetected, map[string]string{"DRIFT_PATH": etcFile})
	h.waitStatus(drifted)
	h.statusShows(drifted)

	m = h.mark()
	h.sh(`printf 'hello world\n' >/etc/etc-file`)
	res, _ := h.waitRecord(m, harness.MsgDriftResolved, map[string]string{"DRIFT_PATH": etcFile})
	h.waitStatus(clean)
	// Nothing more is on its way for /etc/etc-file: the sentinel's record
	// comes after anything its events caused.
	h.noDriftSince(m, etcFile)

	t.Run("journal fields", func(t *testing.T) {
		common := map[string]string{
			"DRIFT_KIND":        "content",
			"DRIFT_PATH":        etcFile,
			"DRIFT_ENTRY":       "file",
			"SYSLOG_IDENTIFIER": "drift-monitor",
			"_SYSTEMD_UNIT":     service,
		}
		for _, c := range []struct {
			name string
			e    harness.Record
			id   string
			typ  string // DRIFT_MONITOR_RECORD
			prio string // 4 warning, 5 notice
		}{{"detected", det, harness.DriftDetectedIDs["file"], harness.DriftDetected, "4"}, {"resolved", res, harness.MsgDriftResolved, "drift-resolved", "5"}} {
			want := map[string]string{"MESSAGE_ID": c.id, "DRIFT_MONITOR_RECORD": c.typ, "PRIORITY": c.prio}
			for k, v := range common {
				want[k] = v
			}
			for k, v := range want {
				if got := c.e[k]; got != v {
					t.Errorf("%s record: %s=%q, want %q (record: %s)", c.name, k, got, v, c.e)
				}
			}
		}
		msg := det["MESSAGE"]
		if !strings.HasPrefix(msg, `content mismatch for file "/etc/etc-file" (-want +got):`) ||
			!strings.Contains(msg, "\n-hello world\n") || !strings.Contains(msg, "\n+not-the-data") {
			t.Errorf("drift record MESSAGE = %q, want the seed's line and a -want +got diff", msg)
		}
		if got := res["MESSAGE"]; !strings.HasPrefix(got, `Resolved: content mismatch for file "/etc/etc-file"`) {
			t.Errorf("resolved record MESSAGE = %q", got)
		}
	})

	t.Run("detected once, resolved once", func(t *testing.T) {
		h := h.in(t)
		all := h.mark()
		for _, c := range []struct {
			name string
			id   string
		}{{"detected", harness.DriftDetected}, {"resolved", harness.MsgDriftResolved}} {
			if got := h.between(0, all, c.id, map[string]string{"DRIFT_PATH": etcFile}); len(got) != 1 {
				t.Errorf("%d %s records for %s in this run, want 1: %v", len(got), c.name, etcFile, got)
			}
		}
	})

	t.Run("journalctl -u drift-monitor DRIFT_PATH=/etc/etc-file", func(t *testing.T) {
		h := h.in(t)
		es := h.Journal(t, "drift-monitor", "DRIFT_PATH="+etcFile)
		cursors := map[string]bool{}
		for _, e := range es {
			e := harness.JournalRecord(e)
			cursors[e["__CURSOR"]] = true
			if e["DRIFT_PATH"] != etcFile || e["_SYSTEMD_UNIT"] != service {
				t.Errorf("selected a record of %s, %s: %s", e["_SYSTEMD_UNIT"], e["DRIFT_PATH"], e)
			}
		}
		for name, e := range map[string]harness.Record{"detected": det, "resolved": res} {
			if !cursors[e["__CURSOR"]] {
				t.Errorf("the %s record is not selected (%d records selected): %s", name, len(es), e)
			}
		}
	})
}

// TestFileChangesUnderSystemd proves, with the unit's sandbox in force: an
// editor's atomic rename with the declared content is not drift, and with
// other content is; a declared directory that is deleted and re-created is
// watched again; and a secret file's drift is journaled without its bytes.
func TestFileChangesUnderSystemd(t *testing.T) {
	t.Parallel()
	const (
		secret    = "/etc/demo/secret.token"
		oldMarker = "dm-secret-WANT-4b1d0c" // the declared content
		newMarker = "dm-secret-GOT-93e7fa"  // what the file is changed to
		appConf   = "/etc/app/conf.d/a.conf"
	)
	h := bootDaemon(t, setup{
		config: `{"ignition":{"version":"3.4.0"},"storage":{
 "directories":[{"path":"/etc/app","mode":493}],
 "files":[
 {"path":"/etc/etc-file","mode":420,"contents":{"source":"data:,hello%20world%0A"}},
 {"path":"/etc/sentinel","mode":420,"contents":{"source":"data:,s%0A"}},
 {"path":"/etc/app/conf.d/a.conf","mode":420,"contents":{"source":"data:,a%0A"}},
 {"path":"` + secret + `","mode":384,"contents":{"source":"data:,` + oldMarker + `%0A"}}]}}`,
		files: []file{etcFileOK, sentinelFile, {appConf, "a\n", 0o644}, {secret, oldMarker + "\n", 0o600}},
	})
	const clean = "No drift: watching 5 paths, 0 units"
	h.waitStatus(clean)

	inode := func(h *host, p string) string { return strings.TrimSpace(h.MustRun(h.t, "stat", "-c", "%i", p)) }
	// An editor's save: write a temporary file, rename it over the original.
	rename := func(h *host, content string) {
		h.sh(`printf '%s' "$1" >/etc/.etc-file.swp && mv -f /etc/.etc-file.swp /etc/etc-file`, content)
	}

	t.Run("atomic rename with the declared content is not drift", func(t *testing.T) {
		h := h.in(t)
		before := inode(h, etcFile)
		m := h.mark()
		rename(h, "hello world\n")
		if after := inode(h, etcFile); after == before {
			t.Fatalf("%s kept inode %s: the rename did not replace it", etcFile, before)
		}
		h.noDriftSince(m, etcFile)
		h.waitStatus(clean)
	})

	t.Run("atomic rename with other content is drift", func(t *testing.T) {
		h := h.in(t)
		m := h.mark()
		rename(h, "edited\n")
		h.waitRecord(m, harness.DriftDetected, map[string]string{"DRIFT_PATH": etcFile, "DRIFT_KIND": "content"})
		h.waitStatus("Drift: 1 path differs (/etc/etc-file: content)")
		m = h.mark()
		rename(h, "hello world\n")
		h.waitRecord(m, harness.MsgDriftResolved, map[string]string{"DRIFT_PATH": etcFile, "DRIFT_KIND": "content"})
		h.waitStatus(clean)
	})

	t.Run("a declared directory deleted, re-created, drifted again", func(t *testing.T) {
		h := h.in(t)
		m := h.mark()
		h.sh(`rm -rf /etc/app`)
		h.waitRecord(m, harness.DriftDetected, map[string]string{"DRIFT_PATH": "/etc/app", "DRIFT_KIND": "missing", "DRIFT_ENTRY": "directory"})
		h.waitRecord(m, harness.DriftDetected, map[string]string{"DRIFT_PATH": appConf, "DRIFT_KIND": "missing"})
		h.waitStatus("Drift: 2 paths differ (/etc/app: missing; /etc/app/conf.d/a.conf: missing)")

		m = h.mark()
		h.sh(`mkdir -m 0755 /etc/app /etc/app/conf.d && printf 'a\n' >/etc/app/conf.d/a.conf`)
		h.waitRecord(m, harness.MsgDriftResolved, map[string]string{"DRIFT_PATH": "/etc/app"})
		h.waitRecord(m, harness.MsgDriftResolved, map[string]string{"DRIFT_PATH": appConf})
		h.waitStatus(clean)

		// The watch came back with the directories: a change in the new
		// /etc/app/conf.d is seen at once (the periodic check is an hour away).
		m = h.mark()
		h.sh(`printf 'b\n' >/etc/app/conf.d/a.conf`)
		h.waitRecord(m, harness.DriftDetected, map[string]string{"DRIFT_PATH": appConf, "DRIFT_KIND": "content"})
		m = h.mark()
		h.sh(`printf 'a\n' >/etc/app/conf.d/a.conf`)
		h.waitRecord(m, harness.MsgDriftResolved, map[string]string{"DRIFT_PATH": appConf, "DRIFT_KIND": "content"})
		h.waitStatus(clean)
	})

	t.Run("a secret's drift is journaled without its content", func(t *testing.T) {
		h := h.in(t)
		m := h.mark()
		h.sh(`printf '%s\n' "$1" >"$2"`, newMarker, secret)
		r, _ := h.waitRecord(m, harness.DriftDetected, map[string]string{"DRIFT_PATH": secret, "DRIFT_KIND": "content", "DRIFT_ENTRY": "file"})
		// Sizes and keyed digests stand for the bytes.
		for _, f := range []string{"DRIFT_WANT", "DRIFT_GOT"} {
			if !strings.Contains(r[f], " bytes, hmac-sha256:") {
				t.Errorf("secret drift record: %s=%q, want a size and a keyed digest", f, r[f])
			}
		}
		h.waitStatus("Drift: 1 path differs (/etc/demo/secret.token: content)")
		if got := h.MustRun(t, "stat", "-c", "%a", secret); strings.TrimSpace(got) != "600" {
			t.Fatalf("%s has mode %s, want 600: the test did not keep it secret", secret, got)
		}
		m = h.mark()
		h.sh(`printf '%s\n' "$1" >"$2"`, oldMarker, secret)
		h.waitRecord(m, harness.MsgDriftResolved, map[string]string{"DRIFT_PATH": secret, "DRIFT_KIND": "content"})
		h.waitStatus(clean)

		h.MustRun(t, "journalctl", "--sync")
		out := h.MustRun(t, "journalctl", "-u", "drift-monitor", "-o", "json", "--all", "--no-pager", "-q")
		for _, marker := range []string{oldMarker, newMarker} {
			if strings.Contains(out, marker) {
				t.Errorf("the secret's content %q is in journalctl -u drift-monitor -o json", marker)
			}
		}
		es, err := nspawn.JournalEntries(out)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, e := range es {
			if harness.JournalRecord(e)["DRIFT_PATH"] == secret {
				n++
			}
		}
		if n < 2 { // this run's detected and resolved, and the first boot's
			t.Errorf("%d records name %s in journalctl -u drift-monitor -o json, want the detected and resolved ones at least", n, secret)
		}
	})
}

// TestEnablementSeenWithoutRescan proves that `systemctl disable` of a unit
// declared enabled is reported within seconds by a daemon whose periodic
// full check is an hour away: systemd's UnitFilesChanged signal, not a
// rescan, brings it. The record carries DRIFT_UNIT. Over systemd's D-Bus
// answers, as offline: a runtime enablement in place of the persistent one
// is drift (Ignition's preset links in /etc), and a template declared
// enabled that cannot be enabled without an instance is a cannot-enable
// notice, not drift.
func TestEnablementSeenWithoutRescan(t *testing.T) {
	t.Parallel()
	const within = 10 * time.Second // "a few seconds"; the periodic check is 1h away
	const tmpl = "dm-tmpl@.service"
	tmplFile := file{"/etc/systemd/system/" + tmpl, "[Service]\nExecStart=/bin/true\n\n[Install]\nWantedBy=multi-user.target\n", 0o644}
	h := bootDaemon(t, setup{
		config: `{"ignition":{"version":"3.4.0"},"systemd":{"units":[` + demoUnitJSON + `,` +
			fmt.Sprintf(`{"name":%q,"enabled":true,"contents":%q}`, tmpl, tmplFile.content) + `]}}`,
		files:    []file{demoUnitFile, tmplFile},
		commands: []string{enableDemo},
		dropIn:   "[Service]\nExecStart=\nExecStart=/usr/bin/drift-monitor daemon --interval 1h\n",
	})
	if got := h.prop("ExecStart"); !strings.Contains(got, "argv[]=/usr/bin/drift-monitor daemon --interval 1h ") {
		t.Fatalf("the drop-in is not in force: ExecStart=%s", got)
	}
	const clean = "No drift: watching 2 paths, 2 units"
	h.waitStatus(clean)
	n, _ := h.waitRecord(0, harness.MsgNotice, map[string]string{"DRIFT_KIND": "cannot-enable", "DRIFT_UNIT": tmpl})
	if !strings.Contains(n["MESSAGE"], "cannot be enabled without an instance") {
		t.Errorf("cannot-enable notice MESSAGE = %q", n["MESSAGE"])
	}
	want := map[string]string{
		"DRIFT_UNIT":  demoUnit,
		"DRIFT_KIND":  "enablement",
		"DRIFT_ENTRY": "enablement",
		"DRIFT_PATH":  "/etc/systemd/system/" + demoUnit,
	}

	m := h.mark()
	start := time.Now()
	h.MustRun(t, "systemctl", "disable", "--quiet", demoUnit)
	r, _ := h.waitRecordWithin(within, m, harness.DriftDetected, want)
	t.Logf("systemctl disable reported after %v: %s", time.Since(start).Round(time.Millisecond), r)
	if !strings.Contains(r["MESSAGE"], `unit "dm-demo.service" is disabled, want enabled`) {
		t.Errorf("enablement drift MESSAGE = %q", r["MESSAGE"])
	}
	h.waitStatus("Drift: 1 path differs (dm-demo.service: enablement)")

	m = h.mark()
	start = time.Now()
	h.MustRun(t, "systemctl", "enable", "--quiet", demoUnit)
	h.waitRecordWithin(within, m, harness.MsgDriftResolved, want)
	t.Logf("systemctl enable reported resolved after %v", time.Since(start).Round(time.Millisecond))
	h.waitStatus(clean)

	// Enabled in /run only: systemd says enabled-runtime, which the next
	// boot forgets.
	m = h.mark()
	h.sh("systemctl disable --quiet " + demoUnit + " && systemctl enable --runtime --quiet " + demoUnit)
	h.waitRecordWithin(within, m, harness.DriftDetected, want)
	h.waitStatus("Drift: 1 path differs (dm-demo.service: enablement)")
	out, errOut, err := h.Run(h.ctx, "drift-monitor", "check", "--format", "json", "--no-cache")
	var rep harness.Report
	if jerr := json.Unmarshal([]byte(out), &rep); jerr != nil {
		t.Fatalf("drift-monitor check (%v): %v\n%s%s", err, jerr, out, errOut)
	}
	if len(rep.Drift) != 1 || rep.Drift[0].Message != `unit "dm-demo.service" is enabled-runtime, want enabled` {
		t.Errorf("drift-monitor check over D-Bus: drift %+v, want dm-demo.service enabled-runtime", rep.Drift)
	}
	if len(rep.Notices) != 1 || rep.Notices[0].Kind != "cannot-enable" {
		t.Errorf("drift-monitor check over D-Bus: notices %+v, want one cannot-enable for %s", rep.Notices, tmpl)
	}
}

// TestReloadWithBrokenFragment proves that `systemctl reload` with a desired
// config fragment that does not load leaves the service running (same main
// process, active), journals a load-failed record naming the file, says so
// in the status line, and keeps reporting drift against the last good state.
func TestReloadWithBrokenFragment(t *testing.T) {
	t.Parallel()
	h := bootDaemon(t, setup{
		config: etcFileAndSentinel,
		files:  []file{etcFileOK, sentinelFile},
	})
	h.waitStatus("No drift: watching 2 paths, 0 units")
	pid := h.prop("MainPID")
	const broken = "/etc/drift-monitor/desired.d/60-broken.ign"

	// The daemon watches its config directory and refuses the fragment by
	// itself; then systemctl reload asks it to try again.
	m := h.mark()
	h.WriteFile(t, broken, []byte(`{"ignition":{"version":"3.2.0"},"storage":{"files":[{"path":"relative"}]}}`), 0o644)
	h.waitRecord(m, harness.MsgLoadFailed, nil)
	m = h.mark()
	h.MustRun(t, "systemctl", "reload", service)
	r, _ := h.waitRecord(m, harness.MsgLoadFailed, nil)
	if msg := r["MESSAGE"]; !strings.Contains(msg, broken) || !strings.Contains(msg, "path not absolute") {
		t.Errorf("load-failed record does not name the file and the problem: %s", r)
	}
	if r["PRIORITY"] != "3" {
		t.Errorf("load-failed record PRIORITY=%s, want 3 (err)", r["PRIORITY"])
	}
	refused := regexp.MustCompile(`^No drift: watching 2 paths, 0 units; new config refused \(` +
		regexp.QuoteMeta(broken) + `.*\), checking against the last good one$`)
	h.WaitFor(t, recordTimeout, "a status line saying the config was refused", func() (bool, string) {
		s, err := h.status()
		if err != nil {
			return false, err.Error()
		}
		return refused.MatchString(s), fmt.Sprintf("StatusText %q", s)
	})

	// The reload ends when the daemon sends READY=1 after its records and
	// status line: until systemd reads it the unit is still "reloading".
	h.WaitFor(t, recordTimeout, "the unit active again after the reload", func() (bool, string) {
		out, _, err := h.Run(h.ctx, "systemctl", "show", "-p", "ActiveState", "-p", "SubState", service)
		p := parseProps(out)
		return err == nil && p["ActiveState"] == "active" && p["SubState"] == "running", strings.ReplaceAll(out, "\n", " ")
	})
	for prop, want := range map[string]string{"ActiveState": "active", "SubState": "running", "MainPID": pid, "NRestarts": "0"} {
		if got := h.prop(prop); got != want {
			t.Errorf("after a reload with a broken fragment: %s=%s, want %s", prop, got, want)
		}
	}

	// The last good state is still checked.
	m = h.mark()
	h.sh(`printf 'drifted\n' >/etc/etc-file`)
	h.waitRecord(m, harness.DriftDetected, map[string]string{"DRIFT_PATH": etcFile, "DRIFT_KIND": "content"})
	h.WaitFor(t, recordTimeout, "a status line with the drift and the refusal", func() (bool, string) {
		s, err := h.status()
		if err != nil {
			return false, err.Error()
		}
		return strings.HasPrefix(s, "Drift: 1 path differs (/etc/etc-file: content); new config refused ("), fmt.Sprintf("StatusText %q", s)
	})
}

// TestKillAndStop proves that the unit brings the daemon back after a
// SIGKILL (Restart=always: a new main process, active only once it sent
// READY=1 again) and that `systemctl stop` ends it cleanly (Result=success,
// a stopping record).
func TestKillAndStop(t *testing.T) {
	t.Parallel()
	h := bootDaemon(t, setup{
		config: `{"ignition":{"version":"3.4.0"},"storage":{"files":[
 {"path":"/etc/etc-file","mode":420,"contents":{"source":"data:,hello%20world%0A"}}]}}`,
		files: []file{etcFileOK},
	})
	const clean = "No drift: watching 1 path, 0 units"
	h.waitStatus(clean)

	t.Run("kill -9 of the main process: restarted", func(t *testing.T) {
		h := h.in(t)
		pid, inv := h.prop("MainPID"), h.inv
		h.MustRun(t, "kill", "-9", pid)
		h.waitRestarted(pid, 30*time.Second)
		if got := h.prop("NRestarts"); got != "1" {
			t.Errorf("NRestarts=%s, want 1", got)
		}
		h.inv = h.prop("InvocationID")
		if h.inv == inv {
			t.Fatalf("InvocationID is still %s after the restart", inv)
		}
		h.waitRecord(0, harness.MsgReady, nil)
		h.waitStatus(clean)
		// The new process watches as the old one did.
		m := h.mark()
		h.sh(`printf 'x\n' >/etc/etc-file`)
		h.waitRecord(m, harness.DriftDetected, map[string]string{"DRIFT_PATH": etcFile})
	})

	t.Run("a burst of kills: it keeps coming back", func(t *testing.T) {
		// Six kills in a row, each as soon as the new process exists (before
		// it is ready): systemd's default start limit (5 starts in 10 s)
		// would leave the unit in start-limit-hit, dead for good.
		h := h.in(t)
		h.sh(`printf 'hello world\n' >/etc/etc-file`)
		h.waitStatus(clean)
		before, _ := strconv.Atoi(h.prop("NRestarts"))
		const kills = 6
		pid := h.prop("MainPID")
		for i := 0; i < kills; i++ {
			if _, _, err := h.Run(h.ctx, "kill", "-9", pid); err != nil {
				t.Logf("kill %s: %v (it had already gone)", pid, err)
			}
			last := pid
			h.WaitFor(t, 30*time.Second, fmt.Sprintf("main process %d after the kill of %s", i+2, last), func() (bool, string) {
				out, _, err := h.Run(h.ctx, "systemctl", "show", "-p", "MainPID", "-p", "ActiveState", "-p", "Result", service)
				pid = parseProps(out)["MainPID"]
				return err == nil && pid != "0" && pid != last, strings.ReplaceAll(out, "\n", " ")
			})
		}
		h.WaitFor(t, 60*time.Second, "active and running after the burst", func() (bool, string) {
			out, _, err := h.Run(h.ctx, "systemctl", "show", "-p", "MainPID", "-p", "ActiveState", "-p", "SubState", "-p", "Result", service)
			p := parseProps(out)
			return err == nil && p["ActiveState"] == "active" && p["SubState"] == "running", strings.ReplaceAll(out, "\n", " ")
		})
		if got, _ := strconv.Atoi(h.prop("NRestarts")); got != before+kills {
			t.Errorf("NRestarts=%d, want %d", got, before+kills)
		}
		h.inv = h.prop("InvocationID")
		h.waitStatus(clean)
	})

	t.Run("a usage error is not restarted", func(t *testing.T) {
		// A bad flag does not fix itself: the unit fails (exit status 64,
		// EX_USAGE; never 2, the Go runtime's after a crash, which is
		// restarted: TestCrashRestarts) instead of restarting forever.
		h := h.in(t)
		h.WriteFile(t, "/etc/systemd/system/"+service+".d/bad-flag.conf",
			[]byte("[Service]\nExecStart=\nExecStart=/usr/bin/drift-monitor daemon --no-such-flag\n"), 0o644)
		h.MustRun(t, "systemctl", "daemon-reload")
		if _, _, err := h.Run(h.ctx, "systemctl", "restart", service); err == nil {
			t.Errorf("systemctl restart with a bad flag succeeded")
		}
		h.WaitFor(t, 30*time.Second, "failed with exit status 64", func() (bool, string) {
			out, _, _ := h.Run(h.ctx, "systemctl", "show", "-p", "ActiveState", "-p", "Result", "-p", "ExecMainStatus", service)
			p := parseProps(out)
			return p["ActiveState"] == "failed" && p["Result"] == "exit-code" && p["ExecMainStatus"] == "64", strings.ReplaceAll(out, "\n", " ")
		})
		// systemctl restart resets the count: any automatic restart since
		// shows.
		if got := h.prop("NRestarts"); got != "0" {
			t.Errorf("NRestarts=%s after a usage error, want 0 (not restarted)", got)
		}
		h.MustRun(t, "rm", "/etc/systemd/system/"+service+".d/bad-flag.conf")
		h.MustRun(t, "systemctl", "daemon-reload")
		h.MustRun(t, "systemctl", "restart", service)
		h.inv = h.prop("InvocationID")
		h.waitStatus(clean)
	})

	t.Run("systemctl stop: a clean stop", func(t *testing.T) {
		h := h.in(t)
		h.MustRun(t, "systemctl", "stop", service)
		p := parseProps(h.MustRun(t, "systemctl", "show", "-p", "ActiveState", "-p", "Result", "-p", "ExecMainCode", "-p", "ExecMainStatus", service))
		// ExecMainCode 1: CLD_EXITED, the process exited by itself.
		want := map[string]string{"ActiveState": "inactive", "Result": "success", "ExecMainCode": "1", "ExecMainStatus": "0"}
		for k, v := range want {
			if p[k] != v {
				t.Errorf("after systemctl stop: %s=%s, want %s", k, p[k], v)
			}
		}
		r, _ := h.waitRecord(0, harness.MsgStopping, nil)
		if r["PRIORITY"] != "6" || r["MESSAGE"] != "Stopping drift-monitor" {
			t.Errorf("stopping record: %s", r)
		}
	})
}

// waitRestarted waits, within timeout, for a main process other than pid,
// active and running. Type=notify: the unit is active again only after the
// new process sent READY=1.
func (h *host) waitRestarted(pid string, timeout time.Duration) {
	h.t.Helper()
	h.WaitFor(h.t, timeout, "a new main process, active and running", func() (bool, string) {
		out, errOut, err := h.Run(h.ctx, "systemctl", "show", "-p", "MainPID", "-p", "ActiveState", "-p", "SubState", service)
		if err != nil {
			return false, fmt.Sprintf("%v: %s", err, errOut)
		}
		p := parseProps(out)
		return p["MainPID"] != pid && p["MainPID"] != "0" && p["ActiveState"] == "active" && p["SubState"] == "running", strings.ReplaceAll(out, "\n", " ")
	})
}

func parseProps(out string) map[string]string {
	p := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		k, v, _ := strings.Cut(line, "=")
		p[k] = v
	}
	return p
}

// TestSecurityExposure runs `systemd-analyze security` on the shipped unit
// inside the container and requires a rating of OK or better (overall
// exposure below 5.0). The settings that cost the most are logged.
func TestSecurityExposure(t *testing.T) {
	t.Parallel()
	m := nspawn.Boot(t, nspawn.Options{BindRO: daemonBinds(t)})
	out := m.MustRun(t, "systemd-analyze", "security", "--no-pager", service)
	overall := regexp.MustCompile(`Overall exposure level for ` + regexp.QuoteMeta(service) + `: ([0-9]+\.[0-9]) ([A-Z]+)`).FindStringSubmatch(out)
	if overall == nil {
		t.Fatalf("no overall exposure level in systemd-analyze security's output:\n%s", out)
	}
	exposure, err := strconv.ParseFloat(overall[1], 64)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("systemd-analyze security %s: overall exposure %.1f %s", service, exposure, overall[2])

	// The lines that cost: "✗ NAME   DESCRIPTION   EXPOSURE".
	type cost struct {
		line string
		v    float64
	}
	var costs []cost
	costLine := regexp.MustCompile(`^✗ .*\s([0-9]+\.[0-9])$`)
	for _, line := range strings.Split(out, "\n") {
		line = strings.TrimSpace(line)
		if c := costLine.FindStringSubmatch(line); c != nil {
			v, _ := strconv.ParseFloat(c[1], 64)
			costs = append(costs, cost{line, v})
		}
	}
	sort.SliceStable(costs, func(i, j int) bool { return costs[i].v > costs[j].v })
	var top []string
	for _, c := range costs[:min(8, len(costs))] {
		top = append(top, c.line)
	}
	t.Logf("the settings that cost the most:\n%s", strings.Join(top, "\n"))

	switch overall[2] {
	case "OK", "SAFE", "PERFECT":
	default:
		t.Errorf("systemd-analyze security rates %s %s (%.1f), want OK or better:\n%s", service, overall[2], exposure, out)
	}
	if exposure >= 5.0 {
		t.Errorf("overall exposure %.1f, want below 5.0", exposure)
	}
}
