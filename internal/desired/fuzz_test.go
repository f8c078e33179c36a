package desired

import (
	"errors"
	"strings"
	"testing"

	"github.com/drift-monitor/drift-monitor/internal/desired/configerr"
	"github.com/drift-monitor/drift-monitor/internal/desired/derive"
	"github.com/drift-monitor/drift-monitor/internal/desired/discover"
	"github.com/drift-monitor/drift-monitor/internal/desired/merge"
	"github.com/drift-monitor/drift-monitor/internal/desired/parsed"
	types "github.com/drift-monitor/drift-monitor/internal/ignspec"
)

// FuzzParse: whatever bytes a config file holds, Parse never panics and
// returns either a usable fragment (one that Derive and Merge accept, so no
// error surfaces later without the file's name) or a LoadError whose message
// starts with the file's name. The seed corpus (testdata/fuzz/FuzzParse) runs
// in every plain `go test`.
func FuzzParse(f *testing.F) {
	f.Fuzz(func(t *testing.T, asYAML bool, raw []byte) {
		checkParse(t, fuzzFile(asYAML), raw)
	})
}

// fuzzFile names the fragment a fuzz target parses: JSON, or YAML.
func fuzzFile(asYAML bool) string {
	if asYAML {
		return "/etc/drift-monitor/desired.d/50-fuzz.yaml"
	}
	return "/etc/drift-monitor/desired.d/50-fuzz.ign"
}

// FuzzParseCache is FuzzParse for a fragment named as Ignition's config
// cache, seeded with caches in each spec it reads.
func FuzzParseCache(f *testing.F) {
	for _, v := range []string{"3.7.0-experimental", "3.6.0-experimental", "3.4.0-experimental", "3.5.0-experimental", "3.6.0", "3.8.0-experimental"} {
		f.Add([]byte(`{"ignition":{"config":{"merge":[{"source":"data:,%7B%7D","verification":{}}],"replace":{"verification":{}}},"proxy":{},"security":{"tls":{}},"timeouts":{},"version":"` + v +
			`"},"kernelArguments":{},"passwd":{},"storage":{"files":[{"group":{},"path":"/etc/x","user":{},"contents":{"source":"data:,x","verification":{}},"mode":420}]},"systemd":{}}`))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		checkParse(t, "/etc/drift-monitor/desired.d/10-firstboot"+discover.CacheSuffix, raw)
	})
}

// checkParse is the property both fuzz targets check.
func checkParse(t *testing.T, name string, raw []byte) {
	t.Helper()
	frag, err := Parse(name, raw)
	if err != nil {
		var le *configerr.LoadError
		if !errors.As(err, &le) || le.File != name {
			t.Fatalf("Parse error %v (%T) is not a LoadError for %s", err, err, name)
		}
		if !strings.HasPrefix(err.Error(), name+":") {
			t.Fatalf("Parse error %q does not start with the file name", err)
		}
		return
	}
	if frag.File != name || frag.Config.Ignition.Version != types.MaxVersion.String() {
		t.Fatalf("Parse = file %q, version %q; want %q, %s", frag.File, frag.Config.Ignition.Version, name, types.MaxVersion)
	}
	cfg, err := merge.All([]parsed.Fragment{frag})
	if err != nil {
		t.Fatalf("Merge of a parsed fragment: %v", err)
	}
	if _, err := derive.Derive(cfg, emptyAccounts{}); err != nil {
		t.Fatalf("Derive of a parsed fragment: %v", err)
	}
}
