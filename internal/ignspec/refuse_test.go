package ignspec

import (
	"encoding/json"
	"errors"
	"sort"
	"testing"

	ignerrors "github.com/coreos/ignition/v2/config/shared/errors"
	vjson "github.com/coreos/vcontext/json"
	"github.com/coreos/vcontext/path"
	"github.com/coreos/vcontext/report"
	"github.com/coreos/vcontext/tree"
)

// placeSeeds are JSON documents with every shape place must walk: nested
// objects and arrays, repeated and escaped keys, white space and new lines,
// brackets inside strings, every kind of literal.
var placeSeeds = []string{
	`{"ignition":{"version":"3.6.0"},"storage":{"files":[{"path":"/a"},{"path":"/a"}]}}`,
	"{\n  \"a\" : [ 1 , [ 2, {\"b\":\n\"x]}\"} ] ],\r\n\t\"c\":{\"d\":null,\"e\":true,\"f\":-1.5e3}\n}",
	`{"k":1,"k":{"k":[[],{}]},"\u006b":[{"x":"\"{["}]}`,
	`{"a\nb":{"a\\b":["\u00e9",{"é":{}}]},"":[{"":""}]}`,
	`[[[[]]],{"a":[{"b":[0,1,2]}]}]`,
	"  [ \"top\" ]  ",
	`{}`,
}

// placePaths are the paths to try on a document: every value's path, each
// with an element that does not resolve after it, each object key as a
// tree.Key, an index past the end, a key on an array and an index on an
// object.
func placePaths(t testing.TB, raw []byte) []path.ContextPath {
	var doc any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatalf("%q: %v", raw, err)
	}
	var paths []path.ContextPath
	var walk func(v any, p []any)
	walk = func(v any, p []any) {
		at := func(more ...any) path.ContextPath {
			return path.New("json", append(append([]any{}, p...), more...)...)
		}
		paths = append(paths, at(), at("nope"), at(7), at(tree.Key("nope")))
		switch v := v.(type) {
		case map[string]any:
			keys := make([]string, 0, len(v))
			for k := range v {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				paths = append(paths, at(tree.Key(k)), at(tree.Key(k), "more"))
				walk(v[k], append(append([]any{}, p...), k))
			}
		case []any:
			paths = append(paths, at(len(v))) // (a negative index panics in vcontext; Ignition makes none)
			for i, e := range v {
				walk(e, append(append([]any{}, p...), i))
			}
		}
	}
	walk(doc, nil)
	return paths
}

// correlated is where Report.Correlate, with vcontext's tree of raw, puts an
// entry on c: the oracle of place.
func correlated(t testing.TB, raw []byte, c path.ContextPath) tree.Pos {
	t.Helper()
	node, err := vjson.UnmarshalToContext(raw)
	if err != nil {
		t.Fatalf("vcontext cannot read %q: %v", raw, err)
	}
	r := report.Report{Entries: []report.Entry{{Kind: report.Error, Context: c}}}
	r.Correlate(node)
	if r.Entries[0].Marker.StartP == nil {
		return tree.Pos{Index: -1}
	}
	return *r.Entries[0].Marker.StartP
}

func placed(raw []byte, c path.ContextPath) tree.Pos {
	at := place(raw, c)
	line, column := lineColumnAt(raw, at)
	return tree.Pos{Index: int64(at), Line: line, Column: column}
}

// TestPlaceIsCorrelates: on every path of every seed, place gives the
// index, line and column that vcontext's tree and Correlate give.
func TestPlaceIsCorrelates(t *testing.T) {
	for _, seed := range placeSeeds {
		raw := []byte(seed)
		for _, c := range placePaths(t, raw) {
			if got, want := placed(raw, c), correlated(t, raw, c); got != want {
				t.Errorf("%q at %v: placed at %+v; Correlate: %+v", seed, c.Path, got, want)
			}
		}
	}
}

// FuzzPlace: whatever JSON document, place is Correlate on every path.
func FuzzPlace(f *testing.F) {
	for _, s := range placeSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if !json.Valid(raw) {
			return
		}
		if _, err := vjson.UnmarshalToContext(raw); err != nil {
			return // beyond vcontext's reader: Ignition places nothing then
		}
		for _, c := range placePaths(t, raw) {
			if got, want := placed(raw, c), correlated(t, raw, c); got != want {
				t.Errorf("%q at %v: placed at %+v; Correlate: %+v", raw, c.Path, got, want)
			}
		}
	})
}

// TestRefusalIsIgnitions: a config that Ignition's validation refuses is
// refused by Parse with Ignition's error and first fatal entry, placed
// where Ignition's tree places it, in every spec (TestRefusalOfGeneratedConfigs
// and FuzzRefusal try many more).
func TestRefusalIsIgnitions(t *testing.T) {
	bodies := map[string]string{
		"a duplicate":         `"storage":{"files":[{"path":"/a"},` + "\n" + `  {"path":"/a"}]}`,
		"a relative path":     `"storage":{"directories":[{"path":"/d"},{"path":"d"}]}`,
		"a duplicate unit":    `"systemd":{"units":[{"name":"a.service"},{"name":"a.service","mask":true}]}`,
		"with an unknown key": `"storage":{"files":[{"path":"/a","mdoe":1},{"path":"/a"}]}`,
		"a duplicate, cased":  `"Storage":{"Files":[{"path":"/a"},{"path":"/a"}]}`,
		"many duplicates":     `"storage":{"directories":[{"path":"/a"}],"files":[{"path":"/a"},{"path":"/b"},{"path":"/a"},{"path":"/b"}],"links":[{"path":"/b","target":"/t"}]}`,
		"an invalid value after a duplicate": `"storage":{"files":[{"path":"/a"},{"path":"/a"}]},` +
			`"systemd":{"units":[{"name":"bad"}]}`,
		"a duplicate dropin before a duplicate user": `"systemd":{"units":[{"name":"a.service","dropins":[{"name":"x.conf"},{"name":"x.conf"}]}]},` +
			`"passwd":{"users":[{"name":"core"},{"name":"core"}],"groups":[{"name":"g"},{"name":"g"}]}`,
	}
	for _, v := range Versions() {
		for name, body := range bodies {
			t.Run(v+"/"+name, func(t *testing.T) {
				raw := []byte(`{"ignition":{"version":"` + v + `"},` + body + `}`)
				_, want, wantErr := IgnitionParse(raw, v)
				_, got, err := ParseBytes(raw, v)
				if !errors.Is(wantErr, ignerrors.ErrInvalid) || !errors.Is(err, ignerrors.ErrInvalid) {
					t.Fatalf("errors %v, Ignition's %v: want both invalid", err, wantErr)
				}
				if g, w := fatal(got), fatal(want); g != w {
					t.Errorf("fatal entries:\n%s\nIgnition's:\n%s", g, w)
				}
			})
		}
	}
}

// fatal is a report's first fatal entry, with its position: what a
// LoadError shows.
func fatal(r report.Report) string {
	if e := firstFatalEntry(r); e != nil {
		return e.String()
	}
	return ""
}
