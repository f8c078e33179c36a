package desired

import (
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/drift-monitor/drift-monitor/internal/model"
)

// boundLog is a Bound that records what a load asks of it.
type boundLog struct {
	sizes  []int64 // the size of each bound asked for
	lifted int     // the bounds lifted
}

func (b *boundLog) bound(size int64) func() {
	b.sizes = append(b.sizes, size)
	return func() { b.lifted++ }
}

// TestLoadBound: the caller's Bound is asked for once per parse, with the
// size of the config files parsed (the .child supplies among them), and
// lifted before the load returns, whether the configs load or are
// refused; a state the cache serves asks for none; LoadInRoot hands its
// bound on too. The loader sets no memory limit of its own: it has no
// other way to (cmd/drift-monitor's TestLoaderSetsNoProcessSetting).
func TestLoadBound(t *testing.T) {
	const (
		cfg   = `{"ignition":{"version":"3.4.0"},"storage":{"files":[{"path":"/etc/a","mode":420,"contents":{"source":"data:,a"}}]}}`
		child = `{"ignition":{"version":"3.4.0"}}`
	)
	root := t.TempDir()
	dir := filepath.Join(root, model.AdminDir)
	writeFile(t, filepath.Join(dir, "10-a.ign"), cfg)
	writeFile(t, filepath.Join(dir, "20-b.child"), child)
	size := int64(len(cfg) + len(child))
	check := func(t *testing.T, b *boundLog, want []int64) {
		t.Helper()
		if diff := cmp.Diff(want, b.sizes); diff != "" {
			t.Errorf("bounds asked for (-want +got):\n%s", diff)
		}
		if b.lifted != len(b.sizes) {
			t.Errorf("%d bounds lifted of %d", b.lifted, len(b.sizes))
		}
	}

	t.Run("parsed, then served by the cache", func(t *testing.T) {
		var b boundLog
		m := &memCache{}
		if _, err := LoadCached(m, dirHost(root), nil, b.bound); err != nil {
			t.Fatal(err)
		}
		check(t, &b, []int64{size})
		if _, err := LoadCached(m, dirHost(root), nil, b.bound); err != nil || m.hits != 1 {
			t.Fatalf("second load: %v, %d hits; want a hit", err, m.hits)
		}
		check(t, &b, []int64{size})
	})
	t.Run("refused", func(t *testing.T) {
		bad := t.TempDir()
		const raw = `{"ignition":{"version":"3.4.0"},"storage":{"files":[{"path":"etc/relative"}]}}`
		writeFile(t, filepath.Join(bad, model.AdminDir, "10-bad.ign"), raw)
		var b boundLog
		if _, err := LoadCached(nil, dirHost(bad), nil, b.bound); err == nil {
			t.Fatal("a relative path loaded")
		}
		check(t, &b, []int64{int64(len(raw))})
	})
	t.Run("in root", func(t *testing.T) {
		var b boundLog
		if _, err := LoadInRoot(dirHost(root), []string{model.AdminDir + "/10-a.ign"}, b.bound); err != nil {
			t.Fatal(err)
		}
		check(t, &b, []int64{int64(len(cfg))})
	})
}
