package check_test

import (
	"context"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/drift-monitor/drift-monitor/internal/drift"
	"github.com/drift-monitor/drift-monitor/internal/enablement"
	"github.com/drift-monitor/drift-monitor/internal/model"
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
	writeUnitFiles(t, root, map[string]string{
		"/usr/lib/systemd/system/w@.service":    svc + "WantedBy=multi-user.target\n",
		"/usr/lib/systemd/system/al@.service":   svc + "Alias=other@.service\n",
		"/usr/lib/systemd/system/plain.service": svc + "WantedBy=multi-user.target\n",
	}, nil)
	enabled := func(unit string) model.Entry {
		return model.Entry{Kind: model.KindEnablement, Path: "/etc/systemd/system/" + unit, Unit: unit,
			Type: model.TypeNone, Enabled: ptr(true)}
	}
	entries := []model.Entry{enabled("al@bar.service"), enabled("plain.service"), enabled("w@.service")}
	wantDrift := []string{`unit "plain.service" is disabled, want enabled`}
	wantNotices := []string{
		`unit "al@bar.service" cannot be enabled: enabling it (as Ignition's preset does) makes no link that systemd counts for it`,
		`unit "w@.service" cannot be enabled without an instance: enabling a template without DefaultInstance= (as Ignition's preset does) makes no link that systemd counts for it`,
	}
	for _, name := range []string{"offline", "systemd"} {
		t.Run(name, func(t *testing.T) {
			c := newChecker(t, root)
			c.Units = enablement.Offline{Root: c.Root}
			if name == "systemd" {
				c.Units = fakeUnits{"al@bar.service": "disabled", "plain.service": "disabled", "w@.service": "disabled"}
			}
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
			if out := c.Outcome(o, &entries[2], nil); len(out.Drift) != 0 || len(out.Notices) != 1 {
				t.Errorf("Outcome(w@.service) = drift %+v, notice %v; want a notice only", out.Drift, out.Notices)
			}
		})
	}
}

// countingOffline counts the readings of the unit files an offline source
// makes: Pass (one Tree for a pass) and UnitFileState (a Tree per unit).
type countingOffline struct {
	enablement.Offline
	passes, single *atomic.Int32
}

func (c countingOffline) Pass() (*enablement.Tree, error) {
	c.passes.Add(1)
	return c.Offline.Pass()
}

func (c countingOffline) UnitFileState(unit string) (string, error) {
	c.single.Add(1)
	return c.Offline.UnitFileState(unit)
}

// A full check reads the unit files once for all its units (one Tree per
// pass, not one per unit), and releases what it held.
func TestOneTreePerPass(t *testing.T) {
	root := t.TempDir()
	var entries []model.Entry
	for _, u := range []string{"a.service", "b.service", "c.service", "d@.service"} {
		p := filepath.Join(root, "usr/lib/systemd/system", u)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("[Install]\nWantedBy=multi-user.target\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		entries = append(entries, model.Entry{Kind: model.KindEnablement, Path: "/etc/systemd/system/" + u, Unit: u,
			Type: model.TypeNone, Enabled: ptr(true)})
	}
	c := newChecker(t, root)
	units := countingOffline{enablement.Offline{Root: c.Root}, new(atomic.Int32), new(atomic.Int32)}
	c.Units = units
	fds := func() int {
		ents, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			t.Fatal(err)
		}
		return len(ents)
	}
	before := fds()
	res := c.All(context.Background(), entries)
	if len(res.Drift) != 3 || len(res.Notices) != 1 {
		t.Errorf("drift %+v, notices %+v; want 3 disabled and d@.service's notice", res.Drift, res.Notices)
	}
	if p, s := units.passes.Load(), units.single.Load(); p != 1 || s != 0 {
		t.Errorf("a full check of %d units made %d passes and %d single readings, want 1 and 0", len(entries), p, s)
	}
	if after := fds(); after != before {
		t.Errorf("%d descriptors open after the check, %d before", after, before)
	}

	// The entries of a batch of events, checked one by one in a Batch.
	units.passes.Store(0)
	o := ondisk.NewObserver(c.Root)
	defer o.Close()
	b := c.NewBatch()
	for i := range entries {
		if out := c.OutcomeIn(b, o, &entries[i], nil); len(out.Drift)+len(out.Notices) != 1 {
			t.Errorf("OutcomeIn(%s) = %+v, want one drift or notice", entries[i].Unit, out)
		}
	}
	b.Close()
	if p, s := units.passes.Load(), units.single.Load(); p != 1 || s != 0 {
		t.Errorf("a batch of %d units made %d passes and %d single readings, want 1 and 0", len(entries), p, s)
	}
}

// What `enabled: true` makes of a unit right after Ignition, whichever
// source answers its state: a linked unit file with no [Install] is as
// enabled as anything could make it (no drift); a unit whose alias link is
// another unit's is drift if the first-boot record says it was enabled
// then (its link was replaced since), and otherwise a notice, which says
// so, or that it cannot tell without a record.
func TestEnablementAfterIgnition(t *testing.T) {
	root := t.TempDir()
	const svc = "[Service]\nExecStart=/bin/true\n"
	writeUnitFiles(t, root, map[string]string{
		"/usr/lib/systemd/system/a.service": svc + "[Install]\nAlias=b.service\n",
		"/usr/lib/systemd/system/c.service": svc + "[Install]\nAlias=b.service\n",
		"/opt/metrics/metrics.service":      svc,
	}, map[string]string{
		"/etc/systemd/system/b.service":       "/usr/lib/systemd/system/c.service",
		"/etc/systemd/system/metrics.service": "/opt/metrics/metrics.service",
	})
	const record = "/etc/drift-monitor/desired.d/10-firstboot.record"
	enabled := func(unit, atFirstBoot string) model.Entry {
		e := model.Entry{Kind: model.KindEnablement, Path: "/etc/systemd/system/" + unit, Unit: unit,
			Type: model.TypeNone, Enabled: ptr(true)}
		if atFirstBoot != "" {
			e.FirstBoot = &model.FirstBoot{Record: record, Enablement: atFirstBoot}
		}
		return e
	}
	const held = `cannot be enabled: the alias link that enabling it (as Ignition's preset does) would make is another unit's: "/etc/systemd/system/b.service" (a link to "/usr/lib/systemd/system/c.service")`
	for _, tc := range []struct {
		name          string
		e             model.Entry
		drift, notice string
	}{
		{"linked, no [Install]", enabled("metrics.service", ""), "", ""},
		{"linked, no [Install], recorded", enabled("metrics.service", "linked"), "", ""},
		{"alias replaced since the first boot", enabled("a.service", "enabled"),
			`unit "a.service" is disabled, want enabled: it was enabled at the first boot (recorded in "` + record + `"), and now ` + held, ""},
		{"alias held at the first boot", enabled("a.service", "disabled"),
			"", `unit "a.service" ` + held + `; it was disabled at the first boot too (recorded in "` + record + `")`},
		{"alias held, no record", enabled("a.service", ""),
			"", `unit "a.service" ` + held + `; whether that was so when its config was applied or the link has been replaced since (which disables it) cannot be told: no first-boot record (drift-monitor adopt) kept its enablement`},
	} {
		for _, source := range []string{"offline", "systemd"} {
			t.Run(tc.name+"/"+source, func(t *testing.T) {
				c := newChecker(t, root)
				c.Units = enablement.Offline{Root: c.Root}
				if source == "systemd" {
					c.Units = fakeUnits{"a.service": "disabled", "metrics.service": "linked"}
				}
				res := c.All(context.Background(), []model.Entry{tc.e})
				var gotDrift, gotNotice string
				for _, d := range res.Drift {
					gotDrift += d.Message
				}
				for _, n := range res.Notices {
					gotNotice += n.Message
				}
				if gotDrift != tc.drift || gotNotice != tc.notice {
					t.Errorf("drift %q\nnotice %q\nwant drift %q\nnotice %q", gotDrift, gotNotice, tc.drift, tc.notice)
				}
			})
		}
	}
}

// writeUnitFiles makes files (path → content) and symbolic links (path →
// target) under root.
func writeUnitFiles(t *testing.T, root string, files, links map[string]string) {
	t.Helper()
	for p, content := range files {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(root, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, p), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for p, target := range links {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(root, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, filepath.Join(root, p)); err != nil {
			t.Fatal(err)
		}
	}
}
