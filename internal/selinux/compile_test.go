package selinux

import (
	"os"
	"testing"

	"github.com/drift-monitor/drift-monitor/test/harness"
)

// TestEveryExpressionCompiles: what a load accepts (syntax.Parse), a
// lookup compiles without a panic (regexp.MustCompile, spec.matches): every
// expression of Debian's policy, compiled here at once rather than as
// lookups reach them.
func TestEveryExpressionCompiles(t *testing.T) {
	const contexts = "/etc/selinux/default/contexts/files/file_contexts"
	if _, err := os.Stat(contexts); err != nil {
		harness.Unavailable(t, "Debian's policy (selinux-policy-default): %v", err)
	}
	c, err := Load(os.ReadFile, contexts)
	if err != nil {
		t.Fatal(err)
	}
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
