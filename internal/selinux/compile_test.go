package selinux

import "testing"

// TestEveryExpressionCompiles: what a load accepts (syntax.Parse), a
// lookup compiles without a panic (regexp.MustCompile, spec.matches): every
// expression of Debian's policy, compiled here at once rather than as
// lookups reach them.
func TestEveryExpressionCompiles(t *testing.T) {
	c := loadedDebianPolicy(t)
	n := 0
	for _, specs := range c.regexes {
		for _, s := range specs {
			s.matches("/")
			n++
		}
	}
	if n < 1000 {
		t.Errorf("%d expressions compiled; Debian's policy has thousands", n)
	}
}
