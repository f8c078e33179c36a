package desired_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	types "github.com/drift-monitor/drift-monitor/internal/ignspec"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/drift-monitor/drift-monitor/internal/desired"
	"github.com/drift-monitor/drift-monitor/internal/memlimit"
	"github.com/drift-monitor/drift-monitor/internal/model"
	"github.com/drift-monitor/drift-monitor/internal/ondisk"
	"github.com/drift-monitor/drift-monitor/internal/statecache"
)

// openRoot opens dir as the root a load reads, closed at the test's end.
func openRoot(tb testing.TB, dir string) *ondisk.Root {
	tb.Helper()
	r, err := ondisk.OpenRoot(dir)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { r.Close() })
	return r
}

// benchConfig writes an Ignition config of spec version declaring n files with
// data URLs, 90% of 512 bytes and 10% of 8 KiB, as the benchmark fixtures
// (bench/) do; the content is only in the config, never on disk.
func benchConfig(b *testing.B, version string, n int) string {
	b.Helper()
	f := filepath.Join(b.TempDir(), "config.ign")
	out, err := os.Create(f)
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriter(out)
	w.WriteString(`{"ignition":{"version":"` + version + `"},"storage":{"files":[`)
	for i := 0; i < n; i++ {
		size := 512
		if i%10 == 9 {
			size = 8 << 10
		}
		c := bytes.Repeat([]byte{byte('a' + i%26)}, size)
		copy(c, fmt.Sprintf("file %d\n", i))
		if i > 0 {
			w.WriteByte(',')
		}
		fmt.Fprintf(w, "\n"+`{"path":"/etc/bench/d%04d/f%06d.conf","mode":420,"contents":{"source":"data:;base64,%s"}}`,
			i/100, i, base64.StdEncoding.EncodeToString(c))
	}
	w.WriteString("\n]}}\n")
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	if err := out.Close(); err != nil {
		b.Fatal(err)
	}
	return f
}

// heapPeak samples the heap's live objects while running, for a peak that
// MemStats (a total and a current value) cannot give.
type heapPeak struct {
	stop chan struct{}
	wg   sync.WaitGroup
	peak uint64
}

const heapObjects = "/memory/classes/heap/objects:bytes"

func startHeapPeak() *heapPeak {
	h := &heapPeak{stop: make(chan struct{})}
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		s := []metrics.Sample{{Name: heapObjects}}
		t := time.NewTicker(200 * time.Microsecond)
		defer t.Stop()
		for {
			metrics.Read(s)
			h.peak = max(h.peak, s[0].Value.Uint64())
			select {
			case <-h.stop:
				return
			case <-t.C:
			}
		}
	}()
	return h
}

func (h *heapPeak) end() uint64 {
	close(h.stop)
	h.wg.Wait()
	return h.peak
}

// cpuTime is the process's user + system time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkLoadState: reading, parsing, validating and deriving a desired
// state of n declared files: what the daemon does at start and on every
// reload, and `drift-monitor check` on every run. It reports the peak heap
// during a load (sampled), the heap the loaded state keeps alive, and the
// CPU time per load (all threads, the GC's included: steadier than sec/op
// on a shared machine).
func BenchmarkLoadState(b *testing.B) {
	for _, n := range []int{1000, 10000, 100000} {
		b.Run(fmt.Sprintf("files=%d", n), func(b *testing.B) {
			if n > 10000 && testing.Short() {
				b.Skip("100,000 files take tens of seconds per load; not in -short")
			}
			benchLoad(b, benchConfig(b, types.MaxVersion.String(), n), n)
		})
	}
}

// BenchmarkLoadStateSpec: BenchmarkLoadState of the same 10,000 files
// declared in each stable spec.
func BenchmarkLoadStateSpec(b *testing.B) {
	for _, v := range benchSpecs {
		b.Run("spec="+v, func(b *testing.B) {
			benchLoad(b, benchConfig(b, v, 10000), 10000)
		})
	}
}

func benchLoad(b *testing.B, cfg string, n int) {
	root := openRoot(b, b.TempDir())
	b.ReportAllocs()
	var peak, live uint64
	var cpu time.Duration
	for b.Loop() {
		runtime.GC()
		h := startHeapPeak()
		c0 := cpuTime()
		st, err := desired.LoadCached(nil, root, []string{cfg}, memlimit.ConfigLoad)
		cpu += cpuTime() - c0
		peak = max(peak, h.end())
		if err != nil {
			b.Fatal(err)
		}
		if len(st.Entries) != n {
			b.Fatalf("%d entries, want %d", len(st.Entries), n)
		}
		runtime.GC()
		s := []metrics.Sample{{Name: heapObjects}}
		metrics.Read(s)
		live = s[0].Value.Uint64()
		runtime.KeepAlive(st)
	}
	b.ReportMetric(float64(peak), "peak-heap-B")
	b.ReportMetric(float64(live), "live-heap-B")
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
}

// BenchmarkLoadStateCached: the same load when the state derived from these
// exact bytes is in the cache (a check after the daemon or an earlier check
// loaded the same config): hashing the inputs and reading the entry, in each
// of the cache's ways: read into memory, mapped (`check`), lazy (the daemon,
// which keeps only each content's size and digest).
func BenchmarkLoadStateCached(b *testing.B) {
	modes := map[string]statecache.Mode{"read": statecache.ModeRead, "map": statecache.ModeMap, "lazy": statecache.ModeLazy}
	for _, n := range []int{1000, 10000, 100000} {
		for _, mode := range []string{"read", "map", "lazy"} {
			b.Run(fmt.Sprintf("files=%d/%s", n, mode), func(b *testing.B) {
				if n > 10000 && testing.Short() {
					b.Skip("the cold load of 100,000 files takes tens of seconds; not in -short")
				}
				cfg := benchConfig(b, types.MaxVersion.String(), n)
				root := openRoot(b, b.TempDir())
				c := &statecache.Cache{Dir: filepath.Join(b.TempDir(), "cache"), Mode: modes[mode]}
				if _, err := desired.LoadCached(c, root, []string{cfg}, memlimit.ConfigLoad); err != nil {
					b.Fatal(err)
				}
				b.ReportAllocs()
				var cpu time.Duration
				for b.Loop() {
					c0 := cpuTime()
					st, err := desired.LoadCached(c, root, []string{cfg}, memlimit.ConfigLoad)
					cpu += cpuTime() - c0
					if err != nil {
						b.Fatal(err)
					}
					if len(st.Entries) != n {
						b.Fatalf("%d entries, want %d", len(st.Entries), n)
					}
				}
				b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
			})
		}
	}
}

var benchSpecs = types.Versions()

// BenchmarkLoadRefused: a config refused (n copies of one file entry:
// "duplicate entry defined" n-1 times) beside a valid config of the same
// shape and size (n distinct files), in every stable spec (an older spec's
// refusal is validated with its own spec's rules, then the newest's).
// Refusing must cost no more than loading: a daemon given the bad config
// keeps its last good state, and the time spent refusing is time it is not
// checking. Each iteration loads both, one after the other, so that the
// ratios (refused/valid-*: CPU time, allocations, bytes allocated) compare
// loads that saw the same machine; the target is every ratio at most 1.
func BenchmarkLoadRefused(b *testing.B) {
	for _, n := range []int{10000, 50000} {
		for _, v := range benchSpecs {
			b.Run(fmt.Sprintf("files=%d/spec=%s", n, v), func(b *testing.B) {
				valid, refused := shapeConfig(b, v, n, false), shapeConfig(b, v, n, true)
				root := openRoot(b, b.TempDir())
				var cost [2]loadCost
				for b.Loop() {
					cost[0].add(b, root, valid, n, false)
					cost[1].add(b, root, refused, n, true)
				}
				for i, name := range []string{"valid", "refused"} {
					b.ReportMetric(float64(cost[i].cpu.Nanoseconds())/float64(b.N), name+"-cpu-ns/op")
					b.ReportMetric(float64(cost[i].peak), name+"-peak-heap-B")
				}
				b.ReportMetric(float64(cost[1].cpu)/float64(cost[0].cpu), "refused/valid-cpu")
				b.ReportMetric(float64(cost[1].allocs)/float64(cost[0].allocs), "refused/valid-allocs")
				b.ReportMetric(float64(cost[1].bytes)/float64(cost[0].bytes), "refused/valid-B")
			})
		}
	}
}

// loadCost sums what loads cost: CPU time (all threads, the GC's
// included) and the heap's allocations, objects and bytes; and keeps the
// highest peak of the heap's live objects (sampled).
type loadCost struct {
	cpu                 time.Duration
	allocs, bytes, peak uint64
}

var allocSamples = []string{"/gc/heap/allocs:objects", "/gc/heap/allocs:bytes"}

func heapAllocs() (objects, bytes uint64) {
	s := []metrics.Sample{{Name: allocSamples[0]}, {Name: allocSamples[1]}}
	metrics.Read(s)
	return s[0].Value.Uint64(), s[1].Value.Uint64()
}

var kind = map[bool]string{false: "valid", true: "refused"}

// add loads cfg, which must be refused when refused, and adds its cost.
func (c *loadCost) add(b *testing.B, root *ondisk.Root, cfg string, n int, refused bool) {
	runtime.GC()
	h := startHeapPeak()
	o0, b0 := heapAllocs()
	c0 := cpuTime()
	var st model.State
	var err error
	// Labelled for a profile: pprof's -tagfocus config=refused.
	pprof.Do(context.Background(), pprof.Labels("config", kind[refused]), func(context.Context) {
		st, err = desired.LoadCached(nil, root, []string{cfg}, memlimit.ConfigLoad)
	})
	c.cpu += cpuTime() - c0
	o1, b1 := heapAllocs()
	c.peak = max(c.peak, h.end())
	c.allocs, c.bytes = c.allocs+o1-o0, c.bytes+b1-b0
	switch {
	case refused && err == nil:
		b.Fatal("a config of duplicate entries was loaded")
	case !refused && err != nil:
		b.Fatal(err)
	case !refused && len(st.Entries) != n:
		b.Fatalf("%d entries, want %d", len(st.Entries), n)
	}
}

// shapeConfig writes a config of n small file entries, all of one path when
// duplicate.
func shapeConfig(b *testing.B, version string, n int, duplicate bool) string {
	b.Helper()
	var buf bytes.Buffer
	buf.WriteString(`{"ignition":{"version":"` + version + `"},"storage":{"files":[`)
	for i := range n {
		if i > 0 {
			buf.WriteByte(',')
		}
		p := i
		if duplicate {
			p = 0
		}
		fmt.Fprintf(&buf, `{"path":"/etc/shape/f%06d.conf","mode":420,"contents":{"source":"data:,x"}}`, p)
	}
	buf.WriteString("]}}\n")
	f := filepath.Join(b.TempDir(), "config.ign")
	if err := os.WriteFile(f, buf.Bytes(), 0o644); err != nil {
		b.Fatal(err)
	}
	return f
}
