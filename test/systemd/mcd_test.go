package systemd_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/drift-monitor/drift-monitor/test/harness"
	"github.com/drift-monitor/drift-monitor/test/nspawn"
)

// msgMCD is the follower's own record (internal/journal.MsgMCD).
const msgMCD = "0979dabaa67b467995d4fc6c3d204d4b"

const currentConfig = "/etc/machine-config-daemon/currentconfig"

// mcConfig is a rendered MachineConfig as the MCD stores it in
// currentconfig (storeCurrentConfigOnDisk: encoding/json of the typed
// object, no kind or apiVersion, metadata first), with NAME to replace.
// Content a: /etc/shared.conf v1 and /etc/only-a.conf; b: shared.conf v2
// and /etc/only-b.conf 0600. Both declare the sentinel.
func mcConfig(content string) string {
	files := `{"path":"/etc/sentinel","mode":420,"contents":{"source":"data:,s%0A"}}`
	if content == "a" {
		files += `,{"path":"/etc/shared.conf","mode":420,"contents":{"source":"data:,v1%0A"}},{"path":"/etc/only-a.conf","mode":420,"contents":{"source":"data:,a%0A"}}`
	} else {
		files += `,{"path":"/etc/shared.conf","mode":420,"contents":{"source":"data:,v2%0A"}},{"path":"/etc/only-b.conf","mode":384,"contents":{"source":"data:,b%0A"}}`
	}
	return `{"metadata":{"name":"NAME","uid":"1","resourceVersion":"7"},"spec":{"config":{"ignition":{"version":"3.2.0"},"storage":{"files":[` + files + `]}}}}`
}

// fakeMCD reproduces what the machine-config daemon does on the host, in
// its order (machine-config-operator pkg/daemon/update.go:update, main):
//   - say: logSystem, a line piped to logger(1) by root, "machine-config-
//     daemon[PID]: MESSAGE", Go-quoted (%q) when Q=1 (4.17 and later),
//     plain when Q=0;
//   - aw: writeFileAtomically (file_writers.go, renameio.TempFile): a
//     temporary ".NAME<digits>" in the same directory, chmod before the
//     write, the write, fsync, rename over the path;
//   - write_a / write_b: writeFiles of every file of the config, then
//     deleteStaleData of what the other declared;
//   - cc CONTENT NAME: storeCurrentConfigOnDisk, the rename of currentconfig
//     (after all the files).
const fakeMCD = `MCD_PID=${MCD_PID:-4242}
say() {
	m=$1
	if [ "${Q:-1}" = 1 ]; then m="\"$(printf '%s' "$m" | sed 's/[\\"]/\\&/g')\""; fi
	printf 'machine-config-daemon[%d]: %s' "$MCD_PID" "$m" | logger
}
aw() {
	p=$1 mode=$2
	d=$(dirname "$p"); mkdir -p -m 0755 "$d"
	t="$d/.$(basename "$p")$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')"
	(umask 077; : >"$t"); chmod "$mode" "$t"; cat >"$t"; sync "$t"; mv -fT "$t" "$p"
}
write_a() { printf 'v1\n' | aw /etc/shared.conf 0644; printf 'a\n' | aw /etc/only-a.conf 0644; rm -f /etc/only-b.conf; }
write_b() { printf 'v2\n' | aw /etc/shared.conf 0644; printf 'b\n' | aw /etc/only-b.conf 0600; rm -f /etc/only-a.conf; }
cc() { sed "s/NAME/$2/" "/etc/fake-mcd/$1.json" | aw ` + currentConfig + ` 0644; }
`

// mcdSetup is a node on config rendered-a, drift-monitor following
// currentconfig, with the phases' bounds shortened.
func mcdSetup(dropIn string, flags ...string) setup {
	s := setup{
		config: `{"ignition":{"version":"3.4.0"}}`,
		files: []file{
			sentinelFile,
			{"/etc/shared.conf", "v1\n", 0o644},
			{"/etc/only-a.conf", "a\n", 0o644},
			{"/etc/fake-mcd/a.json", mcConfig("a"), 0o644},
			{"/etc/fake-mcd/b.json", mcConfig("b"), 0o644},
			{"/etc/fake-mcd/lib.sh", fakeMCD, 0o644},
			{currentConfig, strings.ReplaceAll(mcConfig("a"), "NAME", "rendered-a"), 0o644},
		},
	}
	all := append([]string{"--config=" + currentConfig, "--mcd-update-timeout=25s", "--mcd-quiet=3s", "--mcd-hold-down=3s",
		"--metrics-textfile=" + mcdMetrics}, flags...)
	if dropIn == "" {
		s.flags = all
	} else {
		s.dropIn = "[Service]\nExecStart=\nExecStart=/usr/bin/drift-monitor daemon " + strings.Join(all, " ") + "\n" + dropIn
	}
	return s
}

// mcdMetrics is the daemon's textfile, in its runtime directory.
const mcdMetrics = "/run/drift-monitor/metrics.prom"

// mcd runs the fake MCD's script (Q=1: quoted lines) as root.
func (h *host) mcd(q int, script string) {
	h.t.Helper()
	h.sh(fmt.Sprintf("Q=%d; . /etc/fake-mcd/lib.sh\n%s", q, script))
}

// waitMCDHeld waits for the inhibited record of the MCD's inhibitor whose
// why has the phrase, after from.
func (h *host) waitMCDHeld(from int, phrase string) int {
	h.t.Helper()
	var at int
	h.WaitFor(h.t, recordTimeout, "machine-config-daemon inhibitor: "+phrase, func() (bool, string) {
		rs, err := h.Records()
		if err != nil {
			return false, err.Error()
		}
		for i, r := range harness.Select(rs, from, len(rs), harness.MsgInhibited, map[string]string{"INHIBIT_WHO": "machine-config-daemon"}) {
			if strings.Contains(r["INHIBIT_WHY"], phrase) {
				at = i
				return true, ""
			}
		}
		return false, fmt.Sprintf("%d records", len(rs))
	})
	return at
}

// released waits for the release (resumed, then the reload's record) and
// asserts that nothing drifted from from until then.
func (h *host) released(from int, within time.Duration) int {
	h.t.Helper()
	h.waitRecordWithin(within, from, harness.MsgResumed, nil)
	_, at := h.waitRecordWithin(within, from, harness.MsgReloaded, nil)
	for _, r := range h.between(from, at+1, harness.DriftDetected, nil) {
		h.t.Errorf("drift reported during the MCD's update: %s", r["MESSAGE"])
	}
	return at
}

// dumpOnFailure logs the daemon's and the fake MCD's lines if the test
// fails.
func (h *host) dumpOnFailure() {
	h.t.Cleanup(func() {
		if h.t.Failed() {
			out, _, err := h.Run(context.Background(), "journalctl", "--no-pager", "-o", "short-precise", "_SYSTEMD_UNIT="+service, "+", "SYSLOG_IDENTIFIER=root")
			h.t.Logf("the daemon's and the fake MCD's lines (%v):\n%s", err, out)
		}
	})
}

func (h *host) statusHas(phrase string) {
	h.t.Helper()
	h.WaitFor(h.t, recordTimeout, fmt.Sprintf("StatusText with %q", phrase), func() (bool, string) {
		got, err := h.status()
		return err == nil && strings.Contains(got, phrase), got
	})
}

// TestMCDUpdates follows fake MCD updates on one node, one after the
// other: nothing an update writes is reported, a real edit made during one
// is reported at its release, a forged start line takes nothing, and every
// phase ends (done, rollback, timeout) with a check against currentconfig.
func TestMCDUpdates(t *testing.T) {
	t.Parallel()
	h := bootDaemon(t, mcdSetup(""))
	h.dumpOnFailure()
	h.waitStatus("No drift: watching 3 paths, 0 units")

	t.Run("rebootless, quoted lines", func(t *testing.T) {
		h := h.in(t)
		m := h.mark()
		h.mcd(1, `say "Starting update from rendered-a to rendered-b: &{osUpdate:false kargs:false fips:false passwd:false files:true units:false kernelType:false extensions:false}"`)
		h.waitMCDHeld(m, "update rendered-a → rendered-b: draining")
		h.statusHas("Inhibited by machine-config-daemon: update rendered-a → rendered-b")
		h.mcd(1, `say "Update prepared; requesting cordon and drain via annotation to controller"; say "drain complete"; write_b`)
		// Still held: the drift of the writing would show by now.
		h.mcd(1, `cc b rendered-b`)
		h.waitMCDHeld(m, "currentconfig names rendered-b, waiting")
		// Like any inhibitor: the metrics say inhibited and count it, as
		// an internal one: the shipped DriftMonitorInhibitedTooLong alert
		// leaves it to DriftMonitorMCDUpdateTooLong (a drain may take an
		// hour).
		h.WaitFor(t, recordTimeout, "the metrics to say inhibited", func() (bool, string) {
			out, _, _ := h.Run(h.ctx, "cat", mcdMetrics)
			return strings.Contains(out, `drift_monitor_state{state="inhibited"} 1`+"\n") && strings.Contains(out, "drift_monitor_inhibitors 1\n") &&
				strings.Contains(out, "drift_monitor_internal_inhibitors 1\n"), out
		})
		h.mcd(1, `say "Performing post config change action: None for config rendered-b"; say "Node has Desired Config rendered-b, skipping reboot"`)
		h.released(m, recordTimeout)
		h.waitStatus("No drift: watching 3 paths, 0 units")
	})

	t.Run("plain lines, a real edit during the update is reported at release", func(t *testing.T) {
		h := h.in(t)
		m := h.mark()
		h.mcd(0, `say "Starting update from rendered-b to rendered-a2: &{files:true}"`)
		h.waitMCDHeld(m, "update rendered-b → rendered-a2")
		h.mcd(0, `write_a; chmod 0600 /etc/sentinel; cc a rendered-a2`)
		h.waitMCDHeld(m, "currentconfig names rendered-a2, waiting")
		h.mcd(0, `say "Update completed for config rendered-a2 and node has been successfully uncordoned"`)
		h.waitRecord(m, harness.MsgResumed, nil)
		_, drifted := h.waitRecord(m, harness.DriftDetected, map[string]string{"DRIFT_PATH": sentinel, "DRIFT_KIND": "mode"})
		_, resumed := h.waitRecord(m, harness.MsgResumed, nil)
		if drifted < resumed {
			t.Errorf("the edit was reported (record %d) before the release (record %d)", drifted, resumed)
		}
		for _, r := range h.between(m, drifted, harness.DriftDetected, nil) {
			t.Errorf("drift of the update reported: %s", r["MESSAGE"])
		}
		n := h.mark()
		h.MustRun(t, "chmod", "0644", sentinel)
		h.waitRecord(n, harness.MsgDriftResolved, map[string]string{"DRIFT_PATH": sentinel})
	})

	t.Run("a start line forged by another user takes nothing", func(t *testing.T) {
		h := h.in(t)
		m := h.mark()
		// logger -t root forges SYSLOG_IDENTIFIER; _UID is journald's own.
		h.sh(`setpriv --reuid=65534 --regid=65534 --clear-groups sh -c "printf '%s' 'machine-config-daemon[1]: Starting update from rendered-a2 to rendered-x: &{}' | logger -t root"`)
		h.sh(`systemd-run --quiet --wait --collect -p User=nobody sh -c "printf '%s' 'machine-config-daemon[1]: \"Starting update from rendered-a2 to rendered-y: &{}\"' | logger -t root"`)
		// The forged lines are in the journal before the edit.
		h.WaitFor(t, recordTimeout, "the forged lines in the journal", func() (bool, string) {
			out, _, _ := h.Run(h.ctx, "journalctl", "-q", "--no-pager", "-o", "cat", "_UID=65534", "_TRANSPORT=syslog")
			return strings.Count(out, "Starting update from rendered-a2") == 2, out
		})
		h.noDriftSince(m, "/nothing")
		if got := h.between(m, h.mark(), harness.MsgInhibited, nil); len(got) > 0 {
			t.Errorf("a forged start line inhibited: %s", got[0]["MESSAGE"])
		}
	})

	t.Run("rollback after the rename", func(t *testing.T) {
		h := h.in(t)
		m := h.mark()
		h.mcd(1, `say "Starting update from rendered-a2 to rendered-b3: &{files:true}"`)
		h.waitMCDHeld(m, "update rendered-a2 → rendered-b3")
		h.mcd(1, `write_b; cc b rendered-b3`)
		h.waitMCDHeld(m, "currentconfig names rendered-b3, waiting")
		// The post-config action failed: update's deferred rollbacks, LIFO:
		// currentconfig back to A first, then A's files.
		h.mcd(1, `cc a rendered-a2; sleep 1; write_a`)
		h.waitMCDHeld(m, "currentconfig back to rendered-a2: rollback")
		h.released(m, recordTimeout)
		h.waitRecord(m, msgMCD, nil)
		h.waitStatus("No drift: watching 3 paths, 0 units")
	})

	t.Run("drift-monitor restarted in the middle of an update", func(t *testing.T) {
		h := h.in(t)
		m := h.mark()
		h.mcd(1, `say "Starting update from rendered-a2 to rendered-b4: &{files:true}"`)
		h.waitMCDHeld(m, "update rendered-a2 → rendered-b4")
		h.mcd(1, `write_b`)
		h.MustRun(t, "systemctl", "restart", service)
		r := h.withInvocation(h.prop("InvocationID"))
		r.waitMCDHeld(0, "update rendered-a2 → rendered-b4: draining")
		r.statusHas("Inhibited by machine-config-daemon")
		r.mcd(1, `cc b rendered-b4; say "Node has Desired Config rendered-b4, skipping reboot"`)
		r.released(0, recordTimeout)
		r.waitStatus("No drift: watching 3 paths, 0 units")
		for _, rec := range r.between(0, r.mark(), harness.DriftDetected, nil) {
			t.Errorf("the restarted daemon reported the update: %s", rec["MESSAGE"])
		}
		h.inv = r.inv
	})

	t.Run("failure before the rename: bounded, retries of the same update no longer held", func(t *testing.T) {
		h := h.in(t)
		m := h.mark()
		h.mcd(1, `say "Starting update from rendered-b4 to rendered-a5: &{files:true}"`)
		h.waitMCDHeld(m, "update rendered-b4 → rendered-a5")
		// The writing fails half-way; the MCD writes B's files back and
		// retries, again and again: currentconfig never changes.
		h.mcd(1, `printf 'v1\n' | aw /etc/shared.conf 0644; write_b; sleep 2; say "Starting update from rendered-b4 to rendered-a5: &{files:true}"`)
		// --mcd-update-timeout=25s from the first start line.
		h.waitRecordWithin(time.Minute, m, msgMCD, nil)
		h.released(m, time.Minute)
		n := h.mark()
		h.mcd(1, `say "Starting update from rendered-b4 to rendered-a5: &{files:true}"`)
		h.noDriftSince(n, "/nothing") // reported at once: not held
		if got := h.between(n, h.mark(), harness.MsgInhibited, nil); len(got) > 0 {
			t.Errorf("a retry of the expired update inhibited again: %s", got[0]["MESSAGE"])
		}
	})

	t.Run("a timed-out update is journaled once in a boot, however often the daemon restarts", func(t *testing.T) {
		h := h.in(t)
		// The last subtest's timeout, which every restart finds again in
		// this boot's journal.
		for i := range 2 {
			h.MustRun(t, "systemctl", "restart", service)
			r := h.withInvocation(h.prop("InvocationID"))
			r.waitRecord(0, harness.MsgReady, nil)
			for _, rec := range r.between(0, r.mark(), msgMCD, nil) {
				if strings.Contains(rec["MESSAGE"], "did not reach its end") {
					t.Errorf("restart %d journaled the timeout again: %s", i+1, rec["MESSAGE"])
				}
			}
			h.inv = r.inv
		}
		h.waitStatus("No drift: watching 3 paths, 0 units")
	})
}

// TestMCDWithoutJournal: a daemon that cannot read the journal follows the
// renames of currentconfig only, says so, holds a rename and a new drift
// for the hold-down, and still reports a real edit once it lasted that long.
func TestMCDWithoutJournal(t *testing.T) {
	t.Parallel()
	h := bootDaemon(t, mcdSetup("InaccessiblePaths=-/run/log/journal -/var/log/journal\n", "--mcd-reboot-timeout=8s"))
	h.dumpOnFailure()
	h.statusHas("machine-config-daemon followed by the renames of currentconfig only")
	h.waitRecord(0, msgMCD, nil)

	m := h.mark()
	h.mcd(1, `say "Starting update from rendered-a to rendered-b: &{}"; write_b; cc b rendered-b; say "Node has Desired Config rendered-b, skipping reboot"`)
	h.waitMCDHeld(m, "renames only")
	h.released(m, recordTimeout)
	h.statusHas("No drift: watching 3 paths, 0 units")

	n := h.mark()
	start := time.Now()
	h.MustRun(t, "chmod", "0600", sentinel)
	h.waitRecord(n, harness.DriftDetected, map[string]string{"DRIFT_PATH": sentinel, "DRIFT_KIND": "mode"})
	if d := time.Since(start); d < 3*time.Second {
		t.Errorf("the drift was reported %s after the edit, before the 3s hold-down", d)
	}
	n = h.mark()
	h.MustRun(t, "chmod", "0644", sentinel)
	h.waitRecord(n, harness.MsgDriftResolved, map[string]string{"DRIFT_PATH": sentinel})

	// The MCD's reboot unit (daemon.go:rebootCommand) is a reboot marker
	// the journal need not be read for; this one never reboots, so the
	// hold ends with --mcd-reboot-timeout.
	n = h.mark()
	h.sh(`systemd-run --quiet --unit machine-config-daemon-reboot --description "machine-config-daemon: Node will reboot into config rendered-b" sleep infinity`)
	h.waitMCDHeld(n, "update to rendered-b: reboot pending")
	h.statusHas("Inhibited by machine-config-daemon: update to rendered-b: reboot pending")
	h.released(n, time.Minute)
	h.waitRecord(n, msgMCD, nil)
}

// TestMCDReboot follows an update through its reboot: nspawn exits 133 on
// `systemctl reboot` and boots the same /etc and /var again (bound from
// host directories: a persistent journal, currentconfig and the files),
// with a new boot id and an empty /run. The daemon of the new boot reads
// the previous boot's MCD lines back, holds until the MCD validates the
// disk, and then checks against B.
func TestMCDReboot(t *testing.T) {
	t.Parallel()
	etc, vr := t.TempDir(), t.TempDir()
	s := mcdSetup("")
	binds := append(daemonBinds(t), nspawn.Mount{Src: etc, Dst: "/etc"}, nspawn.Mount{Src: vr, Dst: "/var"})
	// One machine id for both boots, so that the journal of the first is
	// the previous boot of the second.
	if err := os.WriteFile(filepath.Join(etc, "machine-id"), []byte("0123456789abcdef0123456789abcdef\n"), 0o444); err != nil {
		t.Fatal(err)
	}
	boot := func() *host {
		return newHost(t, nspawn.Boot(t, nspawn.Options{Bind: binds}))
	}
	h := boot()
	h.dumpOnFailure()
	h.MustRun(t, "sh", "-c", "mkdir -p /var/log/journal && journalctl --flush")
	h.WriteFile(t, configPath, []byte(s.config), 0o644)
	for _, f := range s.files {
		h.WriteFile(t, f.path, []byte(f.content), f.mode)
	}
	h.WriteFile(t, "/etc/systemd/system/"+service+".d/test.conf", []byte("[Service]\nExecStart=\nExecStart=/usr/bin/drift-monitor daemon "+strings.Join(s.flags, " ")+"\n"), 0o644)
	h.MustRun(t, "systemctl", "daemon-reload")
	h.MustRun(t, "systemctl", "enable", service)
	h.MustRun(t, "systemctl", "restart", service)
	h.inv = h.prop("InvocationID")
	h.waitStatus("No drift: watching 3 paths, 0 units")

	m := h.mark()
	h.mcd(1, `say "Starting update from rendered-a to rendered-b: &{osUpdate:false kargs:true fips:false passwd:false files:true units:false kernelType:false extensions:false}"`)
	h.waitMCDHeld(m, "update rendered-a → rendered-b: draining")
	h.mcd(1, `write_b; cc b rendered-b`)
	h.waitMCDHeld(m, "currentconfig names rendered-b, waiting")
	// performPostConfigChangeNodeDisruptionAction, then reboot
	// (update.go): the lines, then the transient unit (daemon.go:
	// rebootCommand).
	h.mcd(1, `say "Performing post config change action: Reboot for config rendered-b"; say "Rebooting node"; say "initiating reboot: Node will reboot into config rendered-b"`)
	h.waitMCDHeld(m, "reboot pending")
	for _, r := range h.between(m, h.mark(), harness.DriftDetected, nil) {
		t.Errorf("drift reported before the reboot: %s", r["MESSAGE"])
	}
	h.mcd(1, `systemd-run --unit machine-config-daemon-reboot --description "machine-config-daemon: Node will reboot into config rendered-b" /bin/sh -c "systemctl reboot"; say "reboot successful"`)
	h.WaitRebooted(t, time.Minute)

	h = boot()
	h.dumpOnFailure()
	h.WaitFor(t, recordTimeout, service+" active", func() (bool, string) {
		st := h.prop("ActiveState")
		return st == "active", st
	})
	h.inv = h.prop("InvocationID")
	if prev := h.MustRun(t, "journalctl", "-b", "-1", "-q", "-o", "cat", "-u", "machine-config-daemon-reboot"); !strings.Contains(prev, "Node will reboot into config rendered-b") {
		t.Errorf("the previous boot's journal lacks the reboot unit: %q", prev)
	}
	h.waitMCDHeld(0, "config rendered-b: waiting for the MCD to validate the disk")
	h.statusHas("Inhibited by machine-config-daemon: config rendered-b")
	// The MCD pod, started again: checkStateOnFirstRun (daemon.go).
	h.mcd(1, `say "Starting to manage node: n1"; say 'Disk currentConfig "rendered-b" overrides node'"'"'s currentConfig annotation "rendered-a"'; say "Validated on-disk state"; say "Update completed for config rendered-b and node has been successfully uncordoned"`)
	h.released(0, recordTimeout)
	h.waitStatus("No drift: watching 3 paths, 0 units")
}
