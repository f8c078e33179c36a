package enablement

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// ignitionPresets are the preset files of a host Ignition provisioned with
// unit declared enabled (see ignitionPreset), over the vendor's "disable *".
func ignitionPresets(unit string) map[string]string {
	return map[string]string{
		"/etc/systemd/system-preset/20-ignition.preset":    ignitionPreset(unit) + "\n",
		"/usr/lib/systemd/system-preset/99-default.preset": "disable *\n",
	}
}

func withFiles(a, b map[string]string) map[string]string {
	out := map[string]string{}
	for _, m := range []map[string]string{a, b} {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}

// presetAll runs the first boot's `systemctl preset-all` on root. held:
// an alias link is expected in the way, which it reports, going on with
// the rest as the first boot's does.
func presetAll(t *testing.T, root string, held bool) {
	t.Helper()
	_, errOut := runSystemctl(t, root, "preset-all")
	if got := strings.Contains(errOut, "already exists and is a symlink to"); got != held || (!held && errOut != "") {
		t.Fatalf("systemctl preset-all, an alias link in the way: %v, want %v:\n%s", got, held, errOut)
	}
}

// TestWantEnabledAfterIgnition: what `enabled: true` makes of a unit right
// after Ignition's preset (the first boot's preset-all, run by the real
// systemctl), with the first-boot record made then and without one.
func TestWantEnabledAfterIgnition(t *testing.T) {
	requireSystemctl(t)
	const svc = "[Service]\nExecStart=/bin/true\n"
	cases := []struct {
		name   string
		unit   string
		fx     fixture
		after  string // the state preset-all leaves (systemctl's)
		want   Verdict
		why    string // part of Enabling.Why
		held   []Held
		noRecd Verdict // without a first-boot record
	}{
		{name: "a linked unit file without [Install] is as enabled as it gets", unit: "metrics.service",
			fx:    fixture{files: map[string]string{"/opt/u/metrics.service": svc}, links: map[string]string{etc + "metrics.service": "/opt/u/metrics.service"}},
			after: StateLinked, want: Satisfied, noRecd: Satisfied},
		{name: "a linked unit file with Also= only is as enabled as it gets", unit: "metrics.service",
			fx: fixture{files: map[string]string{"/opt/u/metrics.service": svc + "[Install]\nAlso=other.service\n", usr + "other.service": svc + "[Install]\nWantedBy=multi-user.target\n"},
				links: map[string]string{etc + "metrics.service": "/opt/u/metrics.service"}},
			after: StateLinked, want: Satisfied, noRecd: Satisfied},
		{name: "a linked template without an instance cannot be enabled", unit: "lt@.service",
			fx:    fixture{files: map[string]string{"/opt/u/lt@.service": svc + "[Install]\nWantedBy=multi-user.target\n"}, links: map[string]string{etc + "lt@.service": "/opt/u/lt@.service"}},
			after: StateLinked, want: CannotEnable, why: "cannot be enabled without an instance", noRecd: CannotEnable},
		// The image enabled c.service, whose alias b.service is a.service's
		// too; its preset keeps it enabled.
		{name: "an alias held by another unit's link, as the config was applied", unit: "a.service",
			fx: fixture{files: map[string]string{usr + "a.service": svc + "[Install]\nAlias=b.service\n", usr + "c.service": svc + "[Install]\nAlias=b.service\n",
				"/usr/lib/systemd/system-preset/50-vendor.preset": "enable c.service\n"},
				links: map[string]string{etc + "b.service": usr + "c.service"}},
			after: StateDisabled, want: CannotEnable, why: `is another unit's: "/etc/systemd/system/b.service" (a link to "/usr/lib/systemd/system/c.service")`,
			// The path systemd finds a.service at first (/lib, before /usr/lib).
			held:   []Held{{Path: etc + "b.service", Now: usr + "c.service", Want: "/lib/systemd/system/a.service"}},
			noRecd: CannotEnable},
		{name: "a template enabled in /run only", unit: "rt@.service",
			fx: fixture{files: map[string]string{usr + "rt@.service": svc + "[Install]\nWantedBy=multi-user.target\n"},
				links: map[string]string{"/run/systemd/system/" + wnts + "rt@.service": usr + "rt@.service"}},
			after: StateEnabledRuntime, want: CannotEnable, why: "cannot be enabled without an instance", noRecd: CannotEnable},
		{name: "enabled in /run only, with no [Install]", unit: "r.service",
			fx: fixture{files: map[string]string{usr + "r.service": svc},
				links: map[string]string{"/run/systemd/system/" + wnts + "r.service": usr + "r.service"}},
			after: StateEnabledRuntime, want: Satisfied, noRecd: Satisfied},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fx := tc.fx
			fx.files = withFiles(fx.files, ignitionPresets(tc.unit))
			root := buildRoot(t, fx)
			presetAll(t, root, tc.held != nil)
			after := systemctlIsEnabled(t, root, tc.unit)
			if after != tc.after {
				t.Fatalf("after preset-all, systemctl is-enabled %s = %s, want %s", tc.unit, after, tc.after)
			}
			tree, err := openTree(t, root)
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range []struct {
				record string
				want   Verdict
			}{{after, tc.want}, {"", tc.noRecd}} {
				v, en, err := tree.WantEnabled(tc.unit, after, c.record)
				if err != nil {
					t.Fatal(err)
				}
				if v != c.want || !strings.Contains(en.Why, tc.why) {
					t.Errorf("first-boot record %q: WantEnabled = %s, %+v; want %s, Why with %q", c.record, verdictName(v), en, verdictName(c.want), tc.why)
				}
				if diff := cmp.Diff(tc.held, en.Held); diff != "" {
					t.Errorf("first-boot record %q: Held (-want +got):\n%s", c.record, diff)
				}
			}
		})
	}
}

// TestWantEnabledAliasReplaced: a unit enabled by its alias alone, whose
// alias link an admin later points at another unit (a disable), leaves the
// same tree as one whose alias was another unit's when Ignition ran. The
// first-boot record tells them apart: the one that was enabled then is
// drift, the other a notice; with no record both are a notice.
func TestWantEnabledAliasReplaced(t *testing.T) {
	requireSystemctl(t)
	const svc = "[Service]\nExecStart=/bin/true\n"
	files := withFiles(map[string]string{usr + "a.service": svc + "[Install]\nAlias=b.service\n", usr + "c.service": svc + "[Install]\nAlias=b.service\n"},
		ignitionPresets("a.service"))

	// Enabled by the first boot's preset, recorded so; then the admin
	// enables c.service in its place (systemctl enable --force: its alias
	// link replaces a.service's).
	enabled := buildRoot(t, fixture{files: files})
	presetAll(t, enabled, false)
	atFirstBoot := systemctlIsEnabled(t, enabled, "a.service")
	if atFirstBoot != StateEnabled {
		t.Fatalf("after preset-all, a.service is %s, want enabled", atFirstBoot)
	}
	runSystemctl(t, enabled, "enable", "--force", "c.service")

	// Held from the start: the image had c.service enabled, and its
	// preset keeps it so; Ignition's preset cannot make b.service
	// a.service's.
	held := buildRoot(t, fixture{
		files:     withFiles(files, map[string]string{"/usr/lib/systemd/system-preset/50-vendor.preset": "enable c.service\n"}),
		systemctl: [][]string{{"enable", "c.service"}},
	})
	presetAll(t, held, true)
	if diff := cmp.Diff(links(t, held), links(t, enabled)); diff != "" {
		t.Fatalf("the two hosts differ in /etc/systemd/system (-held +replaced):\n%s", diff)
	}

	for _, tc := range []struct {
		name, root, record string
		want               Verdict
	}{
		{"replaced since the first boot", enabled, atFirstBoot, Drift},
		{"held at the first boot", held, StateDisabled, CannotEnable},
		{"replaced, no record", enabled, "", CannotEnable},
		{"held, no record", held, "", CannotEnable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			state := systemctlIsEnabled(t, tc.root, "a.service")
			tree, err := openTree(t, tc.root)
			if err != nil {
				t.Fatal(err)
			}
			v, en, err := tree.WantEnabled("a.service", state, tc.record)
			if err != nil {
				t.Fatal(err)
			}
			if v != tc.want || state != StateDisabled || !en.Settled || len(en.Held) != 1 || en.Held[0].Path != etc+"b.service" || baseName(en.Held[0].Now) != "c.service" {
				t.Errorf("a.service %s, record %q: WantEnabled = %s, %+v; want %s, settled, b.service held by c.service", state, tc.record, verdictName(v), en, verdictName(tc.want))
			}
		})
	}
}

// TestWantEnabledLinkedWithInstall: a linked unit file with [Install] rules
// that are not applied is drift: enabling it would still make links.
func TestWantEnabledLinkedWithInstall(t *testing.T) {
	requireSystemctl(t)
	root := buildRoot(t, fixture{
		files: map[string]string{"/opt/u/l.service": "[Service]\nExecStart=/bin/true\n[Install]\nWantedBy=multi-user.target\n"},
		links: map[string]string{etc + "l.service": "/opt/u/l.service"},
	})
	state := systemctlIsEnabled(t, root, "l.service")
	tree, err := openTree(t, root)
	if err != nil {
		t.Fatal(err)
	}
	if v, en, err := tree.WantEnabled("l.service", state, ""); err != nil || v != Drift || state != StateLinked || en.Settled {
		t.Errorf("l.service %s: WantEnabled = %s, %+v, %v; want drift, not settled", state, verdictName(v), en, err)
	}
	runSystemctl(t, root, "enable", "l.service")
	if got := systemctlIsEnabled(t, root, "l.service"); got != StateEnabled {
		t.Errorf("after systemctl enable, l.service is %s", got)
	}
}
