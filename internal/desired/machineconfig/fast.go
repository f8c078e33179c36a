package machineconfig

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"path/filepath"
	"strings"

	"github.com/coreos/vcontext/report"

	"github.com/drift-monitor/drift-monitor/internal/desired/configerr"
	"github.com/drift-monitor/drift-monitor/internal/desired/ignition"
	types "github.com/drift-monitor/drift-monitor/internal/ignspec"
)

// The MachineConfig fast path: a MachineConfig of plain shape read without
// decoding spec.config twice.
//
// Detect's reading (json.Unmarshal into Object) scans and
// copies the whole of spec.config, and ignition.ConfigVersion scans it again, before
// the quick path (ignspec) decodes it: at 10,000 files two fifths of a cold
// load, and a copy of the config alive through its validation.
// Plain finds the members with a key scanner instead, decodes
// the small ones as encoding/json would, and hands spec.config on as raw's
// own bytes. It answers only where the result is, by construction, the one
// json.Unmarshal gives: every key it reads spelt exactly and once, every
// value it skips checked by json.Valid. Anything else (a key of another
// case, a repeated field, a syntax error, a value of the wrong type) is
// not ok, and Detect decodes as before, with its errors.
//
// Repeated keys: our decoder, encoding/json, keeps the last; so does the
// API server's, sigs.k8s.io/json, which also matches keys case-sensitively
// and reports a repeat under strict field validation (kubernetes
// vendor/sigs.k8s.io/json/README.md, UnmarshalCaseSensitivePreserveInts and
// UnmarshalStrict). The fast path leaves them to encoding/json.

// fastMachineConfig: Detect and the MachineConfig branch of
// the loader's dispatch take the fast path; the tests turn it off to compare.
var fastMachineConfig = true

// SlowPath turns the fast path off until restore is called: for the tests
// and benchmarks that compare the two.
func SlowPath() (restore func()) {
	fastMachineConfig = false
	return func() { fastMachineConfig = true }
}

// machineConfigKeys are the keys of a MachineConfig Detect reads
// (Object's json names), by the object they are in.
var machineConfigKeys = map[string][]string{
	"":     {"kind", "apiVersion", "spec", "ignition"}, // ignition: the probe's
	"spec": {"config", "kernelArguments", "osImageURL", "kernelType", "extensions", "fips"},
}

// Plain is Detect of raw when raw is a MachineConfig
// (kind: MachineConfig, or the MCD's currentconfig: no kind, a spec holding
// a config) of plain shape (see above): then ok, and mc is what
// Detect returns, mc.Spec.Config sharing raw's bytes. The tests hold it
// to Detect's decoding.
func Plain(raw []byte) (mc Object, ok bool) {
	if !fastMachineConfig {
		return Object{}, false
	}
	var kind, spec, config bool
	ok = plainObject(raw, "", func(name string, v []byte) bool {
		switch name {
		case "kind":
			kind = true
			return v[0] == '"' && json.Unmarshal(v, &mc.Kind) == nil && mc.Kind == "MachineConfig"
		case "apiVersion":
			return json.Unmarshal(v, &mc.APIVersion) == nil
		case "spec":
			spec = true
			return v[0] == '{' && plainSpec(v, &mc, &config)
		}
		return false // ignition: an Ignition config, or the probe decides
	})
	// The currentconfig's shape (Probe): its spec holds a config.
	if !ok || (!kind && !(spec && config)) {
		return Object{}, false
	}
	return mc, true
}

// plainSpec reads the members of a MachineConfig's spec into mc; config
// says whether it holds one.
func plainSpec(raw []byte, mc *Object, config *bool) bool {
	s := &mc.Spec
	return plainObject(raw, "spec", func(name string, v []byte) bool {
		switch name {
		case "config":
			// The quick path decodes it; Valid first, so that a syntax
			// error in it is reported as Detect reports it.
			*config = true
			s.Config = v
			return json.Valid(v)
		case "kernelArguments":
			return json.Unmarshal(v, &s.KernelArguments) == nil
		case "osImageURL":
			return json.Unmarshal(v, &s.OSImageURL) == nil
		case "kernelType":
			return json.Unmarshal(v, &s.KernelType) == nil
		case "extensions":
			return json.Unmarshal(v, &s.Extensions) == nil
		case "fips":
			return json.Unmarshal(v, &s.FIPS) == nil
		}
		return false
	})
}

// plainObject walks the members of raw, the object of machineConfigKeys
// named object: read, with decode, the value of each key read there,
// spelt exactly and once; and check the others' with json.Valid, as
// encoding/json checks what it skips.
func plainObject(raw []byte, object string, decode func(name string, v []byte) bool) bool {
	seen := map[string]bool{}
	return types.PlainMembers(raw, func(key, v []byte) bool {
		name, known := knownKey(object, key)
		if !known {
			return json.Valid(v)
		}
		if name != string(key) || seen[name] {
			return false
		}
		seen[name] = true
		return decode(name, v)
	})
}

// knownKey is the name among the keys read in object (machineConfigKeys)
// that encoding/json matches key with: ASCII case folded, which is all of
// its folding for the plain ASCII keys PlainMembers gives.
func knownKey(object string, key []byte) (string, bool) {
	for _, n := range machineConfigKeys[object] {
		if strings.EqualFold(string(key), n) {
			return n, true
		}
	}
	return "", false
}

// specConfigVersion is ignition.ConfigVersion of a MachineConfig's spec.config,
// which encoding/json has found valid: without a decoder when the key
// scanner can tell (ignspec.PlainIgnitionVersion reads what ignition.ConfigVersion's
// decoding reads, on valid JSON).
func specConfigVersion(raw []byte) string {
	if v, ok := types.PlainIgnitionVersion(raw); ok && fastMachineConfig {
		return v
	}
	return ignition.ConfigVersion(raw)
}

// parseSpecConfig is ignspec.ParseBytes of mc's spec.config, declaring
// version; raw is the file's bytes (of a JSON file, as read), which hold it.
// With reread (the dispatch's), a JSON file's spec.config is parsed as an
// Ignition config file is: the parse may let the file's bytes go
// (ignspec.Bytes: the lean decoding too, a large config's sources copied out
// of the file read again as a stream), and mc.Spec.Config is then nil,
// which nothing reads when the parse has nothing to report: the bytes and
// the config decoded from them are not both alive through its validation,
// the load's memory bound. Where the parse reports something,
// mc.Spec.Config holds the bytes again (the file read again, and refused if
// it changed).
func parseSpecConfig(raw []byte, mc *Object, version, file string, reread types.Reopen) (types.Config, report.Report, error) {
	if ext := filepath.Ext(file); ext == ".yaml" || ext == ".yml" {
		// raw is the JSON converted from the file, in memory only: read
		// again from there, never let go, but decoded lean all the same
		// (the sources copied out of raw, not decoded by encoding/json).
		held := raw
		reread = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(held)), nil }
	}
	from, found := configAt(raw, mc.Spec.Config)
	if reread == nil || !fastMachineConfig || !found {
		return types.ParseBytes(mc.Spec.Config, version)
	}
	src := types.NewRangeBytes(raw, from, from+len(mc.Spec.Config), reread)
	mc.Spec.Config, raw = nil, nil // src holds them, and may let them go
	cfg, rpt, err := types.Parse(src, version)
	if err == nil && len(rpt.Entries) == 0 {
		return cfg, rpt, nil
	}
	b, rerr := src.Bytes() // no read when the parse has read them again
	if rerr != nil {
		if le := (*configerr.LoadError)(nil); errors.As(rerr, &le) {
			rerr = le.Err // the caller names the file
		}
		return types.Config{}, report.Report{}, rerr
	}
	mc.Spec.Config = b
	return cfg, rpt, err
}

// configAt is where config, a MachineConfig's spec.config, lies in raw, the
// bytes it was found in: Plain hands on raw's own bytes; Detect's
// encoding/json copies them (json.RawMessage: the value's bytes as they
// are), and any place of raw holding the same bytes is as good.
func configAt(raw, config []byte) (int, bool) {
	if len(config) == 0 {
		return 0, false
	}
	if from := cap(raw) - cap(config); from >= 0 && from+len(config) <= len(raw) && &raw[from] == &config[0] {
		return from, true
	}
	from := bytes.Index(raw, config)
	return from, from >= 0
}
