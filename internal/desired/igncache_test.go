package desired

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	ignerrors "github.com/coreos/ignition/v2/config/shared/errors"
	"github.com/coreos/ignition/v2/config/v3_6/types"
	latest "github.com/coreos/ignition/v2/config/v3_7_experimental"
	"github.com/coreos/vcontext/path"
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

// ignitionCache is what Ignition 2.27 writes to its cache for cfg, once
// rendered (here cfg holds what its children would have merged in): its
// newest parser's translation, json.Marshal'ed (internal/exec/engine.go,
// acquireProviderConfig).
func ignitionCache(t *testing.T, cfg string) []byte {
	t.Helper()
	c, _, err := latest.ParseCompatibleVersion([]byte(cfg))
	if err != nil {
		t.Fatalf("Ignition refuses the user config: %v", err)
	}
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
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
	cache227 := ignitionCache(t, userConfig)
	if !strings.Contains(string(cache227), `"version":"3.7.0-experimental"`) {
		t.Fatalf("Ignition's cache is not in 3.7.0-experimental: %s", cache227)
	}
	// Ignition 2.22 to 2.25 wrote the same in 3.6.0-experimental.
	cache224 := asStable(cache227, "3.7.0-experimental", "3.6.0-experimental")
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
		{"Ignition 2.27: 3.7.0-experimental", cache227, "3.7.0-experimental", "3.6.0"},
		{"Ignition 2.24: 3.6.0-experimental", cache224, "3.6.0-experimental", "3.6.0"},
		{"Ignition 2.14: 3.4.0-experimental", cache214, "3.4.0-experimental", "3.4.0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			frag, err := Parse(cacheFile, tc.raw)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			want, _, err := parseIgnition(asStable(tc.raw, tc.exp, tc.stable), tc.stable)
			if err != nil {
				t.Fatalf("as %s: %v", tc.stable, err)
			}
			if diff := cmp.Diff(want, frag.Config); diff != "" {
				t.Errorf("the cache is not its config as %s (-want +got):\n%s", tc.stable, diff)
			}
			if len(frag.Unfetched) != 0 || len(frag.Warnings) != 0 {
				t.Errorf("unfetched %+v, warnings %q: want none (the children are merged in)", frag.Unfetched, frag.Warnings)
			}
			if !frag.validated {
				t.Error("not marked validated")
			}
			// The same bytes under another name are a config someone wrote:
			// its version is refused.
			if _, err := Parse("/etc/drift-monitor/desired.d/10-copy.json", tc.raw); !errors.Is(err, ignerrors.ErrUnknownVersion) ||
				!strings.Contains(err.Error(), CacheSuffix) {
				t.Errorf("as a plain config: %v, want an unknown version that names %s", err, CacheSuffix)
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

// TestDowngrade: a field the stable types lack may be declared by the
// experimental ones, but not used.
func TestDowngrade(t *testing.T) {
	type inner struct {
		Name string `json:"name"`
	}
	type embedded struct {
		Mode *int `json:"mode,omitempty"`
	}
	type exp struct {
		embedded
		List  []inner `json:"list,omitempty"`
		New   *bool   `json:"newField,omitempty"`
		Inner inner   `json:"inner"`
	}
	type stable struct {
		embedded
		List  []inner `json:"list,omitempty"`
		Inner inner   `json:"inner"`
	}
	type otherType struct {
		embedded
		List  []inner `json:"list,omitempty"`
		Inner string  `json:"inner"`
	}
	mode, yes := 420, true
	tests := []struct {
		name    string
		from    exp
		to      any // a pointer to the stable type
		want    any
		context string // of the error; "" for none
	}{
		{"unused new field", exp{embedded{&mode}, []inner{{"a"}}, nil, inner{"b"}}, &stable{},
			&stable{embedded{&mode}, []inner{{"a"}}, inner{"b"}}, ""},
		{"new field set", exp{New: &yes}, &stable{}, nil, "$.newField"},
		{"a field of another type", exp{Inner: inner{"b"}}, &otherType{}, nil, "$.inner"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := downgrade(reflect.ValueOf(tt.from), reflect.ValueOf(tt.to).Elem(), path.New("json"))
			if tt.context == "" {
				if err != nil {
					t.Fatalf("downgrade: %v at %s", err, c)
				}
				if diff := cmp.Diff(tt.want, tt.to, cmp.AllowUnexported(stable{})); diff != "" {
					t.Errorf("(-want +got):\n%s", diff)
				}
				return
			}
			if !errors.Is(err, errNotInStable) || c.String() != tt.context {
				t.Errorf("downgrade = %v at %s, want errNotInStable at %s", err, c, tt.context)
			}
		})
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
