package check_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"

	"github.com/drift-monitor/drift-monitor/internal/check"
	"github.com/drift-monitor/drift-monitor/internal/drift"
	"github.com/drift-monitor/drift-monitor/internal/model"
	"github.com/google/go-cmp/cmp"
)

// kinds lists the kinds of drift, per path.
func kinds(ds []drift.Drift) map[string][]drift.Kind {
	out := map[string][]drift.Kind{}
	for _, d := range ds {
		out[d.Path] = append(out[d.Path], d.Kind)
	}
	return out
}

// TestDeferredContent: with a ReadLimit, a full check leaves the content of
// a larger file uncompared, says so, and still reports everything else about
// it; ReadContent finishes the comparison, and Outcome takes it only for the
// version of the file it read.
func TestDeferredContent(t *testing.T) {
	const limit = 64 << 10
	root := t.TempDir()
	big := bytes.Repeat([]byte("big\n"), 2*limit/4)
	sum := sha256.Sum256(big)
	write := func(p string, b []byte, mode os.FileMode) {
		t.Helper()
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, b, mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(full, mode); err != nil {
			t.Fatal(err)
		}
	}
	entry := func(p string, c model.Content) model.Entry {
		return model.Entry{Kind: model.KindFile, Path: p, Type: model.TypeRegular,
			Mode: ptr[uint32](0o644), UID: ptr(os.Getuid()), GID: ptr(os.Getgid()), Content: &c}
	}
	other := bytes.Clone(big)
	other[0] = 'B'
	write("/etc/big-exact", other, 0o600) // differs in content (deferred) and mode (not)
	write("/etc/big-hash", big, 0o644)
	write("/etc/small", []byte("smal\n"), 0o644)
	entries := []model.Entry{
		entry("/etc/big-exact", model.Content{Exact: big}),
		entry("/etc/big-hash", model.Content{Hash: &model.Hash{Algorithm: "sha256", Hex: hex.EncodeToString(sum[:])}}),
		entry("/etc/small", model.Content{Exact: []byte("small\n")}), // another size: never deferred
	}
	c := newChecker(t, root)
	c.ReadLimit = limit
	res := c.All(context.Background(), entries)
	if diff := cmp.Diff(map[string][]drift.Kind{"/etc/big-exact": {drift.Mode}, "/etc/small": {drift.Content}}, kinds(res.Drift)); diff != "" {
		t.Errorf("drift of the limited full check (-want +got):\n%s", diff)
	}
	var deferred []int
	for _, d := range res.Deferred {
		deferred = append(deferred, d.Index)
	}
	if diff := cmp.Diff([]int{0, 1}, deferred); diff != "" {
		t.Fatalf("deferred entries (-want +got):\n%s", diff)
	}
	// A content not compared is not judged: the result is not clean,
	// whatever else was found.
	if (&check.Result{Deferred: res.Deferred}).Clean() {
		t.Errorf("a result with deferred contents and no drift is clean")
	}

	o := c.Observer()
	defer o.Close()
	worker := c.Observer() // its limit is ignored by ReadContent
	defer worker.Close()
	for i, want := range [][]drift.Kind{{drift.Mode, drift.Content}, nil} {
		e := &entries[i]
		read := c.ReadContent(context.Background(), worker, e)
		if read == nil || read.Stamp != res.Deferred[i].Stamp {
			t.Fatalf("%s: ReadContent = %+v, want a read of the version the full check saw", e.Path, read)
		}
		out := c.Outcome(o, e, read)
		if got := kinds(out.Drift)[e.Path]; out.Deferred || !cmp.Equal(want, got) {
			t.Errorf("%s: Outcome with the read: deferred %v, drift %v; want %v", e.Path, out.Deferred, got, want)
		}
	}

	// The file changed after it was read: the read says nothing of it.
	e := &entries[1]
	read := c.ReadContent(context.Background(), worker, e)
	write("/etc/big-hash.new", other, 0o644)
	if err := os.Rename(filepath.Join(root, "/etc/big-hash.new"), filepath.Join(root, e.Path)); err != nil {
		t.Fatal(err)
	}
	out := c.Outcome(o, e, read)
	if !out.Deferred || out.Stamp == read.Stamp || len(out.Drift) != 0 {
		t.Errorf("Outcome with a read of a replaced file = %+v, want deferred again with the new stamp", out)
	}

	// A canceled read compares nothing.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if read := c.ReadContent(ctx, worker, e); read != nil {
		t.Errorf("ReadContent with a canceled context = %+v, want nil", read)
	}

	// Without a limit, as `drift-monitor check` runs, nothing is deferred.
	c.ReadLimit = 0
	res = c.All(context.Background(), entries)
	if len(res.Deferred) != 0 {
		t.Errorf("deferred without a ReadLimit: %+v", res.Deferred)
	}
	if got := kinds(res.Drift); !cmp.Equal([]drift.Kind{drift.Content}, got["/etc/big-hash"]) {
		t.Errorf("drift without a limit: %v, want content drift of the replaced /etc/big-hash", got)
	}
}
