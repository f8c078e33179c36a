package desired

import (
	"github.com/coreos/ignition/v2/config/v3_0"
	t30 "github.com/coreos/ignition/v2/config/v3_0/types"
	"github.com/coreos/ignition/v2/config/v3_1"
	tr31 "github.com/coreos/ignition/v2/config/v3_1/translate"
	t31 "github.com/coreos/ignition/v2/config/v3_1/types"
	"github.com/coreos/ignition/v2/config/v3_2"
	tr32 "github.com/coreos/ignition/v2/config/v3_2/translate"
	t32 "github.com/coreos/ignition/v2/config/v3_2/types"
	"github.com/coreos/ignition/v2/config/v3_3"
	tr33 "github.com/coreos/ignition/v2/config/v3_3/translate"
	t33 "github.com/coreos/ignition/v2/config/v3_3/types"
	"github.com/coreos/ignition/v2/config/v3_4"
	tr34 "github.com/coreos/ignition/v2/config/v3_4/translate"
	t34 "github.com/coreos/ignition/v2/config/v3_4/types"
	"github.com/coreos/ignition/v2/config/v3_5"
	tr35 "github.com/coreos/ignition/v2/config/v3_5/translate"
	t35 "github.com/coreos/ignition/v2/config/v3_5/types"
	v3 "github.com/coreos/ignition/v2/config/v3_6"
	tr36 "github.com/coreos/ignition/v2/config/v3_6/translate"
	"github.com/coreos/ignition/v2/config/v3_6/types"
	"github.com/coreos/vcontext/report"
)

// specParser returns the parser of one spec version: Ignition's Parse of
// that spec, then its Translate up to 3.6.0; nil for a version it does not
// know (Ignition's own path then reports it).
//
// It is what v3_6.ParseCompatibleVersion does once it knows the version; but
// that reads the version again at every spec it passes (a JSON scan of the
// whole config each: 9% of a load at 10,000 files), when asMachineConfig
// has read it already.
func specParser(version string) func([]byte) (types.Config, report.Report, error) {
	return ignitionParsers.forVersion(version)
}

// specDecoders decode a config into the types of each stable spec.
type specDecoders struct {
	v30 func([]byte) (t30.Config, report.Report, error)
	v31 func([]byte) (t31.Config, report.Report, error)
	v32 func([]byte) (t32.Config, report.Report, error)
	v33 func([]byte) (t33.Config, report.Report, error)
	v34 func([]byte) (t34.Config, report.Report, error)
	v35 func([]byte) (t35.Config, report.Report, error)
	v36 func([]byte) (types.Config, report.Report, error)
}

// ignitionParsers are Ignition's own Parse of each spec.
var ignitionParsers = specDecoders{v3_0.Parse, v3_1.Parse, v3_2.Parse, v3_3.Parse, v3_4.Parse, v3_5.Parse, v3.Parse}

// forVersion is the decoder of version followed by Ignition's translations
// up to 3.6.0; nil for a version that is no stable spec.
func (d specDecoders) forVersion(version string) func([]byte) (types.Config, report.Report, error) {
	switch version {
	case "3.6.0":
		return d.v36
	case "3.5.0":
		return translated(d.v35, tr36.Translate)
	case "3.4.0":
		return translated(translated(d.v34, tr35.Translate), tr36.Translate)
	case "3.3.0":
		return translated(translated(translated(d.v33, tr34.Translate), tr35.Translate), tr36.Translate)
	case "3.2.0":
		return translated(translated(translated(translated(d.v32, tr33.Translate), tr34.Translate), tr35.Translate), tr36.Translate)
	case "3.1.0":
		return translated(translated(translated(translated(translated(d.v31, tr32.Translate), tr33.Translate), tr34.Translate), tr35.Translate), tr36.Translate)
	case "3.0.0":
		return translated(translated(translated(translated(translated(translated(d.v30, tr31.Translate), tr32.Translate), tr33.Translate), tr34.Translate), tr35.Translate), tr36.Translate)
	}
	return nil
}

// translated is parse followed by translate, on success.
func translated[Old, New any](parse func([]byte) (Old, report.Report, error), translate func(Old) New) func([]byte) (New, report.Report, error) {
	return func(raw []byte) (New, report.Report, error) {
		old, r, err := parse(raw)
		if err != nil {
			var zero New
			return zero, r, err
		}
		return translate(old), r, nil
	}
}
