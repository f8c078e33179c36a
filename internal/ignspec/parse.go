package ignspec

import (
	ignerrors "github.com/coreos/ignition/v2/config/shared/errors"
	"github.com/coreos/ignition/v2/config/validate"
	"github.com/coreos/vcontext/report"
)

// Parse parses the Ignition config src holds, which declares version (the
// caller has read it), into the newest spec. It may let src drop its bytes
// (see Bytes). Its result is Ignition's:
//
//   - a config of the newest spec: ParseCompatibleVersion, which reads the
//     version and calls that spec's Parse;
//   - a config of an older stable spec: ParseCompatibleVersion, which calls
//     that spec's Parse and each Translate up to the newest, then the
//     newest spec's validation of the translated config: the merge of
//     fragments is validated with the newest spec's rules, and what an older
//     spec let pass (a 3.0.0 link without a target) would otherwise be
//     refused there, as a "conflict" between fragments, naming all of them;
//     ignition.version is then the newest spec's;
//   - any other version: ParseCompatibleVersion, which refuses it.
//
// A config Ignition has nothing to say on (no error, no warning) is decoded
// on the quick path (quick.go), without Ignition's position tree; a config
// Ignition's validation refuses is refused on the refusal path (refuse.go),
// also without it, its first fatal entry placed where Ignition places it;
// anything else by Ignition's own functions (IgnitionParse), which report it
// with its line and column. An error reading the bytes again is a
// *RereadError.
func Parse(src *Bytes, version string) (Config, report.Report, error) {
	s := lookup(version)
	var quick report.Report
	if s != nil {
		cfg, rpt, ok := s.quick(src)
		if ok {
			return cfg, report.Report{}, nil
		}
		quick = rpt
	}
	raw, err := src.Bytes()
	if err != nil {
		return Config{}, report.Report{}, &RereadError{err}
	}
	if quick.IsFatal() {
		placeFirstFatal(&quick, raw)
		return Config{}, quick, ignerrors.ErrInvalid
	}
	if s != nil {
		if rpt, ok := s.refuse(raw); ok {
			return Config{}, rpt, ignerrors.ErrInvalid
		}
	}
	return IgnitionParse(raw, version)
}

// ParseBytes is Parse of raw, which it never drops.
func ParseBytes(raw []byte, version string) (Config, report.Report, error) {
	return Parse(&Bytes{b: raw}, version)
}

// RereadError: the bytes of a config, dropped while it was parsed, could
// not be read again (see Bytes).
type RereadError struct{ Err error }

func (e *RereadError) Error() string { return e.Err.Error() }
func (e *RereadError) Unwrap() error { return e.Err }

// validated is parse, and for a config of an older spec than the newest,
// validation with the newest one's rules (see Parse).
func validated(parse func([]byte) (Config, report.Report, error), raw []byte, version string) (Config, report.Report, error) {
	cfg, rpt, err := parse(raw)
	if err != nil || version == MaxVersion.String() {
		return cfg, rpt, err
	}
	if r := validate.ValidateWithContext(cfg, nil); r.IsFatal() {
		return Config{}, r, ignerrors.ErrInvalid
	}
	// Ignition's semver reading takes "3.6.00" as 3.6.0 and keeps the
	// string as written: say which spec the config now is in.
	cfg.Ignition.Version = MaxVersion.String()
	return cfg, rpt, nil
}

// Quick reports whether the quick path decodes raw, a config declaring
// version, without Ignition's own path: for the tests that prove it is
// Ignition's, and that it is taken.
func Quick(raw []byte, version string) bool {
	s := lookup(version)
	if s == nil {
		return false
	}
	_, rpt, ok := s.quick(&Bytes{b: raw})
	return ok || rpt.IsFatal()
}

// IgnitionParse is Parse without the quick path, made of Ignition's
// functions only: ParseCompatibleVersion, and for a config of an older
// spec the newest spec's ValidateWithContext (see Parse). It is the
// oracle of the tests.
func IgnitionParse(raw []byte, version string) (Config, report.Report, error) {
	return validated(ParseCompatibleVersion, raw, version)
}
