package drift_test

import (
	"testing"

	"github.com/drift-monitor/drift-monitor/internal/drift"
	"github.com/drift-monitor/drift-monitor/internal/model"
	"github.com/google/go-cmp/cmp"
)

// TestSort: drift is listed by path, then entry, then kind; ties (kernel
// arguments share /proc/cmdline) keep the order they came in.
func TestSort(t *testing.T) {
	d := func(path string, e model.Kind, k drift.Kind, id string) drift.Drift {
		return drift.Drift{Path: path, Entry: e, Kind: k, EntryID: id}
	}
	in := []drift.Drift{
		d("/proc/cmdline", model.KindKernelArg, drift.KernelArg, "kernel-argument:quiet"),
		d("/etc/b", model.KindFile, drift.Mode, "file:/etc/b"),
		d("/etc/systemd/system/a.service", model.KindUnit, drift.Content, "unit:/etc/systemd/system/a.service"),
		d("/proc/cmdline", model.KindKernelArg, drift.KernelArg, "kernel-argument:mitigations=off"),
		d("/etc/b", model.KindFile, drift.Content, "file:/etc/b"),
		d("/etc/systemd/system/a.service", model.KindEnablement, drift.Enablement, "enablement:a.service"),
		d("/etc/a", model.KindFile, drift.Owner, "file:/etc/a"),
	}
	want := []drift.Drift{in[6], in[4], in[1], in[5], in[2], in[0], in[3]}
	got := append([]drift.Drift(nil), in...)
	drift.Sort(got)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Sort (-want +got):\n%s", diff)
	}
}
