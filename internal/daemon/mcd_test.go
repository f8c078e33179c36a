package daemon

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/drift-monitor/drift-monitor/internal/desired"
	"github.com/drift-monitor/drift-monitor/internal/inhibit"
	"github.com/drift-monitor/drift-monitor/internal/journal"
	"github.com/drift-monitor/drift-monitor/internal/mcd"
)

func TestMCDPath(t *testing.T) {
	for _, tc := range []struct {
		mode    string
		configs []string
		want    string
	}{
		{"auto", []string{"/etc/machine-config-daemon//currentconfig"}, MCDCurrentConfig},
		{"", []string{"/etc/x.ign", MCDHypershiftConfig}, MCDHypershiftConfig},
		{"auto", []string{"/etc/drift-monitor/desired.d"}, ""},
		{"auto", nil, ""},
		{"on", nil, MCDCurrentConfig},
		{"off", []string{MCDCurrentConfig}, ""},
	} {
		if got := mcdPath(Options{Configs: tc.configs, MCD: MCDOptions{Mode: tc.mode}}); got != tc.want {
			t.Errorf("mcdPath(%q, %q) = %q, want %q", tc.mode, tc.configs, got, tc.want)
		}
	}
}

func TestReadConfigName(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name, content, want, err string
	}{
		{"as the MCD writes it", `{"metadata":{"name":"rendered-worker-1","uid":"u"},"spec":{"config":{}}}`, "rendered-worker-1", ""},
		{"metadata after spec", `{"spec":{"config":{"storage":{"files":[]}}},"metadata":{"name":"rendered-x"}}`, "rendered-x", ""},
		{"control characters", `{"metadata":{"name":"a\u001b[2Jb"}}`, `a\x1b[2Jb`, ""},
		{"no name", `{"metadata":{},"spec":{}}`, "", "no metadata.name"},
		{"not an object", `[1]`, "", "not a JSON object"},
		{"truncated", `{"metadata":{"name":"x"`, "", "metadata"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-"))
			if err := os.WriteFile(p, []byte(tc.content), 0o644); err != nil {
				t.Fatal(err)
			}
			got, _, ino, err := readConfigName(p)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), p) {
					t.Fatalf("err %v, want one naming %s with %q", err, p, tc.err)
				}
				return
			}
			if err != nil || got != tc.want || ino == 0 {
				t.Fatalf("readConfigName = %q (ino %d), %v; want %q", got, ino, err, tc.want)
			}
		})
	}
}

// TestMCDInhibitorBesideLockFiles: the machine's hold is one more
// inhibitor: held with a lock file's, the release of either leaves the
// other, and the last release checks.
func TestMCDInhibitorBesideLockFiles(t *testing.T) {
	ctx := context.Background()
	d, _, log := syntheticDaemon(t, Options{})
	d.fullCheck(ctx, "first check")
	d.ready = true
	d.mcd = &mcdFollower{m: mcd.Machine{T: mcd.DefaultTimeouts}}
	t.Cleanup(d.stopMCD)
	lock := []inhibit.Inhibitor{{Who: "updater", Why: "test", File: "/run/x.lock"}}
	d.setInhibitors(ctx, lock)
	d.mcd.m.CurrentConfig("rendered-a", false, time.Now())
	l, _ := mcd.Parse("machine-config-daemon[1]: Starting update from rendered-a to rendered-b: &{}")
	d.mcd.m.Line(l, time.Now())
	d.mcdApply(ctx)
	log.wait(t, 0, journal.MsgInhibited, map[string]string{"INHIBIT_WHO": mcdWho})
	if got := len(d.inhibitors); got != 2 {
		t.Fatalf("%d inhibitors, want the lock file's and the MCD's: %v", got, d.inhibitors)
	}
	d.setInhibitors(ctx, nil) // the lock file released
	if !d.inhibited() || d.inhibitors[0].Who != mcdWho {
		t.Fatalf("after the lock file's release: %v, want the MCD's held", d.inhibitors)
	}
	m := log.mark()
	d.mcd.m.CurrentConfig("rendered-b", true, time.Now())
	l, _ = mcd.Parse(`machine-config-daemon[1]: "Node has Desired Config rendered-b, skipping reboot"`)
	d.mcd.m.Line(l, time.Now())
	d.mcdApply(ctx)
	if d.inhibited() {
		t.Fatalf("still inhibited: %v", d.inhibitors)
	}
	reloadApplied(t, d)
	log.wait(t, m, journal.MsgReloaded, nil)
}

// TestMCDHoldDown: without the journal, a drift that appears between full
// checks is held for the hold-down (an update's first write, whose rename
// follows), and reported at the release if it persists.
func TestMCDHoldDown(t *testing.T) {
	ctx := context.Background()
	d, _, log := syntheticDaemon(t, Options{})
	d.fullCheck(ctx, "first check")
	d.ready = true
	d.mcd = &mcdFollower{m: mcd.Machine{T: mcd.DefaultTimeouts, RenameOnly: true}, renameOnly: "test"}
	t.Cleanup(d.stopMCD)
	i := slices.IndexFunc(d.ix.entries, func(e desired.Entry) bool { return e.Path == "/etc/a.conf" })
	writeFile(t, filepath.Join(d.o.Root, "etc/a.conf"), []byte("edited\n"))
	d.checkEntry(ctx, i)
	if got := log.find(journal.MsgDriftDetected, "/etc/a.conf"); len(got) != 0 || !d.inhibited() {
		t.Fatalf("a new drift in rename-only mode: reported %v, inhibited %v; want held", got, d.inhibited())
	}
	if !strings.Contains(d.status(), "renames of currentconfig only (test)") {
		t.Errorf("status %q does not say the MCD is followed by its renames only", d.status())
	}
	d.mcd.m.Tick(time.Now().Add(mcd.DefaultTimeouts.HoldDown))
	d.mcdApply(ctx)
	reloadApplied(t, d)
	log.wait(t, 0, journal.MsgDriftDetected, map[string]string{"DRIFT_PATH": "/etc/a.conf"})
	// Known now: the next event on it is no new drift, and not held.
	d.checkEntry(ctx, i)
	if d.inhibited() {
		t.Error("a known drift held again")
	}
}
