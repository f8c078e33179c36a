package check_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/drift-monitor/drift-monitor/internal/check"
	"github.com/drift-monitor/drift-monitor/internal/model"
	"github.com/drift-monitor/drift-monitor/internal/statecache"
	"github.com/drift-monitor/drift-monitor/test/floor"
)

// BenchmarkLabelCost: what labels cost where every file has one, side by
// side in one process: the same clean machine twice, on a root without
// SELinux and on a root with Debian's policy (SELINUX=enforcing) labelled by
// the real setfiles -F, each iteration running every variant (alternating
// which goes first); medians of wall-clock and of the process's CPU time,
// labelled over plain:
//
//   - daemon: a daemon's full pass (contents kept as digests, reads bounded
//     as the daemon bounds them, the policy and its defaults kept from
//     the pass before: check.LabelPolicy);
//   - check: a check's pass with its defaults kept between runs in a state
//     cache (check.LoadLabelsKept), the policy's key named anew each time;
//   - floor: the system calls alone (test/floor), which on a labelled root
//     read the label too.
//
// go test ./internal/check -run '^$' -bench LabelCost -benchtime 10x
// (-short: 10,000 files only). Needs root, setfiles and
// selinux-policy-default; skipped otherwise.
func BenchmarkLabelCost(b *testing.B) {
	ns := []int{10000, 100000}
	if testing.Short() {
		ns = ns[:1]
	}
	for _, n := range ns {
		b.Run(fmt.Sprintf("files=%d", n), func(b *testing.B) { benchLabelCost(b, n) })
	}
}

func benchLabelCost(b *testing.B, n int) {
	const policy = "/etc/selinux/default"
	if _, err := exec.LookPath("setfiles"); err != nil || os.Geteuid() != 0 {
		b.Skip("needs root and setfiles")
	}
	if _, err := os.Stat(policy); err != nil {
		b.Skip(err)
	}
	plainRoot, entries := benchState(b, n)
	labelledRoot, _ := benchState(b, n)
	installPolicy(b, labelledRoot, policy, "enforcing")
	fc := filepath.Join(labelledRoot, policy, "contexts/files/file_contexts")
	if out, err := exec.Command("setfiles", "-F", "-r", labelledRoot, fc, labelledRoot).CombinedOutput(); err != nil {
		b.Fatalf("setfiles: %v\n%s", err, out)
	}
	// The daemon's entries: contents as size and digest, as it keeps them.
	stored := slices.Clone(entries)
	for i := range stored {
		if c := stored[i].Content; c != nil && c.Exact != nil {
			sc := *c
			sc.Stored, sc.Exact = &model.Stored{Size: int64(len(c.Exact)), Sum: sha256.Sum256(c.Exact)}, nil
			stored[i].Content = &sc
		}
	}
	daemon := func(root string, labels bool) func() {
		c := newChecker(b, root)
		c.ReadLimit = 1 << 20
		var p check.LabelPolicy
		return func() {
			if labels {
				c.Labels = p.Load(c.Root, stored, false)
			}
			clean(b, c.All(context.Background(), stored))
		}
	}
	store := &statecache.Cache{Dir: b.TempDir()}
	oneShot := func(root string, labels bool) func() {
		c := newChecker(b, root)
		return func() {
			if labels {
				l := check.LoadLabelsKept(c.Root, entries, false, store)
				c.Labels = l
				defer l.Keep()
			}
			clean(b, c.All(context.Background(), entries))
		}
	}
	byDir := func(root string) map[string][]string {
		m := map[string][]string{}
		for i := range entries {
			d, f := filepath.Split(entries[i].Path)
			m[filepath.Join(root, d)] = append(m[filepath.Join(root, d)], f)
		}
		return m
	}
	bare := func(root string) func() {
		dirs := byDir(root)
		return func() {
			if err := floor.Run(dirs, 2*runtime.GOMAXPROCS(0), true); err != nil {
				b.Fatal(err)
			}
		}
	}
	variants := []struct {
		name             string
		plain, labelled  func()
		wall, cpu, wallL []time.Duration
		cpuL             []time.Duration
	}{
		{name: "daemon", plain: daemon(plainRoot, false), labelled: daemon(labelledRoot, true)},
		{name: "check", plain: oneShot(plainRoot, false), labelled: oneShot(labelledRoot, true)},
		{name: "floor", plain: bare(plainRoot), labelled: bare(labelledRoot)},
	}
	// Warm the page cache, the policy's defaults and the files' dentries.
	for _, v := range variants {
		v.plain()
		v.labelled()
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for k := range variants {
			v := &variants[k]
			if i%2 == 0 {
				w, c := timed(v.plain)
				v.wall, v.cpu = append(v.wall, w), append(v.cpu, c)
				w, c = timed(v.labelled)
				v.wallL, v.cpuL = append(v.wallL, w), append(v.cpuL, c)
			} else {
				w, c := timed(v.labelled)
				v.wallL, v.cpuL = append(v.wallL, w), append(v.cpuL, c)
				w, c = timed(v.plain)
				v.wall, v.cpu = append(v.wall, w), append(v.cpu, c)
			}
		}
	}
	b.StopTimer()
	for _, v := range variants {
		b.ReportMetric(med(v.wall), v.name+"-ns/op")
		b.ReportMetric(med(v.wallL)/med(v.wall), v.name+"-ratio")
		b.ReportMetric(med(v.cpuL)/med(v.cpu), v.name+"-cpu-ratio")
	}
}

func clean(b *testing.B, res check.Result) {
	if !res.Clean() || len(res.Notices) > 0 {
		b.Fatalf("drift in a clean root: %+v %+v", res.Drift, res.Notices)
	}
}

// timed runs f and returns the wall-clock and the process's CPU time it
// took.
func timed(f func()) (wall, cpu time.Duration) {
	var before, after syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &before)
	start := time.Now()
	f()
	wall = time.Since(start)
	syscall.Getrusage(syscall.RUSAGE_SELF, &after)
	used := func(r *syscall.Rusage) time.Duration {
		return time.Duration(r.Utime.Nano() + r.Stime.Nano())
	}
	return wall, used(&after) - used(&before)
}

func med(d []time.Duration) float64 {
	s := slices.Clone(d)
	slices.Sort(s)
	return float64(s[len(s)/2])
}

// BenchmarkLoadLabelsKept: what a cached check pays for labels before and
// after its pass, beside the label reads themselves: the kept defaults
// found in the state cache and given to the entries, then kept again
// (nothing to write when none was missing). Debian's policy; the entries
// need no files (the defaults are looked up by path). Allocations are what
// the collector of a 100,000-file check then has to scan.
//
// go test ./internal/check -run '^$' -bench LoadLabelsKept -benchmem
func BenchmarkLoadLabelsKept(b *testing.B) {
	const policy = "/etc/selinux/default"
	if _, err := os.Stat(policy); err != nil {
		b.Skip(err)
	}
	for _, n := range []int{10000, 100000} {
		b.Run(fmt.Sprintf("files=%d", n), func(b *testing.B) {
			root := b.TempDir()
			installPolicy(b, root, policy, "enforcing")
			entries := make([]model.Entry, n)
			for i := range entries {
				entries[i] = model.Entry{Kind: model.KindFile, Type: model.TypeRegular,
					Path: fmt.Sprintf("/srv/d%03d/f%05d.conf", i/100, i)}
			}
			r := newChecker(b, root).Root
			store := &statecache.Cache{Dir: b.TempDir()}
			check.LoadLabelsKept(r, entries, false, store).Keep() // the first check keeps them
			b.ReportAllocs()
			for b.Loop() {
				l := check.LoadLabelsKept(r, entries, false, store)
				l.Keep()
			}
		})
	}
}
