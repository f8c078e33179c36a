package journal

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/drift-monitor/drift-monitor/internal/constscan"
)

func documented() []string {
	var names []string
	for _, f := range Fields {
		names = append(names, f.Names...)
	}
	return names
}

// TestFieldsDocumented: every Field constant is in Fields once, so that a
// field added to the records cannot be left out of the man page that
// tools/gencatalog writes from Fields, and Fields names no other.
func TestFieldsDocumented(t *testing.T) {
	consts, err := constscan.Strings(".", "fields.go")
	if err != nil {
		t.Fatal(err)
	}
	var declared []string
	for _, c := range consts {
		if strings.HasPrefix(c.Name, "Field") {
			declared = append(declared, c.Value)
		}
	}
	if len(declared) < 18 {
		t.Fatalf("found %d Field constants in fields.go; the scan is broken", len(declared))
	}
	names := documented()
	for _, d := range declared {
		if n := strings.Count(","+strings.Join(names, ",")+",", ","+d+","); n != 1 {
			t.Errorf("field %s is in Fields %d times, want once", d, n)
		}
	}
	for _, n := range names {
		if !slices.Contains(declared, n) {
			t.Errorf("Fields documents %s, which no Field constant names", n)
		}
	}
}

// TestCatalogFieldsKnown: every field the catalog refers to (@FIELD@ in a
// subject or a body, or a FIELD= match) is one the records carry.
func TestCatalogFieldsKnown(t *testing.T) {
	ref := regexp.MustCompile(`@([A-Z0-9_]+)@|\b([A-Z][A-Z0-9]*_[A-Z0-9_]+)=`)
	names := documented()
	for _, e := range Catalog {
		for _, m := range ref.FindAllStringSubmatch(e.Subject+"\n"+e.Body, -1) {
			name := m[1] + m[2]
			if !slices.Contains(names, name) {
				t.Errorf("catalog entry %s refers to %s, which no record carries", e.Name, name)
			}
		}
	}
}
