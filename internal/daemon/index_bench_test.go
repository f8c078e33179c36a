package daemon

import (
	"fmt"
	"testing"

	"github.com/drift-monitor/drift-monitor/internal/model"
)

// benchEntries declares n files, 100 per directory, as the benchmark
// fixtures do (bench/).
func benchEntries(n int) []model.Entry {
	mode := uint32(0o644)
	es := make([]model.Entry, n)
	for i := range es {
		es[i] = model.Entry{Kind: model.KindFile, Type: model.TypeRegular, Mode: &mode,
			Path: fmt.Sprintf("/etc/bench/d%04d/f%06d.conf", i/100, i)}
	}
	return es
}

// BenchmarkIndexAffected: mapping an event to the entries it can affect —
// a file's event (one entry) and its directory's (the 100 in it). Its cost
// must not grow with the number of declared paths.
func BenchmarkIndexAffected(b *testing.B) {
	for _, n := range []int{100, 10000, 100000} {
		ix := newIndex(benchEntries(n))
		file := ix.entries[n/2].Path
		dir := fmt.Sprintf("/etc/bench/d%04d", (n/2)/100)
		b.Run(fmt.Sprintf("file/entries=%d", n), func(b *testing.B) {
			for b.Loop() {
				hits := 0
				ix.affected(file, false, func(int) { hits++ })
				if hits != 1 {
					b.Fatalf("%d entries affected, want 1", hits)
				}
			}
		})
		b.Run(fmt.Sprintf("dir/entries=%d", n), func(b *testing.B) {
			for b.Loop() {
				hits := 0
				ix.affected(dir, true, func(int) { hits++ })
				if hits != min(n, 100) {
					b.Fatalf("%d entries affected, want %d", hits, min(n, 100))
				}
			}
		})
	}
}

// BenchmarkNewIndex: indexing the desired state, on every load and reload.
func BenchmarkNewIndex(b *testing.B) {
	for _, n := range []int{10000, 100000} {
		es := benchEntries(n)
		b.Run(fmt.Sprintf("entries=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				newIndex(append([]model.Entry(nil), es...))
			}
		})
	}
}
