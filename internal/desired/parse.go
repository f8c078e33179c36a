package desired

import (
	"errors"

	"github.com/drift-monitor/drift-monitor/internal/desired/butane"
	"github.com/drift-monitor/drift-monitor/internal/desired/configerr"
	"github.com/drift-monitor/drift-monitor/internal/desired/discover"
	"github.com/drift-monitor/drift-monitor/internal/desired/format"
	"github.com/drift-monitor/drift-monitor/internal/desired/ignition"
	"github.com/drift-monitor/drift-monitor/internal/desired/machineconfig"
	"github.com/drift-monitor/drift-monitor/internal/desired/parsed"
	types "github.com/drift-monitor/drift-monitor/internal/ignspec"
)

// Reading one config file: format detection (package format) says
// whether it is Butane or YAML, the MachineConfig reader whether JSON is a
// MachineConfig (machineconfig.Detect, which hands on what it decoded), and
// the file goes to its reader.

// loadFile reads and parses one config file: an Ignition config (spec 3.0.0 to
// 3.6.0, translated to 3.6.0) or a MachineConfig in YAML or JSON.
func loadFile(file string) (parsed.Fragment, error) {
	raw, err := discover.Files{Explicit: true}.ReadAll([]string{file})
	if err != nil {
		return parsed.Fragment{}, err
	}
	return Parse(file, raw[0])
}

// Parse parses the bytes of a config named file (the name picks YAML or JSON
// and appears in errors). Its remote child configs are never fetched.
func Parse(file string, raw []byte) (parsed.Fragment, error) {
	return parse(file, raw, ignition.Supplies{})
}

// ParseCache parses raw as Ignition's config cache, whatever the name of
// file, which appears in errors.
func ParseCache(file string, raw []byte) (parsed.Fragment, error) {
	return parseFragment(file, raw, ignition.Supplies{}, true, nil)
}

// parse is Parse with the local copies of remote children.
func parse(file string, raw []byte, sup ignition.Supplies) (parsed.Fragment, error) {
	return parseFragment(file, raw, sup, discover.IsCacheName(file), nil)
}

// parseFragment is parse; cache says whether raw is Ignition's config cache
// (the Ignition reader's cache.go). reread, if not nil, reads raw again: the
// parse may then let raw go once decoded (see ignspec.Bytes), and the
// caller should hold no reference to it either.
//
// It only dispatches: a Butane config (package butane), an Ignition config
// (ignition.ParseFile) and a MachineConfig (machineconfig.Parse) are three
// readings of a file that share no step but the YAML decoding.
func parseFragment(file string, raw []byte, sup ignition.Supplies, cache bool, reread types.Reopen) (parsed.Fragment, error) {
	if !cache && format.IsButane(file, raw) {
		return butane.Parse(file, raw, func(file string, raw []byte) (parsed.Fragment, error) {
			return parseFragment(file, raw, sup, false, nil)
		})
	}
	isYAML := format.IsYAML(file)
	if isYAML {
		j, err := format.YAMLToJSON(file, raw)
		if err != nil {
			return parsed.Fragment{File: file}, err
		}
		raw = j
	}
	mc, isMC, version, err := machineconfig.Detect(raw)
	if err != nil {
		return parsed.Fragment{File: file}, &configerr.LoadError{File: file, Err: err}
	}
	switch {
	case isMC && cache:
		return parsed.Fragment{File: file}, &configerr.LoadError{File: file, Err: errors.New("an Ignition config cache holds an Ignition config, not a MachineConfig")}
	case isMC:
		return machineconfig.Parse(file, raw, &mc, sup, reread)
	case isYAML:
		return parsed.Fragment{File: file}, &configerr.LoadError{File: file, Err: errors.New("a YAML file must hold a MachineConfig (kind: MachineConfig) or a Butane config (variant: and version:)")}
	}
	return ignition.ParseFile(file, raw, version, sup, cache, reread)
}
