// Package ignition reads an Ignition config as Ignition reads it, through
// ignspec: parsed and validated into the newest spec, its child configs
// resolved (data URLs, and local copies of remote ones: nothing is
// fetched), and what Ignition's validation lets through but no writer
// could apply refused (contents that do not decode, negative ids, account
// values that are not one field). It reads Ignition's config cache too,
// and the special mode bits an older spec declares, and turns Ignition's
// reports into LoadErrors with their positions. The MachineConfig and
// Butane readers read the Ignition config they carry through it: it is the
// one reading of an Ignition config, below both, so that a config reads
// the same whatever carries it.
package ignition

import (
	"errors"
	"fmt"
	"strings"

	ignerrors "github.com/coreos/ignition/v2/config/shared/errors"

	"github.com/coreos/vcontext/report"
	"github.com/drift-monitor/drift-monitor/internal/desired/configerr"
	"github.com/drift-monitor/drift-monitor/internal/desired/discover"
	"github.com/drift-monitor/drift-monitor/internal/desired/parsed"
	types "github.com/drift-monitor/drift-monitor/internal/ignspec"
)

// ParseFile reads raw as an Ignition config of the given version (or
// Ignition's config cache), with its children resolved unless it is the cache.
func ParseFile(file string, raw []byte, version string, sup Supplies, cache bool, reread types.Reopen) (parsed.Fragment, error) {
	frag := parsed.Fragment{File: file}
	cfg, rpt, src, raw, err := decodeIgnition(file, raw, version, cache, reread)
	if err != nil {
		return frag, err
	}
	frag.Config = cfg
	frag.Warnings = Warnings(rpt)
	frag.Validated = true
	if WarnsSpecialBits(rpt) {
		if src != nil {
			if raw, err = src.Bytes(); err != nil {
				return frag, &configerr.LoadError{File: file, Err: err}
			}
		}
		frag.SpecialBits = DeclaredSpecialBits(raw)
	}
	switch {
	case cache && cfg.Ignition.Config.Replace.Source != nil:
		return frag, &configerr.LoadError{File: file, Context: "$.ignition.config.replace", Err: ErrCacheReplace}
	case cache:
		// Its children are merged in already (see cache.go).
	default:
		if err := ResolveChildren(&frag, sup); err != nil {
			return frag, &configerr.LoadError{File: file, Err: err}
		}
	}
	return frag, CheckDecodable(file, frag.Config, "", 0)
}

// decodeIgnition parses and validates raw. Unless cache, it hands raw to a
// types.Bytes (src) that may let it go; raw is then returned nil, and read
// again from src only for a report that needs positions.
func decodeIgnition(file string, raw []byte, version string, cache bool, reread types.Reopen) (cfg types.Config, rpt report.Report, src *types.Bytes, _ []byte, err error) {
	if cache {
		cfg, rpt, err = types.ParseCache(raw, version)
	} else {
		src = types.NewBytes(raw, reread)
		raw = nil // src holds them, and may let them go
		cfg, rpt, err = types.Parse(src, version)
		if err != nil {
			var rerr error
			if re := (*types.RereadError)(nil); errors.As(err, &re) {
				rerr = re.Err
			} else {
				raw, rerr = src.Bytes() // no read when the parse has read them again
			}
			if rerr != nil {
				if le := (*configerr.LoadError)(nil); errors.As(rerr, &le) {
					return cfg, rpt, src, nil, le // the read's own error names the file
				}
				return cfg, rpt, src, nil, &configerr.LoadError{File: file, Err: rerr}
			}
		}
	}
	if err != nil {
		le := ReportError(file, raw, rpt, err, true)
		if !cache && strings.HasSuffix(version, types.ExperimentalSuffix) && errors.Is(err, ignerrors.ErrUnknownVersion) {
			le.Err = fmt.Errorf("%w; Ignition's config cache (/run/ignition.json) in an experimental spec is read from a file named *%s",
				le.Err, discover.CacheSuffix)
		}
		return cfg, rpt, src, raw, le
	}
	return cfg, rpt, src, raw, nil
}

// parseIgnition parses an Ignition config of the stable specs this tool
// supports, declaring version (the caller has read it), into the newest
// (ignspec.Parse). Experimental specs are refused as unknown versions (but
// see ParseCache).
func parseIgnition(raw []byte, version string) (types.Config, report.Report, error) {
	return types.ParseBytes(raw, version)
}

func Warnings(rpt report.Report) []string {
	var w []string
	for _, e := range rpt.Entries {
		if !e.Kind.IsFatal() {
			w = append(w, e.String())
		}
	}
	return w
}
