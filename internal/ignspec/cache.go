package ignspec

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	ignerrors "github.com/coreos/ignition/v2/config/shared/errors"
	"github.com/coreos/ignition/v2/config/util"
	latest "github.com/coreos/ignition/v2/config/v3_7_experimental"
	latesttypes "github.com/coreos/ignition/v2/config/v3_7_experimental/types"
	"github.com/coreos/ignition/v2/config/validate"
	vjson "github.com/coreos/vcontext/json"
	"github.com/coreos/vcontext/path"
	"github.com/coreos/vcontext/report"
	vvalidate "github.com/coreos/vcontext/validate"
)

// Ignition's config cache (/run/ignition.json) is in Ignition's newest
// spec, which is experimental (latest.Merge's types: 3.7.0-experimental for
// Ignition 2.26 and 2.27, 3.6.0-experimental for 2.22 to 2.25,
// 3.4.0-experimental for Debian's 2.14). ParseCache takes it as the newest
// stable spec when, and only when, that means the same thing; otherwise the
// cache is refused, naming the field:
//
//   - 3.7.0-experimental, the experimental spec of the Ignition packages
//     drift-monitor is built with: parsed and validated by Ignition's own
//     v3_7_experimental.Parse, then copied field by field into 3.6.0's types.
//     A field set that 3.6.0 lacks is refused. The result is validated again
//     with 3.6.0's rules (3.7.0-experimental adds no field to 3.6.0, but
//     values: a virtiofs file system, which 3.6.0's rules refuse).
//   - 3.N.0-experimental of an older Ignition (N up to 6), whose parser the
//     Ignition packages here no longer carry: decoded by Ignition into the
//     types of the stable spec 3.N.0 it became and validated with that
//     spec's rules, then translated up as a 3.N.0 config. In Ignition's
//     history each of these experimental specs only ever gained fields
//     before it was stabilised (Debian's 2.14, for one, lacks 3.4.0's
//     luks.discard, luks.openOptions and tang.advertisement): a key the
//     stable spec does not have is therefore refused, not ignored as
//     Ignition ignores unknown keys, since it may be a field that changed.
//     (3.6.0-experimental applied setuid, setgid and sticky bits already,
//     as 3.6.0 does: Ignition 2.22's config/v3_6_experimental/translate
//     masked them only when it translated an older spec.)
//   - A newer experimental spec than 3.7.0's is refused as unknown.

// ParseCache parses the Ignition config of a cache declaring version, into
// the newest stable spec's types (see above). A stable version is parsed as
// Parse does: Ignition never writes one, but it means what it says.
func ParseCache(raw []byte, version string) (Config, report.Report, error) {
	if version == latestExperimental {
		return parseLatestExperimental(raw)
	}
	if stable, ok := strings.CutSuffix(version, ExperimentalSuffix); ok {
		if s := lookup(stable); s != nil {
			return validated(s.strict, raw, stable)
		}
		return Config{}, report.Report{}, &UnknownCacheSpecError{version}
	}
	return ParseBytes(raw, version)
}

// ExperimentalSuffix ends the version of an experimental spec.
const ExperimentalSuffix = "-experimental"

// latestExperimental is the experimental spec of the Ignition packages
// drift-monitor is built with.
var latestExperimental = latesttypes.MaxVersion.String()

// UnknownCacheSpecError is a cache in an experimental spec drift-monitor
// cannot take as a stable one.
type UnknownCacheSpecError struct{ version string }

func (e *UnknownCacheSpecError) Error() string {
	return fmt.Sprintf("an Ignition config cache in spec %q, which this drift-monitor cannot read "+
		"(it reads caches in %s to %s, in their experimental specs, and in %s)", e.version, Oldest(), MaxVersion, latestExperimental)
}

func (e *UnknownCacheSpecError) Unwrap() error { return ignerrors.ErrUnknownVersion }

// strictDecoder decodes a config into the types C of the stable spec
// version, whatever version the config declares, and validates it with that
// spec's rules; a key C lacks is an error (see above).
func strictDecoder[C any](version string) func([]byte) (C, report.Report, error) {
	return func(raw []byte) (C, report.Report, error) {
		var cfg, zero C
		if len(raw) == 0 {
			return zero, report.Report{}, ignerrors.ErrEmpty
		}
		if rpt, err := util.HandleParseErrors(raw, &cfg); err != nil {
			return zero, rpt, err
		}
		reflect.ValueOf(&cfg).Elem().FieldByName("Ignition").FieldByName("Version").SetString(version)
		ctx, err := vjson.UnmarshalToContext(raw)
		if err != nil {
			// encoding/json read it; vcontext's reader should too.
			var r report.Report
			r.AddOnError(path.New("json"), err)
			return zero, r, ignerrors.ErrInvalid
		}
		unused := vvalidate.ValidateCustom(cfg, "json", func(v reflect.Value, c path.ContextPath) report.Report {
			return validate.ValidateUnusedKeys(v, c, ctx)
		})
		unused.Correlate(ctx)
		for _, e := range unused.Entries {
			key := fmt.Sprint(e.Context.Path[len(e.Context.Path)-1])
			var r report.Report
			r.Entries = append(r.Entries, report.Entry{Kind: report.Error, Context: e.Context, Marker: e.Marker,
				Message: fmt.Sprintf("%q is no field of spec %s, the stable spec of %s%s: the cache cannot be taken as %s",
					key, version, version, ExperimentalSuffix, version)})
			return zero, r, ignerrors.ErrInvalid
		}
		r := validate.ValidateWithContext(cfg, nil)
		r.Correlate(ctx)
		if r.IsFatal() {
			return zero, r, ignerrors.ErrInvalid
		}
		return cfg, r, nil
	}
}

// parseLatestExperimental parses a cache in latestExperimental with
// Ignition's parser, and takes it as 3.6.0 (see above).
func parseLatestExperimental(raw []byte) (Config, report.Report, error) {
	exp, rpt, err := latest.Parse(raw)
	if err != nil {
		return Config{}, rpt, err
	}
	fail := func(c path.ContextPath, err error) (Config, report.Report, error) {
		var r report.Report
		r.AddOnError(c, err)
		if ctx, cerr := vjson.UnmarshalToContext(raw); cerr == nil {
			r.Correlate(ctx)
		}
		return Config{}, r, ignerrors.ErrInvalid
	}
	var cfg Config
	if c, err := downgrade(reflect.ValueOf(exp), reflect.ValueOf(&cfg).Elem(), path.New("json")); err != nil {
		return fail(c, err)
	}
	cfg.Ignition.Version = MaxVersion.String()
	// 3.6.0's rules, with positions in the cache: its paths are 3.6.0's.
	if r := validate.ValidateWithContext(cfg, raw); r.IsFatal() {
		return Config{}, r, ignerrors.ErrInvalid
	}
	return cfg, rpt, nil
}

// errNotInStable is a value of the experimental spec that the stable one
// cannot carry.
var errNotInStable = fmt.Errorf("not in spec %s: the cache (spec %s) cannot be taken as %s", MaxVersion, latestExperimental, MaxVersion)

// downgrade copies from, a value of the experimental spec's types, into to,
// the same value in the stable spec's types, by field name (as Ignition's
// config/translate does between specs). A field set in from that to's type
// lacks, or whose type differs, is an error at its config path c.
func downgrade(from, to reflect.Value, c path.ContextPath) (path.ContextPath, error) {
	if from.Kind() != to.Kind() {
		return c, fmt.Errorf("a %s in spec %s, a %s in %s: %w", from.Kind(), latestExperimental, to.Kind(), MaxVersion, errNotInStable)
	}
	switch from.Kind() {
	case reflect.Bool, reflect.Int, reflect.String:
		to.Set(from.Convert(to.Type()))
	case reflect.Pointer:
		if from.IsNil() {
			return c, nil
		}
		to.Set(reflect.New(to.Type().Elem()))
		return downgrade(from.Elem(), to.Elem(), c)
	case reflect.Slice:
		if from.IsNil() {
			return c, nil
		}
		to.Set(reflect.MakeSlice(to.Type(), from.Len(), from.Len()))
		for i := 0; i < from.Len(); i++ {
			if p, err := downgrade(from.Index(i), to.Index(i), c.Append(i)); err != nil {
				return p, err
			}
		}
	case reflect.Struct:
		for i := 0; i < from.NumField(); i++ {
			f := from.Type().Field(i)
			fc := c // an embedded struct's fields are its parent's in JSON
			if !f.Anonymous {
				name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
				fc = c.Append(name)
			}
			tf := to.FieldByName(f.Name)
			if !tf.IsValid() {
				if from.Field(i).IsZero() {
					continue // declared by the type, not used by the config
				}
				return fc, fmt.Errorf("the field is %w", errNotInStable)
			}
			if p, err := downgrade(from.Field(i), tf, fc); err != nil {
				return p, err
			}
		}
	default:
		return c, fmt.Errorf("a %s: %w", from.Kind(), errNotInStable)
	}
	return c, nil
}

// IgnitionCache is what the Ignition drift-monitor is built with writes to
// its config cache for the config raw, once rendered: its newest parser's
// translation, json.Marshal'ed (internal/exec/engine.go,
// acquireProviderConfig). For tests.
func IgnitionCache(raw []byte) ([]byte, error) {
	c, _, err := latest.ParseCompatibleVersion(raw)
	if err != nil {
		return nil, err
	}
	return json.Marshal(c)
}

// LatestExperimental is the experimental spec of the Ignition packages
// drift-monitor is built with: the spec of the caches it writes.
func LatestExperimental() string { return latestExperimental }
