package ondisk_test

import (
	"bytes"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/drift-monitor/drift-monitor/internal/model"
	"github.com/drift-monitor/drift-monitor/internal/ondisk"
)

// benchRoot writes one file of content at /etc/bench/f inside a new root
// and returns an observer there.
func benchRoot(b *testing.B, content []byte) *ondisk.Observer {
	b.Helper()
	root := b.TempDir()
	dir := filepath.Join(root, "etc/bench")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "f"), content, 0o644); err != nil {
		b.Fatal(err)
	}
	r, err := ondisk.OpenRoot(root)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { r.Close() })
	o := ondisk.NewObserver(r)
	b.Cleanup(o.Close)
	return o
}

func benchBytes(n int) []byte {
	b := make([]byte, n)
	rand.NewChaCha8([32]byte{7}).Read(b)
	return b
}

// BenchmarkObserve: one observation of a declared regular file, clean (the
// content is read and found equal) or drifted (read again to describe it).
// Throughput (MB/s) is of the file's bytes; the parent directory stays open
// between observations, as during a full check.
func BenchmarkObserve(b *testing.B) {
	mode := uint32(0o644)
	for _, size := range []int{512, 8 << 10, 1 << 20} {
		data := benchBytes(size)
		b.Run(fmt.Sprintf("exact/size=%d", size), func(b *testing.B) {
			o := benchRoot(b, data)
			e := &model.Entry{Kind: model.KindFile, Path: "/etc/bench/f", Type: model.TypeRegular, Mode: &mode,
				Content: &model.Content{Exact: data}}
			b.SetBytes(int64(size))
			b.ReportAllocs()
			for b.Loop() {
				if ob := o.Observe(e); ob.Content.State != ondisk.Equal {
					b.Fatalf("content %v, want equal", ob.Content.State)
				}
			}
		})
		b.Run(fmt.Sprintf("differs/size=%d", size), func(b *testing.B) {
			o := benchRoot(b, data)
			want := bytes.Clone(data)
			want[0] ^= 0xff
			e := &model.Entry{Kind: model.KindFile, Path: "/etc/bench/f", Type: model.TypeRegular, Mode: &mode,
				Content: &model.Content{Exact: want}}
			b.SetBytes(int64(size))
			b.ReportAllocs()
			for b.Loop() {
				if ob := o.Observe(e); ob.Content.State != ondisk.Differs {
					b.Fatalf("content %v, want differs", ob.Content.State)
				}
			}
		})
	}
	// A remote source with a verification hash: the whole file is hashed.
	data := benchBytes(64 << 20)
	s256, s512 := sha256.Sum256(data), sha512.Sum512(data)
	for _, h := range []model.Hash{{Algorithm: "sha256", Hex: hex.EncodeToString(s256[:])}, {Algorithm: "sha512", Hex: hex.EncodeToString(s512[:])}} {
		b.Run(fmt.Sprintf("%s/size=%d", h.Algorithm, len(data)), func(b *testing.B) {
			o := benchRoot(b, data)
			e := &model.Entry{Kind: model.KindFile, Path: "/etc/bench/f", Type: model.TypeRegular, Mode: &mode,
				Content: &model.Content{Hash: &h}}
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				if ob := o.Observe(e); ob.Content.State != ondisk.Equal {
					b.Fatalf("content %v, want equal", ob.Content.State)
				}
			}
		})
	}
}

// BenchmarkObserveFresh: the daemon's per-event observation: the parent
// directory is resolved again (openat2 RESOLVE_IN_ROOT) every time.
func BenchmarkObserveFresh(b *testing.B) {
	mode := uint32(0o644)
	data := benchBytes(512)
	o := benchRoot(b, data)
	e := &model.Entry{Kind: model.KindFile, Path: "/etc/bench/f", Type: model.TypeRegular, Mode: &mode,
		Content: &model.Content{Exact: data}}
	b.ReportAllocs()
	for b.Loop() {
		o.Forget()
		if ob := o.Observe(e); ob.Content.State != ondisk.Equal {
			b.Fatalf("content %v, want equal", ob.Content.State)
		}
	}
}
