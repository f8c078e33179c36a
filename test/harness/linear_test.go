package harness

import (
	"fmt"
	"strings"
	"testing"
)

// failures records what Linear reports.
type failures struct {
	testing.TB
	errs []string
}

func (f *failures) Helper()             {}
func (f *failures) Logf(string, ...any) {}
func (f *failures) Errorf(s string, a ...any) {
	f.errs = append(f.errs, fmt.Sprintf(s, a...))
}

var sink []byte

// TestLinear: Linear lets linear work pass and catches work whose
// allocation or CPU time grows with the square of its input.
func TestLinear(t *testing.T) {
	linear := func(scale int) {
		b := make([]byte, 0, 1<<10)
		for i := 0; i < 200_000*scale; i++ {
			b = append(b[:0], byte(i))
		}
		sink = make([]byte, 64<<10*scale)
	}
	squareCPU := func(scale int) {
		n, x := 1500*scale, 0
		for i := 0; i < n; i++ {
			for j := 0; j < n; j++ {
				x += i ^ j
			}
		}
		sink = make([]byte, 64<<10*scale+x&1)
	}
	squareBytes := func(scale int) {
		for i := 0; i < 20*scale; i++ {
			sink = make([]byte, 4<<10*scale)
		}
	}
	for _, tc := range []struct {
		name string
		work func(int)
		want string
	}{
		{"linear", linear, ""},
		{"square CPU", squareCPU, "CPU time grows"},
		{"square bytes", squareBytes, "allocation grows"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &failures{TB: t}
			Linear(f, tc.name, tc.work)
			got := strings.Join(f.errs, "\n")
			if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
				t.Errorf("Linear on %s work reported %q, want %q", tc.name, got, tc.want)
			}
		})
	}
}
