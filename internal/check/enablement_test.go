package check_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/drift-monitor/drift-monitor/internal/check"
	"github.com/drift-monitor/drift-monitor/internal/desired"
	"github.com/drift-monitor/drift-monitor/internal/drift"
	"github.com/drift-monitor/drift-monitor/internal/enablement"
	"github.com/drift-monitor/drift-monitor/internal/ondisk"
	"github.com/google/go-cmp/cmp"
)

// A unit declared enabled that nothing can enable without an instance is a
// cannot-enable notice, not drift, whichever source answers its state: the
// unit files (enablement.Offline) or systemd (here a stub that says
// "disabled", as systemd does; the reason is then read from the unit files
// under the checked root).
func TestEnablementThatCannotBeEnabledIsANotice(t *testing.T) {
	root := t.TempDir()
	const svc = "[Service]\nExecStart=/bin/true\n[Install]\n"
	for p, content := range map[string]string{
		"/usr/lib/systemd/system/w@.service":    svc + "WantedBy=multi-user.target\n",
		"/usr/lib/systemd/system/al@.service":   svc + "Alias=other@.service\n",
		"/usr/lib/systemd/system/plain.service": svc + "WantedBy=multi-user.target\n",
	} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(root, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, p), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	enabled := func(unit string) desired.Entry {
		return desired.Entry{Kind: desired.KindEnablement, Path: "/etc/systemd/system/" + unit, Unit: unit,
			Type: desired.TypeNone, Enabled: ptr(true)}
	}
	entries := []desired.Entry{enabled("al@bar.service"), enabled("plain.service"), enabled("w@.service")}
	wantDrift := []string{`unit "plain.service" is disabled, want enabled`}
	wantNotices := []string{
		`unit "al@bar.service" cannot be enabled: its template's [Install] has Alias= but no WantedBy= or RequiredBy=, and no alias link of an instance counts`,
		`unit "w@.service" cannot be enabled without an instance: it is a template without DefaultInstance= or Alias=, for which enabling (and Ignition's preset) makes no link`,
	}
	for name, units := range map[string]check.UnitStates{
		"offline": enablement.Offline{Root: root},
		"systemd": fakeUnits{"al@bar.service": "disabled", "plain.service": "disabled", "w@.service": "disabled"},
	} {
		t.Run(name, func(t *testing.T) {
			c := newChecker(t, root)
			c.Units = units
			res := c.All(context.Background(), entries)
			var gotDrift, gotNotices []string
			for _, d := range res.Drift {
				gotDrift = append(gotDrift, d.Message)
			}
			for _, n := range res.Notices {
				if n.Kind != drift.CannotEnable {
					t.Errorf("notice kind %q, want %q", n.Kind, drift.CannotEnable)
				}
				gotNotices = append(gotNotices, n.Message)
			}
			if diff := cmp.Diff(wantDrift, gotDrift); diff != "" {
				t.Errorf("drift (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(wantNotices, gotNotices); diff != "" {
				t.Errorf("notices (-want +got):\n%s", diff)
			}
			o := ondisk.NewObserver(c.Root)
			defer o.Close()
			if out := c.Outcome(o, &entries[2], nil); len(out.Drift) != 0 || out.Notice == nil {
				t.Errorf("Outcome(w@.service) = drift %+v, notice %v; want a notice only", out.Drift, out.Notice)
			}
		})
	}
}
