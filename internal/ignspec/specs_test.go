package ignspec

import (
	"bufio"
	"errors"
	"fmt"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"

	ignerrors "github.com/coreos/ignition/v2/config/shared/errors"
	"github.com/google/go-cmp/cmp"
)

// reverify is what to read again in Ignition's sources when go.mod requires
// another version than VerifiedAgainst.
const reverify = `re-verify against the new Ignition's sources, then set VerifiedAgainst:
  - config/vX_Y/config.go (Parse, ParseCompatibleVersion) of every stable spec,
    and config/v3_N_experimental: a new stable spec is a new entry in specs
    (specs.go), types.go and cache.go then name the newest packages;
  - config/util/parsingErrors.go (HandleParseErrors: encoding/json) and
    config/validate/validate.go (ValidateWithContext, ValidateDups,
    ValidateUnusedKeys): what quick.go's quickDecode reproduces;
  - every config/vX_Y/translate/translate.go and the types' validation
    (config/vX_Y/types against the newest's): what quickOlder's guards
    (direct) and doc rely on;
  - docs/migrating-configs.md, for semantics the specs changed (modes, links,
    users), which internal/desired derives;
  - then run make fuzz.`

// TestVerifiedAgainst: go.mod requires the Ignition this package was
// verified against.
func TestVerifiedAgainst(t *testing.T) {
	got := requiredIgnition(t)
	if got != VerifiedAgainst {
		t.Fatalf("go.mod requires github.com/coreos/ignition/v2 %s; ignspec was verified against %s: %s", got, VerifiedAgainst, reverify)
	}
}

func requiredIgnition(t *testing.T) string {
	t.Helper()
	f, err := os.Open("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 2 && fields[0] == "require" {
			fields = fields[1:]
		}
		if len(fields) >= 2 && fields[0] == "github.com/coreos/ignition/v2" {
			return fields[1]
		}
	}
	t.Fatal("go.mod does not require github.com/coreos/ignition/v2")
	return ""
}

// TestSpecsAreIgnitions: the table holds exactly the stable specs the
// Ignition packages read, oldest first, the newest last; and the cache's
// experimental spec is the one after it.
func TestSpecsAreIgnitions(t *testing.T) {
	var stable []string
	for minor := 0; minor < 20; minor++ {
		v := fmt.Sprintf("3.%d.0", minor)
		_, _, err := ParseCompatibleVersion([]byte(`{"ignition":{"version":"` + v + `"}}`))
		switch {
		case err == nil:
			stable = append(stable, v)
		case !errors.Is(err, ignerrors.ErrUnknownVersion):
			t.Errorf("%s: %v", v, err)
		}
	}
	if diff := cmp.Diff(stable, Versions()); diff != "" {
		t.Errorf("specs are not Ignition's stable specs (-Ignition +specs): %s\n%s", diff, reverify)
	}
	if last := specs[len(specs)-1].Version; last != MaxVersion.String() {
		t.Errorf("the newest entry is %s, the newest types %s", last, MaxVersion)
	}
	next := MaxVersion
	next.Minor++
	if want := next.String() + ExperimentalSuffix; latestExperimental != want {
		t.Errorf("the cache's spec is %s, want %s", latestExperimental, want)
	}
	if ParseCompatibleVersion == nil || lookup("3.6.0-experimental") != nil || lookup("") != nil {
		t.Error("an entry for a version that is no stable spec")
	}
}

// TestStrictIsIgnitions: the strict decoder of each spec, given a config of
// that spec with keys of its own, gives what ParseCompatibleVersion gives
// (the translations it chains are Ignition's), and refuses a key the spec
// lacks.
func TestStrictIsIgnitions(t *testing.T) {
	for _, s := range specs {
		t.Run(s.Version, func(t *testing.T) {
			raw := []byte(`{"ignition":{"version":"` + s.Version + `"},"storage":{"files":[{"path":"/etc/a","mode":420,` +
				`"contents":{"source":"data:,x"}}],"links":[{"path":"/etc/l","target":"/etc/a"}]},` +
				`"systemd":{"units":[{"name":"a.service","enabled":true}]},"passwd":{"users":[{"name":"core"}]}}`)
			want, _, err := IgnitionParse(raw, s.Version)
			if err != nil {
				t.Fatal(err)
			}
			got, _, err := validated(s.strict, raw, s.Version)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("(-Ignition +strict):\n%s", diff)
			}
			bad := []byte(`{"ignition":{"version":"` + s.Version + `"},"storage":{"files":[{"path":"/etc/a","mdoe":420}]}}`)
			if _, _, err := s.strict(bad); !errors.Is(err, ignerrors.ErrInvalid) {
				t.Errorf("an unknown key: %v, want ErrInvalid", err)
			}
		})
	}
}

// TestOlderTypesAreNewest: every field of an older spec's types is a field
// of the newest spec's, by JSON name, with the same JSON shape (what
// quickOlder relies on to decode an older config straight into the newest
// types: the values decoded are the same, a pointer being an optional value
// of the same JSON).
func TestOlderTypesAreNewest(t *testing.T) {
	for _, s := range specs[:len(specs)-1] {
		for _, d := range shapeDiff(s.config, reflect.TypeFor[Config](), "") {
			t.Errorf("%s: %s: %s", s.Version, d.path, d.why)
		}
	}
	type a struct {
		X []struct {
			Y *string `json:"y"`
		} `json:"x"`
		Z int `json:"z"`
	}
	type b struct {
		X []struct {
			Y int `json:"y"`
		} `json:"x"`
	}
	if got := shapeDiff(reflect.TypeFor[a](), reflect.TypeFor[b](), ""); len(got) != 2 {
		t.Errorf("shapeDiff of a changed and a missing field: %v", got)
	}
}

type difference struct{ path, why string }

// shapeDiff lists the fields of old that new lacks or holds in another JSON
// shape (the kind after pointers: a pointer is an optional value, the same
// JSON).
func shapeDiff(old, new reflect.Type, at string) []difference {
	for old.Kind() == reflect.Pointer {
		old = old.Elem()
	}
	for new.Kind() == reflect.Pointer {
		new = new.Elem()
	}
	if old.Kind() != new.Kind() {
		return []difference{{at, fmt.Sprintf("a %s, then a %s", old.Kind(), new.Kind())}}
	}
	switch old.Kind() {
	case reflect.Slice:
		return shapeDiff(old.Elem(), new.Elem(), at)
	case reflect.Struct:
		var diffs []difference
		newFields := fieldsOf(new)
		for name, ft := range fieldsOf(old) {
			p := strings.TrimPrefix(at+"."+name, ".")
			nt, ok := newFields[name]
			if !ok {
				diffs = append(diffs, difference{p, "not in the newest spec"})
				continue
			}
			diffs = append(diffs, shapeDiff(ft, nt, p)...)
		}
		return diffs
	}
	return nil
}

var specPackage = regexp.MustCompile(`^github\.com/coreos/ignition/v2/config/v[0-9]+_[0-9]+`)

// TestNoSpecOutside: no package but this one imports a package of one of
// Ignition's specs, so that a new spec changes this package only.
func TestNoSpecOutside(t *testing.T) {
	root, _ := filepath.Abs("../..")
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); name == "ignspec" || name == "vendor" || name == "_build" || strings.HasPrefix(name, ".") && p != root {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if specPackage.MatchString(path) {
				rel, _ := filepath.Rel(root, p)
				t.Errorf("%s imports %s: name the newest spec's types through internal/ignspec", rel, path)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
