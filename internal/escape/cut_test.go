package escape

import "testing"

func TestCut(t *testing.T) {
	for _, c := range []struct {
		name string
		s    string
		max  int
		want string
	}{
		{"fits", "abc", 3, "abc"},
		{"cut", "abcdef", 5, "ab…"},
		{"at a character boundary", "aéééé", 7, "aé…"},
		{"no room but the ellipsis", "abcdef", 3, "…"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := Cut(c.s, c.max); got != c.want {
				t.Errorf("Cut(%q, %d) = %q, want %q", c.s, c.max, got, c.want)
			}
		})
	}
}
