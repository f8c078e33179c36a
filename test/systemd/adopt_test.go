package systemd_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/drift-monitor/drift-monitor/test/harness"
	"github.com/drift-monitor/drift-monitor/test/nspawn"
)

const (
	adoptService = "drift-monitor-adopt.service"
	presetName   = "50-drift-monitor.preset"
	// adoptedPath is where drift-monitor adopt saves the cache.
	adoptedPath = "/etc/drift-monitor/desired.d/10-firstboot.ignition-cache.json"
	// adoptedFile is what the cache declares and the container lacks.
	adoptedFile = "/etc/provisioned-by-ignition"
)

// ignitionCache is shaped as Ignition 2.27 writes /run/ignition.json
// (internal/exec/engine.go: json.Marshal of the rendered config, every
// object written out, no indentation), in its newest spec,
// 3.7.0-experimental, which the loader takes as 3.6.0 in a fragment named as
// a cache (see drift-monitor(8), ADOPTION). It lists a remote child that
// Ignition fetched and merged in (the file it declares): the daemon neither
// fetches it nor reports it.
const ignitionCache = `{"ignition":{"config":{"merge":[{"source":"https://configs.example.com/child.ign","verification":{}}],"replace":{"verification":{}}},"proxy":{},"security":{"tls":{}},"timeouts":{},"version":"3.7.0-experimental"},"kernelArguments":{},"passwd":{},"storage":{"directories":[{"group":{},"path":"` + keptDir + `","user":{}}],"files":[{"group":{},"path":"` + adoptedFile + `","user":{},"contents":{"source":"data:,provisioned%0A","verification":{}},"mode":420}]},"systemd":{"units":[{"dropins":null,"enabled":true,"name":"` + aliasedUnit + `"}]}}`

// aliasedUnit is a unit the cache declares enabled, enabled by its Alias=
// alone: the first boot's preset applies Ignition's preset line for it,
// and otherUnit, the image's, has the same Alias= and is preset disabled.
// Units of the image: in /usr/lib, with Ignition's preset file in /etc.
const (
	aliasedUnit = "dm-aliased.service"
	otherUnit   = "dm-other.service"
	aliasName   = "dm-alias.service"
	aliasUnits  = "[Service]\nExecStart=/bin/sleep infinity\n[Install]\nAlias=" + aliasName + "\n"
)

// keptDir is a directory the cache declares without mode or owner, which
// the host has (the package's /etc/drift-monitor): the first-boot record
// keeps its mode, and a change to it is drift.
const keptDir = "/etc/drift-monitor"

// recordPath is where adopt records what the cache leaves to the node.
const recordPath = "/etc/drift-monitor/desired.d/10-firstboot.record"

// TestFirstBootAdoption boots a host as Fedora CoreOS's first boot leaves
// it for the real root: Ignition's config cache in /run, a first boot (the
// container's /etc has no machine-id yet), and the package's units, preset
// and /etc/drift-monitor, nothing else. The preset enables both units; the
// adopt unit saves the cache before the daemon starts, and the daemon
// reports drift against it with no other set-up. A second start of the unit,
// and a second boot on the same /etc/drift-monitor, keep the saved config
// even though the cache changed.
func TestFirstBootAdoption(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cache := filepath.Join(dir, "ignition.json")
	if err := os.WriteFile(cache, []byte(ignitionCache), 0o640); err != nil {
		t.Fatal(err)
	}
	// What the package installs as /etc/drift-monitor (mode 0755; its
	// desired.d is left for adopt to create, mode 0700). Bound read-write so
	// that it outlives the container, as /etc does a reboot.
	etcDM := filepath.Join(dir, "etc-drift-monitor")
	if err := os.Mkdir(etcDM, 0o755); err != nil {
		t.Fatal(err)
	}
	// The unit files of the image, and the preset Ignition writes for a
	// unit declared enabled (createSystemdPresetFile), which the first
	// boot's preset-all applies, over the image's disabling otherUnit.
	for name, content := range map[string]string{
		aliasedUnit:          aliasUnits,
		otherUnit:            aliasUnits,
		"20-ignition.preset": "enable " + aliasedUnit + "\n",
		"10-image.preset":    "disable " + otherUnit + "\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	boot := func(t *testing.T) *host {
		m := nspawn.Boot(t, nspawn.Options{
			BindRO: append(daemonBinds(t),
				nspawn.Mount{Src: harness.Repo(t, "units/"+adoptService), Dst: "/usr/lib/systemd/system/" + adoptService},
				nspawn.Mount{Src: harness.Repo(t, "packaging/"+presetName), Dst: "/usr/lib/systemd/system-preset/" + presetName},
				nspawn.Mount{Src: cache, Dst: "/run/ignition.json"},
				nspawn.Mount{Src: filepath.Join(dir, aliasedUnit), Dst: "/usr/lib/systemd/system/" + aliasedUnit},
				nspawn.Mount{Src: filepath.Join(dir, otherUnit), Dst: "/usr/lib/systemd/system/" + otherUnit},
				nspawn.Mount{Src: filepath.Join(dir, "20-ignition.preset"), Dst: "/etc/systemd/system-preset/20-ignition.preset"},
				nspawn.Mount{Src: filepath.Join(dir, "10-image.preset"), Dst: "/usr/lib/systemd/system-preset/10-image.preset"},
			),
			Bind: []nspawn.Mount{{Src: etcDM, Dst: "/etc/drift-monitor"}},
		})
		h := newHost(t, m)
		t.Cleanup(func() {
			if t.Failed() {
				out, _, err := m.Run(context.Background(), "journalctl", "-u", adoptService, "-u", service, "--no-pager", "-o", "short-monotonic")
				t.Logf("%s: journal of %s and %s (%v):\n%s", m.Name, adoptService, service, err, out)
			}
		})
		return h
	}
	fragment := func(t *testing.T) string {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(etcDM, "desired.d", filepath.Base(adoptedPath)))
		if err != nil {
			t.Fatalf("the adopted config: %v", err)
		}
		return string(b)
	}

	h := boot(t)
	for p, want := range map[string]string{"ConditionResult": "yes", "ActiveState": "active", "Result": "success"} {
		if got := unitProp(h, adoptService, p); got != want {
			t.Errorf("%s after the first boot: %s=%s, want %s", adoptService, p, got, want)
		}
	}
	if got := fragment(t); got != ignitionCache {
		t.Errorf("%s = %q, want the cache's bytes %q", adoptedPath, got, ignitionCache)
	}
	if got := h.sh(`stat -c '%a %U:%G' "$1" "$(dirname "$1")"`, adoptedPath); got != "600 root:root\n700 root:root\n" {
		t.Errorf("modes of %s and its directory: %q, want 600 and 700, root's", adoptedPath, got)
	}
	// The first-boot record, root's alone, keyed with the daemon's key
	// (the unit's StateDirectory=): the daemon uses it without a warning,
	// and the kept directory's mode is wanted as recorded.
	if got := h.sh(`stat -c '%a %U:%G' "$1"`, recordPath); got != "600 root:root\n" {
		t.Errorf("mode of %s: %q, want 600, root's", recordPath, got)
	}
	if rec := h.sh(`cat "$1"`, recordPath); !strings.Contains(rec, `"key_id": "hmac-sha256:`) || !strings.Contains(rec, `"path": "`+keptDir+`"`) || !strings.Contains(rec, `"mode": "0755"`) {
		t.Errorf("%s does not record %s 0755 with the host's key:\n%s", recordPath, keptDir, rec)
	}
	// The adopt unit ran first: the daemon's run of this boot is its only
	// one, and it loaded the adopted config from the start.
	if got := h.prop("NRestarts"); got != "0" {
		t.Errorf("%s NRestarts=%s, want 0", service, got)
	}
	after := strings.Fields(h.MustRun(t, "systemctl", "show", "-p", "After", "--value", service))
	if !containsString(after, adoptService) {
		t.Errorf("%s is not ordered after %s: After=%v", service, adoptService, after)
	}
	h.inv = h.prop("InvocationID")
	h.waitRecord(0, harness.DriftDetected, map[string]string{"DRIFT_PATH": adoptedFile})
	h.waitStatus("Drift: 1 path differs (" + adoptedFile + ": missing)")
	h.MustRun(t, "chmod", "0700", keptDir)
	h.waitRecord(0, harness.DriftDetected, map[string]string{"DRIFT_PATH": keptDir, "DRIFT_KIND": "mode"})
	h.MustRun(t, "chmod", "0755", keptDir)
	h.waitRecord(0, harness.MsgDriftResolved, map[string]string{"DRIFT_PATH": keptDir, "DRIFT_KIND": "mode"})
	if j := h.MustRun(t, "journalctl", "-u", service, "-o", "cat", "--no-pager"); strings.Contains(j, "first-boot record") {
		t.Errorf("the daemon warns about the first-boot record:\n%s", j)
	}
	// The child the cache lists is merged in: it is no notice (check prints
	// the notices; the daemon's journal has none for any config).
	out, errOut, err := h.Run(h.ctx, "drift-monitor", "check", "--format", "json")
	var rep harness.Report
	if jerr := json.Unmarshal([]byte(out), &rep); jerr != nil || len(rep.Drift) != 1 || len(rep.Notices) != 0 {
		t.Errorf("drift-monitor check on the host: %v (%v), drift %+v and notices %+v; want the one drift, no notice\nstderr:\n%s",
			err, jerr, rep.Drift, rep.Notices, errOut)
	}

	// The first boot's preset enabled aliasedUnit through its alias, and
	// the record says so. An admin enables otherUnit in its place, whose
	// alias link then holds the name: aliasedUnit is disabled and cannot
	// be enabled, as it would be had the link been otherUnit's when
	// Ignition ran, but the record tells that it was enabled: drift, and
	// resolved when the admin enables it again.
	if got := h.sh(`systemctl is-enabled "$1"`, aliasedUnit); got != "enabled\n" {
		t.Errorf("%s after the first boot: %q, want enabled", aliasedUnit, got)
	}
	if rec := h.sh(`cat "$1"`, recordPath); !strings.Contains(rec, `"unit": "`+aliasedUnit+`",
      "state": "enabled"`) {
		t.Errorf("%s does not record %s enabled:\n%s", recordPath, aliasedUnit, rec)
	}
	h.MustRun(t, "systemctl", "enable", "--force", otherUnit)
	r, _ := h.waitRecord(0, harness.DriftDetected, map[string]string{"DRIFT_UNIT": aliasedUnit, "DRIFT_KIND": "enablement"})
	if msg := r["MESSAGE"]; !strings.Contains(msg, "it was enabled at the first boot") || !strings.Contains(msg, "/etc/systemd/system/"+aliasName) {
		t.Errorf("the drift of %s says %q, want its first-boot state and the alias link", aliasedUnit, msg)
	}
	h.MustRun(t, "systemctl", "enable", "--force", aliasedUnit)
	h.waitRecord(0, harness.MsgDriftResolved, map[string]string{"DRIFT_UNIT": aliasedUnit, "DRIFT_KIND": "enablement"})

	// The cache changes. A second start of the unit is no first boot any
	// more (systemd-machine-id-commit has run): the condition fails. Run by
	// hand, adopt finds the saved config and keeps it.
	changed := strings.Replace(ignitionCache, "provisioned%0A", "changed%0A", 1)
	if err := os.WriteFile(cache, []byte(changed), 0o640); err != nil {
		t.Fatal(err)
	}
	h.MustRun(t, "systemctl", "restart", adoptService)
	if got := unitProp(h, adoptService, "ConditionResult"); got != "no" {
		t.Errorf("%s started again: ConditionResult=%s, want no (ConditionFirstBoot=yes)", adoptService, got)
	}
	if got := fragment(t); got != ignitionCache {
		t.Errorf("a second start of %s rewrote %s to %q", adoptService, adoptedPath, got)
	}
	out = h.MustRun(t, "drift-monitor", "adopt")
	if want := adoptedPath + " exists: left as it is, /run/ignition.json not adopted\n" + recordPath + " exists: left as it is\n"; out != want {
		t.Errorf("drift-monitor adopt by hand printed %q, want %q", out, want)
	}
	if got := fragment(t); got != ignitionCache {
		t.Errorf("drift-monitor adopt by hand rewrote %s to %q", adoptedPath, got)
	}

	// A host whose /etc/drift-monitor holds the saved config boots for the
	// first time (a reinstall keeping /etc, or an admin's own config of that
	// name): the unit runs and keeps it.
	t.Run("second boot", func(t *testing.T) {
		h := boot(t)
		if got := unitProp(h, adoptService, "Result"); got != "success" {
			t.Errorf("%s: Result=%s, want success", adoptService, got)
		}
		if got := fragment(t); got != ignitionCache {
			t.Errorf("the second boot rewrote %s to %q", adoptedPath, got)
		}
		out := h.MustRun(t, "journalctl", "-u", adoptService, "-o", "cat", "--no-pager")
		if want := adoptedPath + " exists: left as it is"; !strings.Contains(out, want) {
			t.Errorf("the journal of %s has no %q:\n%s", adoptService, want, out)
		}
	})
}

// unitProp is a property of unit (systemctl show).
func unitProp(h *host, unit, name string) string {
	h.t.Helper()
	return strings.TrimSpace(h.MustRun(h.t, "systemctl", "show", "-p", name, "--value", unit))
}

func containsString(list []string, s string) bool {
	for _, e := range list {
		if e == s {
			return true
		}
	}
	return false
}
