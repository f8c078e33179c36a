package desired_test

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"testing"
	"time"

	"github.com/drift-monitor/drift-monitor/internal/desired"
)

// liveHeap follows the live heap after every collection (a cleanup on an
// object nothing references runs once a cycle found it unreachable, and
// registers the next), keeping its largest.
type liveHeap struct {
	mu      sync.Mutex
	max     uint64
	stopped bool
	last    chan struct{} // closed by the cleanup after stop
}

func followLiveHeap() *liveHeap {
	h := &liveHeap{last: make(chan struct{})}
	h.arm()
	return h
}

func (h *liveHeap) arm() {
	runtime.AddCleanup(new([16]byte), func(h *liveHeap) {
		s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
		metrics.Read(s)
		h.mu.Lock()
		defer h.mu.Unlock()
		h.max = max(h.max, s[0].Value.Uint64())
		if h.stopped {
			close(h.last)
			return
		}
		h.arm()
	}, h)
}

// stop collects until the cleanup has seen a collection after the call,
// and returns the largest live heap seen.
func (h *liveHeap) stop(t *testing.T) uint64 {
	h.mu.Lock()
	h.stopped = true
	h.mu.Unlock()
	deadline := time.After(20 * time.Second)
	for {
		runtime.GC()
		select {
		case <-h.last:
			h.mu.Lock()
			defer h.mu.Unlock()
			return h.max
		case <-deadline:
			t.Fatal("no collection seen 20 s after the load")
		case <-time.After(10 * time.Millisecond): // the cleanup runs on its own goroutine
		}
	}
}

// TestLoadPeakHeap: loading a config that is mostly its files' data URLs,
// from the default location inside a root, never holds much more than the
// config once: not its bytes read twice (a read whole into growing
// buffers), nor its bytes beside the strings decoded from them (the
// daemon's cold start peaked at both, docs/benchmarks.md). Measured as the
// live heap after every collection, with collections made frequent. The
// same of the config as a MachineConfig's spec.config, in JSON.
func TestLoadPeakHeap(t *testing.T) {
	for _, form := range []struct{ name, file, head, tail string }{
		{"ignition", "50-peak.ign", "", "\n"},
		{"machineconfig", "50-peak.json", `{"apiVersion":"machineconfiguration.openshift.io/v1","kind":"MachineConfig",` +
			`"metadata":{"name":"50-peak"},"spec":{"config":`, "}}\n"},
	} {
		t.Run(form.name, func(t *testing.T) { loadPeakHeap(t, form.file, form.head, form.tail) })
	}
}

func loadPeakHeap(t *testing.T, name, head, tail string) {
	dir := t.TempDir()
	cfgDir := filepath.Join(dir, "etc/drift-monitor/desired.d")
	if err := os.MkdirAll(cfgDir, 0o755); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	b.WriteString(head + `{"ignition":{"version":"3.4.0"},"storage":{"files":[`)
	for i := 0; i < 1000; i++ {
		c := bytes.Repeat([]byte{byte('a' + i%26)}, 8<<10)
		copy(c, fmt.Sprintf("file %d\n", i))
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "\n"+`{"path":"/etc/peak/f%04d.conf","mode":420,"contents":{"source":"data:;base64,%s"}}`,
			i, base64.StdEncoding.EncodeToString(c))
	}
	b.WriteString("\n]}}" + tail)
	size := b.Len()
	if err := os.WriteFile(filepath.Join(cfgDir, name), b.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	b = bytes.Buffer{}
	root := openRoot(t, dir)

	defer debug.SetGCPercent(debug.SetGCPercent(10))
	runtime.GC()
	runtime.GC()
	base := followLiveHeap()
	before := base.stop(t)
	h := followLiveHeap()
	st, err := desired.LoadState(root, nil)
	peak := h.stop(t)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Entries) != 1000 {
		t.Fatalf("%d entries, want 1000", len(st.Entries))
	}
	grew := float64(peak) - float64(before)
	// Its bytes and the strings decoded from them are twice the config; the
	// strings alone are a little more than once (a size class above it).
	if ratio := grew / float64(size); ratio > 1.75 {
		t.Errorf("the live heap grew by %.1f MiB during the load of a %.1f MiB config: %.2f× the config, want at most 1.75×",
			grew/(1<<20), float64(size)/(1<<20), ratio)
	}
	t.Logf("the live heap grew by %.2f× the config (%.1f MiB)", grew/float64(size), float64(size)/(1<<20))
	runtime.KeepAlive(st)
}
