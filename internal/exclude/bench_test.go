package exclude

import (
	"fmt"
	"testing"
)

// BenchmarkLeavesAtTheLimits: what a load pays for the exclusions at the
// most an exclusion file may hold (MaxWildcards globs, all in one directory,
// and as many plain paths as fit in MaxFileSize), for 10,000 declared paths
// in that directory: the worst a file can make of a load.
func BenchmarkLeavesAtTheLimits(b *testing.B) {
	var ps []Pattern
	for i := range MaxWildcards {
		p, err := ParsePattern(fmt.Sprintf("/etc/x%d*", i), "f")
		if err != nil {
			b.Fatal(err)
		}
		ps = append(ps, p)
	}
	for i := range MaxFileSize / 16 {
		ps = append(ps, Pattern{Glob: fmt.Sprintf("/etc/lit%d", i), From: "f"})
	}
	r := New(ps...)
	paths := make([]string, 10000)
	for i := range paths {
		paths[i] = fmt.Sprintf("/etc/dir%d/file%d.conf", i%50, i)
	}
	b.ResetTimer()
	for range b.N {
		for _, p := range paths {
			if _, ok := r.Leaves(p); ok {
				b.Fatalf("%s left alone", p)
			}
		}
	}
}
