package check_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/drift-monitor/drift-monitor/internal/buslink"
	"github.com/drift-monitor/drift-monitor/internal/check"
	"github.com/drift-monitor/drift-monitor/internal/drift"
	"github.com/drift-monitor/drift-monitor/internal/model"
	"github.com/drift-monitor/drift-monitor/internal/ondisk"
	"github.com/google/go-cmp/cmp"
)

func ptr[T any](v T) *T { return &v }

// fakeUnits answers UnitFileState from a map; a unit not in it fails.
type fakeUnits map[string]string

func (f fakeUnits) UnitFileState(unit string) (string, error) {
	s, ok := f[unit]
	if !ok {
		return "", fmt.Errorf("unit %s: no such unit", unit)
	}
	return s, nil
}

// unreachableUnits is systemd off the bus.
type unreachableUnits struct{}

func (unreachableUnits) UnitFileState(unit string) (string, error) {
	return "", fmt.Errorf("unit file state of %s: %w", unit, buslink.ErrUnavailable)
}

// manyFiles writes dirs×perDir files under root/srv and returns their
// entries (sorted by path, as Derive returns them). Some of them drift, by
// their index: content (i%7 == 3), missing (i%11 == 5), mode (i%13 == 6),
// a directory where a file is declared (i%17 == 8).
func manyFiles(t *testing.T, root string, dirs, perDir int) []model.Entry {
	t.Helper()
	var entries []model.Entry
	for d := 0; d < dirs; d++ {
		dir := filepath.Join(root, "srv", fmt.Sprintf("d%03d", d))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for f := 0; f < perDir; f++ {
			i := d*perDir + f
			name := fmt.Sprintf("f%04d", f)
			content := fmt.Sprintf("file %d\n", i)
			e := model.Entry{Kind: model.KindFile, Path: "/srv/" + filepath.Base(dir) + "/" + name,
				Type: model.TypeRegular, Mode: ptr[uint32](0o644), UID: ptr(0), GID: ptr(0),
				Content: &model.Content{Exact: []byte(content)}}
			entries = append(entries, e)
			p := filepath.Join(dir, name)
			onDisk, mode := content, os.FileMode(0o644)
			switch {
			case i%11 == 5:
				continue
			case i%17 == 8:
				if err := os.Mkdir(p, 0o755); err != nil {
					t.Fatal(err)
				}
				continue
			case i%7 == 3:
				onDisk = fmt.Sprintf("FILE %d\n", i)
			case i%13 == 6:
				mode = 0o600
			}
			if err := os.WriteFile(p, []byte(onDisk), mode); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(p, mode); err != nil {
				t.Fatal(err)
			}
		}
	}
	return entries
}

func newChecker(t testing.TB, root string) *check.Checker {
	t.Helper()
	r, err := ondisk.OpenRoot(root)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return &check.Checker{Root: r}
}

// oneByOne checks each entry alone, the way the daemon re-checks after an
// event, and sorts the result like All.
func oneByOne(c *check.Checker, entries []model.Entry) []drift.Drift {
	o := ondisk.NewObserver(c.Root)
	defer o.Close()
	var ds []drift.Drift
	for i := range entries {
		ds = append(ds, c.Outcome(o, &entries[i], nil).Drift...)
	}
	drift.Sort(ds)
	return ds
}

// TestAllMatchesEntry: a parallel full check of 3,000 files in 30
// directories finds exactly what checking each entry alone finds.
func TestAllMatchesEntry(t *testing.T) {
	root := t.TempDir()
	entries := manyFiles(t, root, 30, 100)
	c := newChecker(t, root)

	res := c.All(context.Background(), entries)
	if res.Checked != 3000 {
		t.Errorf("Checked = %d, want 3000", res.Checked)
	}
	counts := map[drift.Kind]int{}
	for _, d := range res.Drift {
		counts[d.Kind]++
	}
	// Expected counts, by the index rules of manyFiles (first rule wins).
	want := map[drift.Kind]int{}
	for i := 0; i < 3000; i++ {
		switch {
		case i%11 == 5:
			want[drift.Missing]++
		case i%17 == 8:
			want[drift.Type]++
		case i%7 == 3:
			want[drift.Content]++
		case i%13 == 6:
			want[drift.Mode]++
		}
	}
	if diff := cmp.Diff(want, counts); diff != "" {
		t.Errorf("drift per kind (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(oneByOne(c, entries), res.Drift); diff != "" {
		t.Errorf("All differs from Entry one by one (-want +got):\n%s", diff)
	}
	for _, workers := range []int{1, 3, 64} {
		c.Workers = workers
		if diff := cmp.Diff(res, c.All(context.Background(), entries)); diff != "" {
			t.Errorf("All with %d workers differs (-want +got):\n%s", workers, diff)
		}
	}
	if !slices.IsSortedFunc(res.Drift, func(a, b drift.Drift) int { return drift.Cmp(&a, &b) }) {
		t.Error("drift is not sorted by path, entry and kind")
	}

	// Whatever order the entries come in, the result is the same.
	shuffled := append([]model.Entry(nil), entries...)
	rand.New(rand.NewSource(1)).Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	c.Workers = 0
	if diff := cmp.Diff(res.Drift, c.All(context.Background(), shuffled).Drift); diff != "" {
		t.Errorf("All of shuffled entries differs (-want +got):\n%s", diff)
	}
}

func TestAllMixedEntries(t *testing.T) {
	root := t.TempDir()
	for p, content := range map[string]string{
		"/etc/systemd/system/app.service": "[Service]\nExecStart=/bin/true\n",
		"/etc/motd":                       "welcome\n",
		"/etc/remote":                     "whatever was fetched\n",
	} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(root, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, p), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	entries := []model.Entry{
		{Kind: model.KindFile, Path: "/etc/motd", Type: model.TypeRegular, Mode: ptr[uint32](0o644),
			Content: &model.Content{Exact: []byte("hello\n")}},
		{Kind: model.KindFile, Path: "/etc/remote", Type: model.TypeRegular, Mode: ptr[uint32](0o644),
			Content: &model.Content{Unverifiable: "remote https source without verification.hash (never fetched)"}},
		{Kind: model.KindUnit, Path: "/etc/systemd/system/app.service", Unit: "app.service", Type: model.TypeRegular,
			Mode: ptr[uint32](0o644), Content: &model.Content{Exact: []byte("[Service]\nExecStart=/bin/true\n")}},
		{Kind: model.KindEnablement, Path: "/etc/systemd/system/app.service", Unit: "app.service", Type: model.TypeNone, Enabled: ptr(true)},
		{Kind: model.KindEnablement, Path: "/etc/systemd/system/chronyd.service", Unit: "chronyd.service", Type: model.TypeNone, Enabled: ptr(true)},
		{Kind: model.KindEnablement, Path: "/etc/systemd/system/debug-shell.service", Unit: "debug-shell.service", Type: model.TypeNone, Enabled: ptr(false)},
		{Kind: model.KindEnablement, Path: "/etc/systemd/system/gone.service", Unit: "gone.service", Type: model.TypeNone, Enabled: ptr(true)},
		{Kind: model.KindKernelArg, Path: "/proc/cmdline", Type: model.TypeNone, Arg: `console="ttyS0,115200n8 quiet"`, ArgPresent: true},
		{Kind: model.KindKernelArg, Path: "/proc/cmdline", Type: model.TypeNone, Arg: "nosmt", ArgPresent: true},
		{Kind: model.KindKernelArg, Path: "/proc/cmdline", Type: model.TypeNone, Arg: "quiet", ArgPresent: false},
		{Kind: model.KindKernelArg, Path: "/proc/cmdline", Type: model.TypeNone, Arg: "rhgb", ArgPresent: false},
	}
	var calls atomic.Int32
	c := newChecker(t, root)
	c.Units = fakeUnits{"app.service": "enabled", "chronyd.service": "disabled", "debug-shell.service": "enabled"}
	c.Cmdline = func() (string, error) {
		calls.Add(1)
		return `BOOT_IMAGE=/vmlinuz root=UUID=1 console="ttyS0,115200n8 quiet" quiet` + "\n", nil
	}

	res := c.All(context.Background(), entries)
	if calls.Load() != 1 {
		t.Errorf("Cmdline called %d times in a full check, want once", calls.Load())
	}
	type brief struct {
		Kind    drift.Kind
		Path    string
		Message string
	}
	var got []brief
	for _, d := range res.Drift {
		got = append(got, brief{d.Kind, d.Path, d.Message})
	}
	want := []brief{
		{drift.Content, "/etc/motd", `content mismatch for file "/etc/motd"`},
		{drift.Enablement, "/etc/systemd/system/chronyd.service", `unit "chronyd.service" is disabled, want enabled`},
		{drift.Enablement, "/etc/systemd/system/debug-shell.service", `unit "debug-shell.service" is enabled, want disabled`},
		{drift.Unreadable, "/etc/systemd/system/gone.service", `cannot determine whether unit "gone.service" is enabled: unit gone.service: no such unit`},
		{drift.KernelArg, "/proc/cmdline", `kernel argument "nosmt" is missing from /proc/cmdline`},
		{drift.KernelArg, "/proc/cmdline", `kernel argument "quiet" is present in /proc/cmdline, want it absent`},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("drift (-want +got):\n%s", diff)
	}
	if len(res.Notices) != 1 || res.Notices[0].Kind != drift.Unverifiable || res.Notices[0].Path != "/etc/remote" {
		t.Errorf("notices = %+v, want one for /etc/remote", res.Notices)
	}
	if res.Clean() {
		t.Error("Clean() with drift")
	}
	if diff := cmp.Diff(oneByOne(c, entries), res.Drift); diff != "" {
		t.Errorf("All differs from Entry one by one (-want +got):\n%s", diff)
	}

	t.Run("command line unreadable", func(t *testing.T) {
		c := newChecker(t, root)
		c.Cmdline = func() (string, error) { return "", errors.New("permission denied") }
		res := c.All(context.Background(), entries[7:8])
		if len(res.Drift) != 1 || res.Drift[0].Kind != drift.Unreadable || !strings.Contains(res.Drift[0].Message, "permission denied") {
			t.Errorf("drift = %+v, want an unreadable kernel command line", res.Drift)
		}
	})
	t.Run("systemd unreachable: enablement unknown, not drift", func(t *testing.T) {
		c := newChecker(t, root)
		c.Units = unreachableUnits{}
		res := c.All(context.Background(), entries[2:7])
		var kinds []drift.Kind
		for _, d := range res.Drift {
			kinds = append(kinds, d.Kind)
		}
		want := []string{entries[3].ID(), entries[4].ID(), entries[5].ID(), entries[6].ID()}
		if len(res.Drift) != 0 || !cmp.Equal(res.Unknown, want) {
			t.Errorf("drift %v, unknown %q; want none, and every enablement entry unknown", kinds, res.Unknown)
		}
		o := ondisk.NewObserver(c.Root)
		defer o.Close()
		if out := c.Outcome(o, &entries[3], nil); !out.Unknown || len(out.Drift) != 0 {
			t.Errorf("Outcome = %+v, known %v; want unknown", out.Drift, !out.Unknown)
		}
	})
	t.Run("no command line: kernel arguments are a notice, not drift", func(t *testing.T) {
		c := newChecker(t, root)
		res := c.All(context.Background(), entries[7:])
		if len(res.Drift) != 0 || len(res.Notices) != 4 {
			t.Errorf("drift = %+v, notices = %+v; want no drift and 4 notices", res.Drift, res.Notices)
		}
	})
}

func TestAllEmpty(t *testing.T) {
	c := newChecker(t, t.TempDir())
	res := c.All(context.Background(), nil)
	if !res.Clean() || res.Checked != 0 || res.Drift != nil || res.Notices != nil {
		t.Errorf("All(nil) = %+v", res)
	}
}

// TestAllCanceled: a canceled check returns promptly (its result is partial,
// see All's doc).
func TestAllCanceled(t *testing.T) {
	root := t.TempDir()
	entries := manyFiles(t, root, 10, 100)
	c := newChecker(t, root)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	done := make(chan check.Result, 1)
	go func() { done <- c.All(ctx, entries) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("All with a canceled context did not return")
	}
}

func TestSort(t *testing.T) {
	ds := []drift.Drift{
		{Path: "/b", Entry: model.KindFile, Kind: drift.Mode},
		{Path: "/a", Entry: model.KindUnit, Kind: drift.Content},
		{Path: "/a", Entry: model.KindEnablement, Kind: drift.Enablement},
		{Path: "/b", Entry: model.KindFile, Kind: drift.Content},
		{Path: "/proc/cmdline", Entry: model.KindKernelArg, Kind: drift.KernelArg, Want: "z"},
		{Path: "/proc/cmdline", Entry: model.KindKernelArg, Kind: drift.KernelArg, Want: "a"},
	}
	drift.Sort(ds)
	var got []string
	for _, d := range ds {
		got = append(got, d.Path+" "+string(d.Entry)+" "+string(d.Kind)+" "+d.Want)
	}
	want := []string{
		"/a enablement enablement ",
		"/a unit content ",
		"/b file content ",
		"/b file mode ",
		"/proc/cmdline kernel-argument kernel-argument z", // stable: entry order
		"/proc/cmdline kernel-argument kernel-argument a",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Sort (-want +got):\n%s", diff)
	}
}
