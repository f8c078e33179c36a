// Package ignspec is everything drift-monitor knows about Ignition's spec
// versions: which stable specs it reads and how each is parsed into the
// newest one, the newest spec's types (which the rest of drift-monitor
// uses through the aliases in types.go, never by importing a config/vX_Y
// package), Ignition's config cache in an experimental spec, and the quick
// path that decodes a config Ignition has nothing to say on without
// Ignition's position tree.
//
// It promises: Parse gives what Ignition's own parser of the newest spec
// gives (config/v3_6/config.go, ParseCompatibleVersion: the declared spec's
// Parse, then each Translate up to the newest), followed by the newest
// spec's validation for a config of an older spec; the quick path gives the
// same, or hands the config to Ignition's path. The tests prove it against
// ParseCompatibleVersion itself, for every spec in specs.
//
// A new Ignition release: bump github.com/coreos/ignition/v2 in go.mod; if
// it brings a new stable spec, add its entry to specs (and make the
// previous newest an older entry), point types.go and cache.go at the new
// packages, then go through the checklist TestVerifiedAgainst prints and
// set VerifiedAgainst. Nothing outside this package names a spec version.
package ignspec

import (
	"reflect"

	tr31 "github.com/coreos/ignition/v2/config/v3_1/translate"
	tr32 "github.com/coreos/ignition/v2/config/v3_2/translate"
	tr33 "github.com/coreos/ignition/v2/config/v3_3/translate"
	tr34 "github.com/coreos/ignition/v2/config/v3_4/translate"
	tr35 "github.com/coreos/ignition/v2/config/v3_5/translate"
	tr36 "github.com/coreos/ignition/v2/config/v3_6/translate"
	"github.com/coreos/vcontext/report"
)

// VerifiedAgainst is the version of github.com/coreos/ignition/v2 whose
// sources this package was checked against (the rules cited in its
// comments, the translations the quick path relies on): TestVerifiedAgainst
// fails when go.mod requires another.
const VerifiedAgainst = "v2.27.0"

// specs are the stable specs, oldest first, the newest last; one entry
// each, with the spec's config type. An older spec names the Translate of
// Ignition that takes its config to the next spec's types, the entry of
// that next spec, and what the quick path must guard against to decode its
// configs straight into the newest types (direct, see quickOlder:
// re-verified at every new spec).
var specs = func() []*Spec {
	s36 := newest("3.6.0")
	s35 := older("3.5.0", tr36.Translate, s36, direct{})
	s34 := older("3.4.0", tr35.Translate, s35, direct{})
	s33 := older("3.3.0", tr34.Translate, s34, direct{noARN: true})
	s32 := older("3.2.0", tr33.Translate, s33, direct{noARN: true})
	s31 := older("3.1.0", tr32.Translate, s32, direct{noARN: true, noGS: true})
	s30 := older("3.0.0", tr31.Translate, s31, direct{noARN: true, noGS: true, versionOnly: true})
	return []*Spec{s30.Spec, s31.Spec, s32.Spec, s33.Spec, s34.Spec, s35.Spec, s36.Spec}
}()

// Spec is one stable spec.
type Spec struct {
	// Version is its ignition.version, as Ignition's tools write it.
	Version string
	// config is its config type.
	config reflect.Type
	// strict decodes a config into the spec's types whatever version it
	// declares, a key the types lack being an error (cache.go), then
	// translates it up.
	strict func([]byte) (Config, report.Report, error)
	// quick is the quick path (quick.go): the config when ok; a fatal
	// report when the spec is the newest and its validation refuses it.
	quick func(*Bytes) (Config, report.Report, bool)
	// refuse is the refusal path (refuse.go).
	refuse func([]byte) (report.Report, bool)
}

// spec is a Spec whose configs decode into C; up translates one to the
// newest spec.
type spec[C any] struct {
	*Spec
	up func(C) Config
}

func newest(version string) *spec[Config] {
	s := &spec[Config]{Spec: &Spec{Version: version, config: reflect.TypeFor[Config]()}, up: func(c Config) Config { return c }}
	s.strict = translated(strictDecoder[Config](version), s.up)
	s.quick = func(src *Bytes) (Config, report.Report, bool) { return quickDecode(src, version) }
	s.refuse = refuser(version, s.up)
	return s
}

func older[C, N any](version string, translate func(C) N, next *spec[N], d direct) *spec[C] {
	up := func(c C) Config { return next.up(translate(c)) }
	s := &spec[C]{Spec: &Spec{Version: version, config: reflect.TypeFor[C]()}, up: up}
	s.strict = translated(strictDecoder[C](version), up)
	s.quick = func(src *Bytes) (Config, report.Report, bool) { return quickOlder[C](src, version, d) }
	s.refuse = refuser(version, up)
	return s
}

// translated is parse followed by up, on success.
func translated[Old any](parse func([]byte) (Old, report.Report, error), up func(Old) Config) func([]byte) (Config, report.Report, error) {
	return func(raw []byte) (Config, report.Report, error) {
		old, r, err := parse(raw)
		if err != nil {
			return Config{}, r, err
		}
		return up(old), r, nil
	}
}

// Versions are the stable specs drift-monitor reads, oldest first.
func Versions() []string {
	v := make([]string, len(specs))
	for i, s := range specs {
		v[i] = s.Version
	}
	return v
}

// Oldest is the oldest stable spec drift-monitor reads.
func Oldest() string { return specs[0].Version }

// lookup is the entry of a stable spec version; nil for any other string
// (Ignition's own path then reports it).
func lookup(version string) *Spec {
	for _, s := range specs {
		if s.Version == version {
			return s
		}
	}
	return nil
}
