package desired

import (
	"encoding/base64"
	"errors"
	"strings"
	"testing"

	ignerrors "github.com/coreos/ignition/v2/config/shared/errors"
	"github.com/drift-monitor/drift-monitor/internal/desired/discover"
	types "github.com/drift-monitor/drift-monitor/internal/ignspec"
	"github.com/google/go-cmp/cmp"
)

const cacheFile = "/etc/drift-monitor/desired.d/10-firstboot.ignition-cache.json"

// childConfig is a data-URL child: what it declares is in the parent's
// cache, and the cache still lists it.
var childConfig = `{"ignition":{"version":"3.3.0"},"storage":{"files":[{"path":"/etc/child.conf","mode":420,"contents":{"source":"data:,from%20the%20child%0A"}}]}}`

// userConfig is what a host's owner writes: a stable spec, a data-URL child
// and a remote one.
var userConfig = `{"ignition":{"version":"3.5.0","config":{"merge":[` +
	`{"source":"data:;base64,` + base64.StdEncoding.EncodeToString([]byte(childConfig)) + `"},` +
	`{"source":"https://configs.example.com/remote.ign"}]}},` +
	`"storage":{"files":[{"path":"/etc/parent.conf","mode":420,"contents":{"source":"data:,parent%0A"}},` +
	`{"path":"/etc/child.conf","mode":420,"contents":{"source":"data:,from%20the%20child%0A"}}],` +
	`"directories":[{"path":"/srv/data","mode":493}]},` +
	`"systemd":{"units":[{"name":"a.service","enabled":true,"contents":"[Service]\nExecStart=/bin/true\n[Install]\nWantedBy=multi-user.target\n"}]}}`

// ignitionCache is what the Ignition drift-monitor is built with writes to
// its cache for cfg, once rendered (here cfg holds what its children would
// have merged in; ignspec.IgnitionCache).
func ignitionCache(t *testing.T, cfg string) []byte {
	t.Helper()
	b, err := types.IgnitionCache([]byte(cfg))
	if err != nil {
		t.Fatalf("Ignition refuses the user config: %v", err)
	}
	return b
}

// asStable is raw with its experimental version replaced by version.
func asStable(raw []byte, exp, version string) []byte {
	return []byte(strings.Replace(string(raw), `"version":"`+exp+`"`, `"version":"`+version+`"`, 1))
}

// TestCacheTakenAsStable: a cache in an experimental spec whose fields the
// stable spec has is exactly that stable config (as Ignition's parser of the
// stable spec reads it), with the children it lists not resolved again: no
// notice for the remote one, which is merged in already.
func TestCacheTakenAsStable(t *testing.T) {
	latest := types.LatestExperimental()
	cacheNow := ignitionCache(t, userConfig)
	if !strings.Contains(string(cacheNow), `"version":"`+latest+`"`) {
		t.Fatalf("Ignition's cache is not in %s: %s", latest, cacheNow)
	}
	// Ignition 2.22 to 2.25 wrote the same in 3.6.0-experimental.
	cache224 := asStable(cacheNow, latest, "3.6.0-experimental")
	// What Ignition 2.14 (Debian) writes: 3.4.0-experimental, every object
	// written out; the cache of a config with a data-URL child.
	cache214 := []byte(`{"ignition":{"config":{"merge":[{"source":"data:;base64,` + base64.StdEncoding.EncodeToString([]byte(childConfig)) +
		`","verification":{}}],"replace":{"verification":{}}},"proxy":{},"security":{"tls":{}},"timeouts":{},"version":"3.4.0-experimental"},` +
		`"kernelArguments":{},"passwd":{},"storage":{"files":[{"group":{},"path":"/etc/parent.conf","user":{},"contents":{"source":"data:,parent%0A","verification":{}},"mode":420},` +
		`{"group":{},"path":"/etc/child.conf","user":{},"contents":{"source":"data:,from%20the%20child%0A","verification":{}},"mode":420}]},"systemd":{}}`)
	for _, tc := range []struct {
		name        string
		raw         []byte
		exp, stable string
	}{
		{"Ignition now: " + latest, cacheNow, latest, types.MaxVersion.String()},
		{"Ignition 2.24: 3.6.0-experimental", cache224, "3.6.0-experimental", "3.6.0"},
		{"Ignition 2.14: 3.4.0-experimental", cache214, "3.4.0-experimental", "3.4.0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			frag, err := Parse(cacheFile, tc.raw)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			want, _, err := types.ParseBytes(asStable(tc.raw, tc.exp, tc.stable), tc.stable)
			if err != nil {
				t.Fatalf("as %s: %v", tc.stable, err)
			}
			if diff := cmp.Diff(want, frag.Config); diff != "" {
				t.Errorf("the cache is not its config as %s (-want +got):\n%s", tc.stable, diff)
			}
			if len(frag.Unfetched) != 0 || len(frag.Warnings) != 0 {
				t.Errorf("unfetched %+v, warnings %q: want none (the children are merged in)", frag.Unfetched, frag.Warnings)
			}
			if !frag.Validated {
				t.Error("not marked validated")
			}
			// The same bytes under another name are a config someone wrote:
			// its version is refused.
			if _, err := Parse("/etc/drift-monitor/desired.d/10-copy.json", tc.raw); !errors.Is(err, ignerrors.ErrUnknownVersion) ||
				!strings.Contains(err.Error(), discover.CacheSuffix) {
				t.Errorf("as a plain config: %v, want an unknown version that names %s", err, discover.CacheSuffix)
			}
		})
	}

	// A stable config named as a cache: its children are merged in too.
	frag, err := Parse(cacheFile, []byte(userConfig))
	if err != nil {
		t.Fatal(err)
	}
	if len(frag.Unfetched) != 0 {
		t.Errorf("a 3.5.0 cache: unfetched %+v, want none", frag.Unfetched)
	}
	plain, err := Parse("/etc/drift-monitor/desired.d/50-user.ign", []byte(userConfig))
	if err != nil {
		t.Fatal(err)
	}
	if len(plain.Unfetched) != 1 {
		t.Errorf("the user config itself: unfetched %+v, want its remote child", plain.Unfetched)
	}
}

// TestCacheWarnings: Ignition's warnings about a cache are kept, as for any
// config: a key neither spec knows is ignored by Ignition too.
func TestCacheWarnings(t *testing.T) {
	frag, err := Parse(cacheFile, []byte(`{"ignition":{"version":"3.7.0-experimental"},"storage":{"files":[{"path":"/etc/a","mdoe":420}]}}`))
	if err != nil {
		t.Fatal(err)
	}
	if len(frag.Warnings) != 1 || !strings.Contains(frag.Warnings[0], "mdoe") {
		t.Errorf("warnings %q, want the unused key", frag.Warnings)
	}
	if frag.Config.Ignition.Version != types.MaxVersion.String() {
		t.Errorf("version %q", frag.Config.Ignition.Version)
	}
}
