// Package constscan reads the string constants a package's sources
// declare, for tests that hold a list to its constants (every drift.Kind
// in drift.Kinds, every State in dbusapi.States, every journal field in
// journal.Fields): Go cannot enumerate constants, so a test reads them from
// the source, and a constant added without its list entry fails it.
//
// It sees constants given as string literals, with their declared type
// (empty when untyped); it does not promise to see a constant computed
// from others, and reports it as an error rather than skipping it.
package constscan

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Const is a string constant as declared.
type Const struct {
	Name, Type, Value string
}

// Strings returns the string constants of the non-test Go files in dir
// that match glob (such as "*.go"), in file and declaration order.
func Strings(dir, glob string) ([]Const, error) {
	files, err := filepath.Glob(filepath.Join(dir, glob))
	if err != nil {
		return nil, err
	}
	fset := token.NewFileSet()
	var consts []Const
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			return nil, err
		}
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			for _, spec := range g.Specs {
				c, err := specConsts(fset, spec.(*ast.ValueSpec))
				if err != nil {
					return nil, err
				}
				consts = append(consts, c...)
			}
		}
	}
	return consts, nil
}

// specConsts reads one const spec: its string literals, named with their
// type. A value that is not a literal is an error; a literal of another
// kind (a number) is not a string constant.
func specConsts(fset *token.FileSet, v *ast.ValueSpec) ([]Const, error) {
	typ := ""
	if id, ok := v.Type.(*ast.Ident); ok {
		typ = id.Name
	}
	var consts []Const
	for i, n := range v.Names {
		if i >= len(v.Values) {
			continue // an iota's: a number
		}
		if id, ok := v.Values[i].(*ast.Ident); ok && id.Name == "iota" {
			continue // a number
		}
		lit, ok := v.Values[i].(*ast.BasicLit)
		if !ok {
			if typ == "" {
				continue // an untyped computed constant (a size): no string list wants it
			}
			return nil, fmt.Errorf("%s: %s is not a literal", fset.Position(n.Pos()), n.Name)
		}
		if lit.Kind != token.STRING {
			continue
		}
		s, err := strconv.Unquote(lit.Value)
		if err != nil {
			return nil, err
		}
		consts = append(consts, Const{Name: n.Name, Type: typ, Value: s})
	}
	return consts, nil
}

// OfType returns the values of the string constants of type typ that the
// non-test Go files in dir declare, in file and declaration order. It
// fails t on a scan error, and on fewer than atLeast constants: a scan
// that finds too few is broken, and a test holding a list to nothing
// would pass.
func OfType(t testing.TB, dir, typ string, atLeast int) []string {
	t.Helper()
	consts, err := Strings(dir, "*.go")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, c := range consts {
		if c.Type == typ {
			out = append(out, c.Value)
		}
	}
	if len(out) < atLeast {
		t.Fatalf("found %d constants of type %s in %s, want at least %d: the scan is broken", len(out), typ, dir, atLeast)
	}
	return out
}
