package drift

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestKindsListed: every constant of type Kind declared in this package's
// sources is in Kinds, once, so that a kind added in any file cannot be
// left out of what counts kinds (the metrics' drift_monitor_drift_entries).
func TestKindsListed(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	var declared []Kind
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			for _, spec := range g.Specs {
				v := spec.(*ast.ValueSpec)
				if id, ok := v.Type.(*ast.Ident); !ok || id.Name != "Kind" {
					continue
				}
				for i, n := range v.Names {
					lit, ok := v.Values[i].(*ast.BasicLit)
					if !ok {
						t.Fatalf("%s: Kind %s is not a string literal", fset.Position(n.Pos()), n.Name)
					}
					declared = append(declared, Kind(strings.Trim(lit.Value, `"`)))
				}
			}
		}
	}
	if len(declared) < 30 {
		t.Fatalf("found %d Kind constants in %v; the scan is broken", len(declared), files)
	}
	for _, k := range declared {
		if !slices.Contains(Kinds, k) {
			t.Errorf("Kind %q is declared but not in Kinds", k)
		}
	}
	for i, k := range Kinds {
		if slices.Contains(Kinds[:i], k) {
			t.Errorf("Kind %q is in Kinds twice", k)
		}
		if !slices.Contains(declared, k) {
			t.Errorf("Kinds has %q, which no constant declares", k)
		}
	}
}
