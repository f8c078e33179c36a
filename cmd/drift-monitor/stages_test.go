package main

import (
	"slices"
	"strings"
	"testing"
)

// The loader's stages (package desired and the packages below it), as
// docs/development.md lists them. Each stage has one job and a layer: a
// stage imports only stages of lower layers, never one of its own layer or
// above, and beyond the standard library only what its job needs (may).
// So the readers cannot reach the merge or the derivation, the leaves
// (configerr, parsed, contents) reach no stage, and Butane's translator,
// whose module is the largest the binary links, is linked by its own
// stage and what runs a whole load, never by the stages below it.
//
// A package added under internal/desired must be given its row here.
type stage struct {
	// pkg is the package's path below internal/desired ("." is desired
	// itself: the load, which runs the stages in order).
	pkg   string
	layer int
	// may are what it may import beyond the standard library and the
	// stages of lower layers: our packages (internal/...) and third-party
	// ones, a path ending in "/" standing for every package below it.
	may []string
	// testOnly: only tests may import it.
	testOnly bool
}

const (
	ignitionMod = "github.com/coreos/ignition/v2/"
	// butaneMod is Butane's translator, which Ignition's module carries
	// (Ignition's config.Parse translates a Butane config with it), and
	// Butane's own module, should the loader ever take it from there.
	butaneMod    = ignitionMod + "butane/"
	butaneOwnMod = "github.com/coreos/butane/"
)

var stages = []stage{
	// Leaves: data and what every stage reports, no step of a load.
	{pkg: "configerr", layer: 0, may: []string{"gopkg.in/yaml.v3"}},
	{pkg: "parsed", layer: 0, may: []string{"internal/ignspec"}},
	{pkg: "contents", layer: 0, may: []string{"internal/ignspec", "internal/model", "github.com/vincent-petithory/dataurl"}},
	{pkg: "desiredtest", layer: 0, may: []string{"internal/ondisk"}, testOnly: true},
	// Discovery: which files are configs and whether they can be trusted
	// (package writers' rule, the one every file of settings is held to).
	{pkg: "discover", layer: 1, may: []string{"internal/model", "internal/errpath", "internal/writers"}},
	// The name of a derivation (read bytes, never their meaning), and the
	// Ignition reader, through ignspec (Ignition's validation and its
	// reports are not a spec version's, so taken from Ignition itself).
	// Format detection: which reader reads a file, from its name and its
	// syntax.
	{pkg: "format", layer: 2, may: []string{"sigs.k8s.io/yaml"}},
	{pkg: "statekey", layer: 2, may: []string{"internal/model", "golang.org/x/sys/unix"}},
	{pkg: "ignition", layer: 2, may: []string{
		"internal/ignspec", "internal/model",
		ignitionMod + "config/shared/errors", ignitionMod + "config/validate", "github.com/coreos/vcontext/report",
	}},
	// The readers of what carries an Ignition config.
	{pkg: "butane", layer: 3, may: []string{butaneMod, "github.com/coreos/vcontext/report", "sigs.k8s.io/yaml"}},
	{pkg: "machineconfig", layer: 3, may: []string{"internal/ignspec", "internal/model", "github.com/coreos/vcontext/report"}},
	// The fragments merged, then the entries derived from the merge.
	{pkg: "merge", layer: 4, may: []string{"internal/ignspec", ignitionMod + "config/shared/errors", ignitionMod + "config/validate"}},
	{pkg: "derive", layer: 5, may: []string{"internal/ignspec", "internal/model", "internal/accountdb"}},
	// The load, which runs the stages and hands each file to its reader.
	{pkg: ".", layer: 6, may: []string{"internal/ignspec", "internal/model"}},
}

// loadRunners are the packages that run a whole load (or, the binary, link
// one): with the loader's top and its Butane stage, the only packages of
// the module that may link Butane's translator.
var loadRunners = []string{"internal/desired", "internal/desired/butane", "internal/adopt", "internal/cli", "internal/daemon", "cmd/drift-monitor", "bench"}

// listed is what go list -json says of one of the module's packages.
type listed struct {
	ImportPath string
	Imports    []string
	Deps       []string
}

// list lists the module's packages matching patterns, with their imports
// and everything they link (not their tests').
func list(t *testing.T, patterns ...string) []listed {
	t.Helper()
	return goList[listed](t, nil, append([]string{"-json=ImportPath,Imports,Deps"}, patterns...)...)
}

// stageOf is the row of the loader's package path, if it is one.
func stageOf(path string) (stage, bool) {
	const top = self + "/internal/desired"
	rel, ok := "", path == top
	if !ok {
		rel, ok = strings.CutPrefix(path, top+"/")
	}
	if !ok {
		return stage{}, false
	}
	if rel == "" {
		rel = "."
	}
	for _, s := range stages {
		if s.pkg == rel {
			return s, true
		}
	}
	return stage{pkg: rel, layer: -1}, true
}

// mayImport returns the entry of may that allows path, not a stage (our
// packages named relative to the module).
func mayImport(may []string, path string) (string, bool) {
	if rel, ok := strings.CutPrefix(path, self+"/"); ok {
		path = rel
	}
	for _, m := range may {
		if path == m || strings.HasSuffix(m, "/") && strings.HasPrefix(path, m) {
			return m, true
		}
	}
	return "", false
}

// isStd: a standard library package (no dot in its first element).
func isStd(path string) bool {
	first, _, _ := strings.Cut(path, "/")
	return !strings.Contains(first, ".")
}

func linksButane(path string) bool {
	return strings.HasPrefix(path, butaneMod) || strings.HasPrefix(path, butaneOwnMod)
}

// TestLoaderStages: every package of the loader has its row, imports only
// stages of lower layers and, beyond the standard library, only what its
// row allows, and its row allows nothing it does not import; no stage but
// Butane's links Butane.
func TestLoaderStages(t *testing.T) {
	seen, used := map[string]bool{}, map[string]bool{}
	for _, p := range list(t, "./internal/desired/...") {
		s, _ := stageOf(p.ImportPath)
		seen[s.pkg] = true
		if s.layer < 0 {
			t.Errorf("%s is not a stage of the loader: give it its row in stages (cmd/drift-monitor/stages_test.go) and docs/development.md", p.ImportPath)
			continue
		}
		for _, imp := range p.Imports {
			if dep, ok := stageOf(imp); ok {
				if dep.testOnly {
					t.Errorf("%s imports %s, which only tests may", p.ImportPath, imp)
				} else if dep.layer >= s.layer {
					t.Errorf("%s (layer %d) imports %s (layer %d): a stage imports only the stages below it", p.ImportPath, s.layer, imp, dep.layer)
				}
				continue
			}
			if isStd(imp) {
				continue
			}
			if m, ok := mayImport(s.may, imp); ok {
				used[s.pkg+" "+m] = true
			} else {
				t.Errorf("%s imports %s, which its job does not need (its row in stages says what it may import)", p.ImportPath, imp)
			}
		}
		if s.pkg != "butane" && s.pkg != "." {
			for _, d := range p.Deps {
				if linksButane(d) {
					t.Errorf("%s links %s: Butane's translator is linked by its stage (internal/desired/butane) and the load alone", p.ImportPath, d)
					break
				}
			}
		}
	}
	for _, s := range stages {
		if !seen[s.pkg] {
			t.Errorf("stages lists internal/desired/%s, which go list does not: remove its row", s.pkg)
			continue
		}
		for _, m := range s.may {
			if !used[s.pkg+" "+m] {
				t.Errorf("stages lets internal/desired/%s import %s, which it does not: remove it, so that the row says what the stage needs", s.pkg, m)
			}
		}
	}
}

// TestButaneOnlyWhereLoadsRun: across the module, only the loader's top,
// its Butane stage and the packages that run a load link Butane's
// translator: the model, what observes, compares, repairs and caches, and
// the daemon's parts never do. And no production package imports the
// loader's test helpers.
func TestButaneOnlyWhereLoadsRun(t *testing.T) {
	for _, p := range list(t, "./...") {
		rel := strings.TrimPrefix(p.ImportPath, self+"/")
		if !slices.Contains(loadRunners, rel) {
			for _, d := range p.Deps {
				if linksButane(d) {
					t.Errorf("%s links %s: only what runs a load may (loadRunners)", p.ImportPath, d)
					break
				}
			}
		}
		if s, ok := stageOf(p.ImportPath); !ok || !s.testOnly {
			for _, imp := range p.Imports {
				if s, ok := stageOf(imp); ok && s.testOnly {
					t.Errorf("%s imports %s, which only tests may", p.ImportPath, imp)
				}
			}
		}
	}
}
