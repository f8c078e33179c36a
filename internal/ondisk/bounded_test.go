package ondisk_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/drift-monitor/drift-monitor/internal/model"
	"github.com/drift-monitor/drift-monitor/internal/ondisk"
	"github.com/google/go-cmp/cmp"
)

// observer opens root and returns an observer there with the read limit.
func observer(t *testing.T, root string, limit int64) *ondisk.Observer {
	t.Helper()
	r, err := ondisk.OpenRoot(root)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	o := ondisk.NewObserver(r)
	o.ReadLimit = limit
	t.Cleanup(o.Close)
	return o
}

// sparse makes p a file of size bytes without writing them (a hole, as
// `truncate -s` makes), then writes tail at its end.
func (f *fixture) sparse(p string, size int64, tail []byte) {
	f.t.Helper()
	f.file(p, "", 0o644)
	if err := os.Truncate(f.path(p), size); err != nil {
		f.t.Fatal(err)
	}
	if len(tail) > 0 {
		fh, err := os.OpenFile(f.path(p), os.O_WRONLY, 0)
		if err != nil {
			f.t.Fatal(err)
		}
		defer fh.Close()
		if _, err := fh.WriteAt(tail, size-int64(len(tail))); err != nil {
			f.t.Fatal(err)
		}
	}
}

// observeTimed observes e with o, failing the test if it takes more than a
// bound far above what a stat and a few small reads cost (reading 2 GiB
// takes seconds, 74 GiB minutes).
func observeTimed(t *testing.T, o *ondisk.Observer, ctx context.Context, e *model.Entry) ondisk.Observation {
	t.Helper()
	done := make(chan ondisk.Observation, 1)
	go func() { done <- o.ObserveContext(ctx, e) }()
	select {
	case ob := <-done:
		return ob
	case <-time.After(20 * time.Second):
		t.Fatalf("Observe(%s) still reading after 20s", e.Path)
	}
	return ondisk.Observation{}
}

func stored(b []byte) *model.Stored {
	return &model.Stored{Size: int64(len(b)), Sum: sha256.Sum256(b)}
}

// TestObserveSizeDiffersReadsNothing: a file of exact content whose size is
// not the declared one differs, and when it is too large to be shown, no
// byte of it is read to say so: a sparse 74 GiB file costs a stat. The same
// holds for appended bytes that are not at the end of the file: the base
// before them is not hashed.
func TestObserveSizeDiffersReadsNothing(t *testing.T) {
	const gib = 1 << 30
	want := []byte("declared\n")
	suffix := []byte("appended\n")
	hash := &model.Hash{Algorithm: "sha256", Hex: sha256Hex([]byte("base\n"))}
	type result struct {
		State     ondisk.ContentState
		GotSize   int64
		Got       []byte
		GotDigest string
		Read      int64
	}
	tests := []struct {
		name    string
		size    int64
		content model.Content
		res     result
	}{
		{"exact, 2 GiB", 2 * gib, model.Content{Exact: want}, result{State: ondisk.Differs, GotSize: 2 * gib}},
		{"exact, 74 GiB", 74 * gib, model.Content{Exact: want}, result{State: ondisk.Differs, GotSize: 74 * gib}},
		{"stored, 74 GiB", 74 * gib, model.Content{Stored: stored(want)}, result{State: ondisk.Differs, GotSize: 74 * gib}},
		{"exact, one byte over DiffLimit", ondisk.DiffLimit + 1, model.Content{Exact: want},
			result{State: ondisk.Differs, GotSize: ondisk.DiffLimit + 1}},
		{"hash and suffix, 74 GiB of zeros: only the suffix is read", 74 * gib, model.Content{Hash: hash, Suffix: suffix},
			result{State: ondisk.Differs, GotSize: 74 * gib, Read: int64(len(suffix))}},
		{"suffix only, 74 GiB of zeros", 74 * gib, model.Content{Suffix: suffix},
			result{State: ondisk.Differs, GotSize: 74 * gib, Read: int64(len(suffix))}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			f.sparse("/etc/f", tt.size, nil)
			o := observer(t, f.root, 0) // no read limit: the size alone decides
			c := tt.content
			ob := observeTimed(t, o, context.Background(), &model.Entry{Path: "/etc/f", Type: model.TypeRegular, Content: &c})
			got := result{State: ob.Content.State, GotSize: ob.Content.GotSize, Got: ob.Content.Got, GotDigest: ob.Content.GotDigest, Read: o.BytesRead()}
			if diff := cmp.Diff(tt.res, got); diff != "" {
				t.Errorf("content (-want +got):\n%s", diff)
			}
		})
	}

	// A small file is read to be shown, and no further than DiffLimit.
	t.Run("small: read for a diff", func(t *testing.T) {
		f := newFixture(t)
		f.file("/etc/f", "other content\n", 0o644)
		o := observer(t, f.root, 0)
		ob := observeTimed(t, o, context.Background(), &model.Entry{Path: "/etc/f", Type: model.TypeRegular, Content: &model.Content{Exact: want}})
		got := result{State: ob.Content.State, GotSize: ob.Content.GotSize, Got: ob.Content.Got, GotDigest: ob.Content.GotDigest, Read: o.BytesRead()}
		disk := []byte("other content\n")
		if diff := cmp.Diff(result{State: ondisk.Differs, GotSize: 14, Got: disk, GotDigest: sha256Hex(disk), Read: 14}, got); diff != "" {
			t.Errorf("content (-want +got):\n%s", diff)
		}
	})
}

// TestObserveReadLimit: an observer with a ReadLimit leaves a comparison that
// would read more Deferred without reading a byte; an observer without one
// finishes it, on the same version of the file (Stamp).
func TestObserveReadLimit(t *testing.T) {
	const limit = 1 << 20
	big := bytes.Repeat([]byte("0123456789abcdef"), 2<<20/16) // 2 MiB
	other := bytes.Clone(big)
	other[len(other)/2] ^= 1
	small := big[:limit]
	suffix := []byte("appended\n")
	tests := []struct {
		name    string
		disk    []byte
		content model.Content
		limited ondisk.ContentState
		read    int64 // by the limited observer
		full    ondisk.ContentState
	}{
		{"exact, over the limit", big, model.Content{Exact: big}, ondisk.Deferred, 0, ondisk.Equal},
		{"exact, over the limit, differs", other, model.Content{Exact: big}, ondisk.Deferred, 0, ondisk.Differs},
		{"stored, over the limit", big, model.Content{Stored: stored(big)}, ondisk.Deferred, 0, ondisk.Equal},
		{"hash, over the limit", big, model.Content{Hash: &model.Hash{Algorithm: "sha512", Hex: sha512Hex(big)}}, ondisk.Deferred, 0, ondisk.Equal},
		{"hash and suffix: the suffix is read first", append(bytes.Clone(big), suffix...),
			model.Content{Hash: &model.Hash{Algorithm: "sha256", Hex: sha256Hex(big)}, Suffix: suffix}, ondisk.Deferred, int64(len(suffix)), ondisk.Equal},
		{"exact, at the limit: read", small, model.Content{Exact: small}, ondisk.Equal, limit, ondisk.Equal},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			f.fileBytes("/etc/f", tt.disk, 0o644)
			c := tt.content
			e := &model.Entry{Path: "/etc/f", Type: model.TypeRegular, Content: &c}
			lo := observer(t, f.root, limit)
			ob := observeTimed(t, lo, context.Background(), e)
			if ob.Content.State != tt.limited || lo.BytesRead() != tt.read {
				t.Errorf("with ReadLimit %d: content %v after reading %d bytes, want %v after %d", limit, ob.Content.State, lo.BytesRead(), tt.limited, tt.read)
			}
			fo := observer(t, f.root, 0)
			full := observeTimed(t, fo, context.Background(), e)
			if full.Content.State != tt.full {
				t.Errorf("without a limit: content %v, want %v", full.Content.State, tt.full)
			}
			if full.Stamp != ob.Stamp {
				t.Errorf("the same file has two stamps: %+v and %+v", ob.Stamp, full.Stamp)
			}
		})
	}
}

// TestObserveCanceled: a read stops when its context is done.
func TestObserveCanceled(t *testing.T) {
	f := newFixture(t)
	big := bytes.Repeat([]byte("x"), 4<<20)
	f.fileBytes("/etc/f", big, 0o644)
	o := observer(t, f.root, 0)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	ob := observeTimed(t, o, ctx, &model.Entry{Path: "/etc/f", Type: model.TypeRegular,
		Content: &model.Content{Hash: &model.Hash{Algorithm: "sha256", Hex: sha256Hex(big)}}})
	if ob.Content.State != ondisk.ReadFailed || !errors.Is(ob.Content.Err, context.Canceled) || o.BytesRead() != 0 {
		t.Errorf("content %v (%v) after %d bytes, want ReadFailed with context.Canceled after none", ob.Content.State, ob.Content.Err, o.BytesRead())
	}
}

// TestObserveGrowingFile: a file that a writer keeps appending to is never
// read further than a description needs, however fast it grows: each
// observation reads at most DiffLimit+1 bytes of it.
func TestObserveGrowingFile(t *testing.T) {
	f := newFixture(t)
	f.file("/etc/f", "", 0o644)
	fh, err := os.OpenFile(f.path("/etc/f"), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		chunk := bytes.Repeat([]byte("y\n"), 32<<10)
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := fh.Write(chunk); err != nil {
				return
			}
		}
	}()
	defer func() { close(stop); wg.Wait() }()
	o := observer(t, f.root, 0)
	e := &model.Entry{Path: "/etc/f", Type: model.TypeRegular, Content: &model.Content{Exact: []byte("x\n")}}
	for i := 0; i < 20; i++ {
		before := o.BytesRead()
		ob := observeTimed(t, o, context.Background(), e)
		if ob.Content.State != ondisk.Differs {
			t.Fatalf("observation %d: content %v, want differs", i, ob.Content.State)
		}
		if n := o.BytesRead() - before; n > ondisk.DiffLimit+1 {
			t.Fatalf("observation %d read %d bytes of a growing file, want at most DiffLimit+1", i, n)
		}
	}
}

// TestStamp: replacing a file or setting its modification time gives it
// another stamp.
func TestStamp(t *testing.T) {
	f := newFixture(t)
	f.file("/etc/f", "a\n", 0o644)
	o := observer(t, f.root, 0)
	e := &model.Entry{Path: "/etc/f", Type: model.TypeRegular}
	stamp := func() ondisk.Stamp { o.Forget(); return o.Observe(e).Stamp }
	s0 := stamp()
	if s1 := stamp(); s1 != s0 {
		t.Fatalf("an unchanged file has two stamps: %+v, %+v", s0, s1)
	}
	past := time.Unix(1e9, 0)
	if err := os.Chtimes(f.path("/etc/f"), past, past); err != nil {
		t.Fatal(err)
	}
	s1 := stamp()
	if s1 == s0 || s1.Mtime != past.UnixNano() {
		t.Errorf("after a new modification time: stamp %+v, was %+v", s1, s0)
	}
	f.file("/etc/g", "a\n", 0o644)
	if err := os.Rename(f.path("/etc/g"), f.path("/etc/f")); err != nil {
		t.Fatal(err)
	}
	if s2 := stamp(); s2.Ino == s1.Ino || s2 == s1 {
		t.Errorf("after a replacement: stamp %+v, was %+v", s2, s1)
	}
}
