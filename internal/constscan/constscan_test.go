package constscan

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestStrings: string literals come with their type; numbers, iotas and
// untyped computed constants are not strings; a typed constant that is not
// a literal is an error, never left out.
func TestStrings(t *testing.T) {
	got, err := Strings("testdata", "*.go")
	if err != nil {
		t.Fatal(err)
	}
	want := []Const{{"A", "Kind", "a"}, {"B", "Kind", "b"}, {"Name", "", "name"}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("Strings (-want +got):\n%s", d)
	}
	if got, err := Strings("testdata", "*.go.txt"); err == nil {
		t.Errorf("a Kind computed by a conversion: %v, want an error", got)
	}
}
