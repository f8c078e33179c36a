package desired

import (
	"github.com/coreos/ignition/v2/config/v3_0"
	"github.com/coreos/ignition/v2/config/v3_1"
	tr31 "github.com/coreos/ignition/v2/config/v3_1/translate"
	"github.com/coreos/ignition/v2/config/v3_2"
	tr32 "github.com/coreos/ignition/v2/config/v3_2/translate"
	"github.com/coreos/ignition/v2/config/v3_3"
	tr33 "github.com/coreos/ignition/v2/config/v3_3/translate"
	"github.com/coreos/ignition/v2/config/v3_4"
	tr34 "github.com/coreos/ignition/v2/config/v3_4/translate"
	v3 "github.com/coreos/ignition/v2/config/v3_5"
	tr35 "github.com/coreos/ignition/v2/config/v3_5/translate"
	"github.com/coreos/ignition/v2/config/v3_5/types"
	"github.com/coreos/vcontext/report"
)

// specParser returns the parser of one spec version: Ignition's Parse of
// that spec, then its Translate up to 3.5.0; nil for a version it does not
// know (Ignition's own path then reports it).
//
// It is what v3_5.ParseCompatibleVersion does once it knows the version; but
// that reads the version again at every spec it passes (a JSON scan of the
// whole config each: 9% of a load at 10,000 files), when asMachineConfig
// has read it already.
func specParser(version string) func([]byte) (types.Config, report.Report, error) {
	switch version {
	case "3.5.0":
		return v3.Parse
	case "3.4.0":
		return translated(v3_4.Parse, tr35.Translate)
	case "3.3.0":
		return translated(translated(v3_3.Parse, tr34.Translate), tr35.Translate)
	case "3.2.0":
		return translated(translated(translated(v3_2.Parse, tr33.Translate), tr34.Translate), tr35.Translate)
	case "3.1.0":
		return translated(translated(translated(translated(v3_1.Parse, tr32.Translate), tr33.Translate), tr34.Translate), tr35.Translate)
	case "3.0.0":
		return translated(translated(translated(translated(translated(v3_0.Parse, tr31.Translate), tr32.Translate), tr33.Translate), tr34.Translate), tr35.Translate)
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
