package dbusapi

import (
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// pages is a daemon's drift as GetDrift serves it: gens[i] is the
// generation the i-th call sees, size the page size.
type pages struct {
	drift []Drift
	size  int
	gens  []uint64
	calls int
}

func (p *pages) get(offset uint32) (uint64, uint32, []Drift, error) {
	gen := p.gens[min(p.calls, len(p.gens)-1)]
	p.calls++
	end := min(int(offset)+p.size, len(p.drift))
	return gen, uint32(len(p.drift)), p.drift[min(int(offset), end):end], nil
}

func TestPageDrift(t *testing.T) {
	var ds []Drift
	for i := range 2500 {
		ds = append(ds, Drift{Kind: "missing", Path: fmt.Sprintf("/f%04d", i)})
	}
	for _, c := range []struct {
		name      string
		p         pages
		wantCalls int
		wantErr   error
	}{
		{"one generation", pages{drift: ds, size: 1000, gens: []uint64{5}}, 3, nil},
		{"changed on the second page: starts over", pages{drift: ds, size: 1000, gens: []uint64{5, 6, 6, 6, 6}}, 5, nil},
		{"always changing", pages{drift: ds, size: 1000, gens: []uint64{1, 2, 3, 4, 5, 6, 7}}, 6, errDriftChanging},
		{"an empty page ends it", pages{drift: nil, size: 1000, gens: []uint64{1}}, 1, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := pageDrift(c.p.get)
			if !errors.Is(err, c.wantErr) {
				t.Fatalf("error %v, want %v", err, c.wantErr)
			}
			if c.p.calls != c.wantCalls {
				t.Errorf("%d calls, want %d", c.p.calls, c.wantCalls)
			}
			if err == nil {
				if diff := cmp.Diff(c.p.drift, got); diff != "" {
					t.Errorf("drift (-want +got):\n%.1000s", diff)
				}
			}
		})
	}
}
