package packaging

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/drift-monitor/drift-monitor/test/harness"
	"github.com/drift-monitor/drift-monitor/test/nspawn"
)

const (
	service = "drift-monitor.service"
	// Inside the container: where the built RPMs are bound, read-only.
	rpmDir = "/srv/dm-rpms"
	// The sample host: one file its desired config declares.
	sampleConfig = "/etc/drift-monitor/desired.d/50-sample.ign"
	samplePath   = "/etc/sample.conf"
	sampleWanted = "wanted\n"
	// waitTimeout bounds every wait for the daemon (generous: CI machines are
	// busy, and the daemon answers within a second when they are not).
	waitTimeout = 60 * time.Second
)

// sampleIgnition declares samplePath with sampleWanted, world-readable, so
// that its drift comes with a diff.
const sampleIgnition = `{"ignition":{"version":"3.4.0"},"storage":{"files":[` +
	`{"path":"/etc/sample.conf","mode":420,"overwrite":true,"contents":{"source":"data:,wanted%0A"}}]}}`

// box is a booted container with the helpers the story needs.
type box struct {
	*nspawn.Machine
	t   *testing.T
	ctx context.Context
}

// sh runs a shell script inside as root and returns its standard output.
func (b *box) sh(script string) string {
	b.t.Helper()
	return b.MustRun(b.t, "sh", "-ec", script)
}

// value is the trimmed output of a command that may exit non-zero (systemctl
// is-enabled, is-active), with its standard error.
func (b *box) value(args ...string) string {
	b.t.Helper()
	out, errOut, _ := b.Run(b.ctx, args...)
	return strings.TrimSpace(out + errOut)
}

// write replaces the content of an existing file with one shell
// redirection: one open and one close, so the daemon sees one change
// (nspawn's WriteFile truncates first, a change of its own).
func (b *box) write(path, content string) {
	b.t.Helper()
	b.MustRun(b.t, "sh", "-c", `printf '%s' "$1" >"$2"`, "sh", content, path)
}

func (b *box) prop(unit, name string) string {
	b.t.Helper()
	return strings.TrimSpace(b.MustRun(b.t, "systemctl", "show", "-p", name, "--value", unit))
}

// waitStatus waits until the service's StatusText starts with prefix.
func (b *box) waitStatus(prefix string) string {
	b.t.Helper()
	var got string
	b.WaitFor(b.t, waitTimeout, fmt.Sprintf("%s's status line to start with %q", service, prefix), func() (bool, string) {
		out, errOut, err := b.Run(b.ctx, "systemctl", "show", "-p", "StatusText", "--value", service)
		got = strings.TrimSpace(out)
		return err == nil && strings.HasPrefix(got, prefix), fmt.Sprintf("StatusText %q (%v %s)", got, err, errOut)
	})
	return got
}

// mark is the journal's current end, for "what was logged since": the
// realtime timestamp (µs) of its newest entry. (Not a cursor: systemd 252's
// journalctl --after-cursor, with matches, skips the first matching entry
// when the cursor's own entry does not match.)
func (b *box) mark() uint64 {
	b.t.Helper()
	entries := b.Journal(b.t, "", "-n", "1")
	if len(entries) != 1 {
		b.t.Fatalf("journalctl -n 1 returned %d entries", len(entries))
	}
	return realtime(b.t, entries[0])
}

func realtime(t *testing.T, e map[string]any) uint64 {
	t.Helper()
	v, err := realtimeOf(e)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// realtimeOf is when journald received the entry, in µs since the epoch.
func realtimeOf(e map[string]any) (uint64, error) {
	s, _ := e["__REALTIME_TIMESTAMP"].(string)
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("journal entry without a realtime timestamp: %v", e)
	}
	return v, nil
}

// journalMatches selects the service's records with MESSAGE_ID id and
// fields. It matches _SYSTEMD_UNIT rather than using journalctl -u, which
// adds a MESSAGE_ID match of its own.
func journalMatches(id string, fields []string) []string {
	return append([]string{"_SYSTEMD_UNIT=" + service, "MESSAGE_ID=" + id}, fields...)
}

// recordsSince is the service's records logged after mark, oldest first, as
// harness.Records: they span the restarts an upgrade makes, which one
// invocation's records would not.
type recordsSince struct {
	b    *box
	mark uint64
}

func (r recordsSince) Records() ([]harness.Record, error) {
	out, errOut, err := r.b.Run(r.b.ctx, "journalctl", "-o", "json", "--all", "--no-pager", "-q", "_SYSTEMD_UNIT="+service)
	if err != nil {
		return nil, fmt.Errorf("%v: %s", err, errOut)
	}
	entries, err := nspawn.JournalEntries(out)
	if err != nil {
		return nil, err
	}
	var rs []harness.Record
	for _, e := range entries {
		at, err := realtimeOf(e)
		if err != nil {
			return nil, err
		}
		if at > r.mark {
			rs = append(rs, harness.JournalRecord(e))
		}
	}
	return rs, nil
}

// records returns the service's journal records since mark that carry
// MESSAGE_ID id and the given fields, once journald has stored all it got.
func (b *box) records(mark uint64, id string, fields map[string]string) []harness.Record {
	b.t.Helper()
	b.MustRun(b.t, "journalctl", "--sync")
	rs, err := recordsSince{b, mark}.Records()
	if err != nil {
		b.t.Fatal(err)
	}
	return harness.Select(rs, 0, len(rs), id, fields)
}

// waitRecord waits for a record since mark with MESSAGE_ID id and fields.
func (b *box) waitRecord(mark uint64, id string, fields map[string]string) harness.Record {
	b.t.Helper()
	r, _ := harness.WaitRecord(b.t, b.Waiting(waitTimeout), recordsSince{b, mark}, 0, id, fields)
	return r
}

// status asks the running daemon over the container's system bus.
func (b *box) status() harness.StatusReport {
	b.t.Helper()
	out, errOut, err := b.Run(b.ctx, "drift-monitor", "status", "--format", "json")
	var s harness.StatusReport
	if jerr := json.Unmarshal([]byte(out), &s); jerr != nil {
		b.t.Fatalf("drift-monitor status --format json: %v, %v\n%s%s", err, jerr, out, errOut)
	}
	return s
}

// inhibitorFiles lists the lock files and, for each, whether it is locked
// (flock -n cannot take it).
func (b *box) inhibitorFiles() map[string]bool {
	b.t.Helper()
	out := b.sh(`cd /run/drift-monitor/inhibit.d
for f in *.lock; do
  [ -e "$f" ] || continue
  if flock -n -x "$f" true; then echo "$f free"; else echo "$f locked"; fi
done`)
	files := map[string]bool{}
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if name, state, ok := strings.Cut(l, " "); ok {
			files[name] = state == "locked"
		}
	}
	return files
}

// TestRPMInSystemd is the package's story on a real systemd: install with
// rpm, preset, start on a sample config, a drift explained by journalctl -x,
// an upgrade that restarts the daemon while two inhibitors stay held, and an
// erase that stops and disables it.
func TestRPMInSystemd(t *testing.T) {
	nspawn.Require(t)
	r1, r2 := buildRPM(t, 1), buildRPM(t, 2)
	rpms := t.TempDir()
	for _, r := range []*built{r1, r2} {
		copyFile(t, r.RPM, filepath.Join(rpms, filepath.Base(r.RPM)), 0o644)
	}
	rpm1 := filepath.Join(rpmDir, filepath.Base(r1.RPM))
	rpm2 := filepath.Join(rpmDir, filepath.Base(r2.RPM))
	ver := version(t)

	m := nspawn.Boot(t, nspawn.Options{BindRO: []nspawn.Mount{{Src: rpms, Dst: rpmDir}}})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	// A distribution policy that enables nothing by default (as Fedora's
	// 99-default-disable.preset): only the package's preset can enable it.
	m.WriteFile(t, "/etc/systemd/system-preset/99-default-disable.preset", []byte("disable *\n"), 0o644)

	t.Run("install", func(t *testing.T) {
		b := &box{Machine: m, t: t, ctx: ctx}
		// Debian's rpm database knows nothing of systemd or glibc: --nodeps.
		out := b.sh("rpm -i --nodeps " + rpm1 + " 2>&1")
		t.Logf("rpm -i:\n%s", out)
		if got := b.value("rpm", "-q", "drift-monitor"); !strings.HasPrefix(got, "drift-monitor-"+ver+"-1.") {
			t.Errorf("rpm -q drift-monitor = %q", got)
		}
		// %post applied the preset: enabled, not started (as on Fedora).
		if got := b.value("systemctl", "is-enabled", service); got != "enabled" {
			t.Errorf("after install: is-enabled %q, want enabled (the preset)", got)
		}
		if got := b.value("systemctl", "is-active", service); got != "inactive" {
			t.Errorf("after install: is-active %q, want inactive", got)
		}
		// The preset, applied again by hand, enables it again.
		b.MustRun(t, "systemctl", "disable", service)
		b.MustRun(t, "systemctl", "preset", service)
		if got := b.value("systemctl", "is-enabled", service); got != "enabled" {
			t.Errorf("after systemctl preset: is-enabled %q, want enabled", got)
		}
		if got := b.value("drift-monitor", "version"); got != "drift-monitor "+ver+"-1" {
			t.Errorf("drift-monitor version = %q", got)
		}
		modes := b.sh(`stat -c '%a %U:%G %n' /etc/drift-monitor/desired.d /usr/lib/drift-monitor/desired.d`)
		if want := "700 root:root /etc/drift-monitor/desired.d\n755 root:root /usr/lib/drift-monitor/desired.d\n"; modes != want {
			t.Errorf("desired.d directories:\n%swant\n%s", modes, want)
		}
		// %post updated the journal's catalog database.
		if cat := b.MustRun(t, "journalctl", "--list-catalog", harness.DriftDetectedIDs["file"]); !strings.Contains(cat, "Configuration drift") {
			t.Errorf("journalctl --list-catalog %s: %q", harness.DriftDetectedIDs["file"], cat)
		}
	})
	if t.Failed() {
		return
	}

	t.Run("security", func(t *testing.T) {
		b := &box{Machine: m, t: t, ctx: ctx}
		out, _, _ := b.Run(ctx, "systemd-analyze", "security", "--no-pager", service)
		overall := regexp.MustCompile(`Overall exposure level for ` + regexp.QuoteMeta(service) + `: ([0-9.]+) ([A-Z]+)`).FindStringSubmatch(out)
		if overall == nil {
			t.Fatalf("no overall exposure level in:\n%s", out)
		}
		t.Logf("systemd-analyze security %s: overall exposure %s %s", service, overall[1], overall[2])
		switch overall[2] {
		case "OK", "SAFE", "PERFECT":
		default:
			t.Errorf("systemd-analyze security rates %s %s %s, want OK or better:\n%s", service, overall[1], overall[2], out)
		}
	})

	t.Run("start and drift", func(t *testing.T) {
		b := &box{Machine: m, t: t, ctx: ctx}
		m.WriteFile(t, samplePath, []byte(sampleWanted), 0o644)
		m.WriteFile(t, sampleConfig, []byte(sampleIgnition), 0o600)
		b.MustRun(t, "systemctl", "start", service)
		b.waitStatus("No drift: watching 1 path")
		if s := b.status(); s.State != "clean" || s.Version != ver+"-1" {
			t.Errorf("drift-monitor status: state %q version %q, want clean %s-1", s.State, s.Version, ver)
		}

		from := b.mark()
		b.write(samplePath, "tampered\n")
		b.waitStatus("Drift: 1 path differs (/etc/sample.conf: content)")
		rec := b.waitRecord(from, harness.DriftDetected, map[string]string{"DRIFT_PATH": samplePath})
		if rec["DRIFT_KIND"] != "content" {
			t.Errorf("drift record: DRIFT_KIND %v, want content", rec["DRIFT_KIND"])
		}
		// journalctl -x explains the record from the installed catalog.
		// (The only drift of this path so far: no need to select by time.)
		explained := b.MustRun(t, append([]string{"journalctl", "-x", "--no-pager"},
			journalMatches(harness.DriftDetectedIDs["file"], []string{"DRIFT_PATH=" + samplePath})...)...)
		t.Logf("journalctl -x:\n%s", explained)
		for _, want := range []string{
			"Subject: Configuration drift: file /etc/sample.conf (content)",
			"Defined-By: drift-monitor",
			"Documentation: man:drift-monitor(8)",
			"/etc/sample.conf no longer matches the machine's desired configuration",
			`drift-monitor inhibit`,
		} {
			if !strings.Contains(explained, want) {
				t.Errorf("journalctl -x does not explain the drift with %q", want)
			}
		}
		// The kind's own text, not every kind's: a file's drift says
		// nothing of units, accounts or a MachineConfig's OS image.
		for _, other := range []string{"osImageURL", "DRIFT_USER", "DRIFT_UNIT", "hard link"} {
			if strings.Contains(explained, other) {
				t.Errorf("journalctl -x of a file's drift explains %q too", other)
			}
		}

		from = b.mark()
		b.write(samplePath, sampleWanted)
		b.waitStatus("No drift")
		b.waitRecord(from, harness.MsgDriftResolved, map[string]string{"DRIFT_PATH": samplePath})
	})
	if t.Failed() {
		return
	}

	t.Run("upgrade keeps inhibitors", func(t *testing.T) {
		b := &box{Machine: m, t: t, ctx: ctx}
		// Two holders, as transient units so that they outlive this command:
		// drift-monitor inhibit, and the shell recipe of the man page.
		b.MustRun(t, "systemd-run", "--quiet", "--unit=dm-holder-cli", "--",
			"drift-monitor", "inhibit", "--who", "pkg-cli", "--why", "upgrading drift-monitor", "--", "sleep", "600")
		b.waitStatus("Inhibited by pkg-cli")
		b.MustRun(t, "systemd-run", "--quiet", "--unit=dm-holder-sh", "--", "sh", "-c",
			`exec 9>/run/drift-monitor/inhibit.d/pkg-shell.lock; flock 9; `+
				`printf 'who=pkg-shell why=shell recipe pid=%d\n' $$ >&9; exec sleep 600`)
		status := b.waitStatus("Inhibited by pkg-cli")
		b.WaitFor(t, waitTimeout, "both inhibitors in the status line", func() (bool, string) {
			status = strings.TrimSpace(b.value("systemctl", "show", "-p", "StatusText", "--value", service))
			return strings.Contains(status, "pkg-shell"), status
		})
		holders := map[string]string{}
		for _, u := range []string{"dm-holder-cli", "dm-holder-sh"} {
			holders[u] = b.prop(u, "MainPID")
		}
		locks := b.inhibitorFiles()
		if len(locks) != 2 {
			t.Fatalf("inhibitor files %v, want two", locks)
		}
		for f, locked := range locks {
			if !locked {
				t.Errorf("%s is not locked before the upgrade", f)
			}
		}
		oldPID := b.prop(service, "MainPID")

		// The transition the inhibitors cover: a half-applied change that
		// must not be reported as drift, by the old daemon or the new one.
		from := b.mark()
		b.write(samplePath, "half-applied\n")

		out := b.sh("rpm -U --nodeps " + rpm2 + " 2>&1")
		t.Logf("rpm -U:\n%s", out)
		if got := b.value("rpm", "-q", "drift-monitor"); !strings.HasPrefix(got, "drift-monitor-"+ver+"-2.") {
			t.Errorf("rpm -q drift-monitor after the upgrade = %q", got)
		}
		// The old package's %postun restarted the daemon: a new process
		// running the new binary, whose version the bus reports.
		newPID := b.prop(service, "MainPID")
		if newPID == oldPID || newPID == "0" {
			t.Errorf("MainPID %s before the upgrade, %s after: the daemon was not restarted", oldPID, newPID)
		}
		b.waitStatus("Inhibited by")
		var s harness.StatusReport
		b.WaitFor(t, waitTimeout, "the new daemon on the bus", func() (bool, string) {
			s = b.status()
			return s.Version == ver+"-2", fmt.Sprintf("%+v", s)
		})
		if s.State != "inhibited" || len(s.Inhibitors) != 2 {
			t.Errorf("after the upgrade: state %q, inhibitors %+v; want inhibited by pkg-cli and pkg-shell", s.State, s.Inhibitors)
		}
		// The holders, their lock files and their locks are all still there.
		for u, pid := range holders {
			if got := b.prop(u, "MainPID"); got != pid || b.value("systemctl", "is-active", u) != "active" {
				t.Errorf("holder %s: MainPID %s (was %s), want still running", u, got, pid)
			}
		}
		if after := b.inhibitorFiles(); len(after) != len(locks) {
			t.Errorf("inhibitor files after the upgrade %v, before %v", after, locks)
		} else {
			for f := range locks {
				if !after[f] {
					t.Errorf("%s is not locked after the upgrade (files %v)", f, after)
				}
			}
		}
		if got := b.records(from, harness.DriftDetected, nil); len(got) != 0 {
			t.Errorf("drift reported during the inhibited transition: %v", got)
		}
		if got := b.records(from, harness.MsgStarted, nil); len(got) != 1 {
			t.Errorf("%d start records since the upgrade began, want 1 (the restart)", len(got))
		}

		// The transition ends: the file is as declared, the holders exit;
		// the daemon resumes, re-reads and finds no drift.
		b.write(samplePath, sampleWanted)
		b.MustRun(t, "systemctl", "stop", "dm-holder-cli", "dm-holder-sh")
		b.waitStatus("No drift")
		b.waitRecord(from, harness.MsgResumed, nil)
		if got := b.records(from, harness.DriftDetected, nil); len(got) != 0 {
			t.Errorf("drift reported after the transition: %v", got)
		}
	})
	if t.Failed() {
		return
	}

	t.Run("erase", func(t *testing.T) {
		b := &box{Machine: m, t: t, ctx: ctx}
		from := b.mark()
		out := b.sh("rpm -e drift-monitor 2>&1")
		t.Logf("rpm -e:\n%s", out)
		if _, _, err := b.Run(ctx, "rpm", "-q", "drift-monitor"); err == nil {
			t.Errorf("rpm -q drift-monitor succeeds after rpm -e")
		}
		if got := b.value("systemctl", "is-active", service); got != "inactive" {
			t.Errorf("after erase: is-active %q, want inactive", got)
		}
		if got := b.prop(service, "LoadState"); got != "not-found" {
			t.Errorf("after erase: LoadState %q, want not-found (unit removed, manager reloaded)", got)
		}
		b.waitRecord(from, harness.MsgStopping, nil)
		left := b.sh(`for p in /usr/bin/drift-monitor /usr/lib/systemd/system/drift-monitor.service \
  /etc/systemd/system/multi-user.target.wants/drift-monitor.service \
  /usr/lib/systemd/system/drift-monitor-adopt.service \
  /etc/systemd/system/multi-user.target.wants/drift-monitor-adopt.service \
  /usr/lib/systemd/system/drift-monitor-adopt-image.service \
  /etc/systemd/system/multi-user.target.wants/drift-monitor-adopt-image.service \
  /usr/share/dbus-1/system.d/org.driftmonitor.DriftMonitor1.conf \
  /usr/lib/systemd/catalog/drift-monitor.catalog /usr/lib/systemd/system-preset/50-drift-monitor.preset \
  /usr/share/man/man8/drift-monitor.8.gz /usr/lib/drift-monitor; do
  if [ -e "$p" ] || [ -L "$p" ]; then echo "$p"; fi
done`)
		if left != "" {
			t.Errorf("left behind by rpm -e:\n%s", left)
		}
		// The administrator's config stays, and so does its directory.
		if _, _, err := b.Run(ctx, "test", "-f", sampleConfig); err != nil {
			t.Errorf("rpm -e removed the administrator's %s", sampleConfig)
		}
		if cat := b.value("journalctl", "--list-catalog", harness.DriftDetectedIDs["file"]); strings.Contains(cat, "Configuration drift") {
			t.Errorf("the catalog still explains %s after the erase", harness.DriftDetectedIDs["file"])
		}
	})
	if t.Failed() {
		if b, err := os.ReadFile(m.LogPath); err == nil {
			t.Logf("console:\n%s", tail(string(b), 30))
		}
	}
}
