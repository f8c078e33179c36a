package desired

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"

	butane "github.com/coreos/ignition/v2/butane/config"
	butanecommon "github.com/coreos/ignition/v2/butane/config/common"
	"github.com/coreos/vcontext/report"
	"github.com/drift-monitor/drift-monitor/internal/desired/configerr"
	"github.com/drift-monitor/drift-monitor/internal/desired/discover"
	"github.com/drift-monitor/drift-monitor/internal/desired/ignition"
	"github.com/drift-monitor/drift-monitor/internal/desired/parsed"
	"sigs.k8s.io/yaml"
)

// Butane configs as fragments.
//
// Ignition 2.27 takes a Butane config where it takes an Ignition one
// (v2.27.0 config/config.go, Parse): Ignition JSON first, and only if that
// fails butane/config.TranslateBytes with zero TranslateBytesOptions (no
// files directory, no Raw), whose Ignition JSON it then parses. A fragment
// is read the same way, with the same translator of the same module, so
// that a host is checked against what Ignition applied:
//
//   - a *.bu file is Butane unless it is Ignition JSON (then it is read as
//     one, as Parse would);
//   - a *.yaml or *.yml file is Butane when it carries `variant:` and
//     `version:` and is not a MachineConfig (`kind: MachineConfig`);
//   - every variant Butane knows is translated (fcos, flatcar, r4e, fiot,
//     openshift). For openshift, TranslateBytes without Raw yields a
//     MachineConfig (butane/config/openshift/v4_N/translate.go,
//     ToConfigBytes: TranslateBytesYAML, "ToMachineConfig4_N"), which is
//     read as the MachineConfig fragment it is — Ignition's Parse cannot
//     read it, but the machine-config daemon writes such a config;
//   - with no files directory, Butane refuses `local:` contents and
//     `trees` (butane/base/util/file.go, ReadLocalFile; base/v0_N
//     translate.go: ErrNoFilesDir): the fragment must be self-contained,
//     and the error says so;
//   - an error of Butane's names the file, and the line and column Butane
//     gives (its report entries carry the YAML position).

// butaneFields are the fields that say whether a YAML file is Butane.
type butaneFields struct {
	Variant string `json:"variant"`
	Version string `json:"version"`
	Kind    string `json:"kind"`
}

// isButane says whether the fragment named file, with bytes raw, is a
// Butane config (see above).
func isButane(file string, raw []byte) bool {
	switch filepath.Ext(file) {
	case discover.ButaneExt:
		return !isIgnitionJSON(raw)
	case ".yaml", ".yml":
		if yamlDocuments(raw) > 1 {
			return false // refused as it is, with the count
		}
		if keys, ok := blockRootKeys(raw); ok && !slices.ContainsFunc(keys, func(k []byte) bool { return bytes.EqualFold(k, []byte("variant")) }) {
			// No variant, so no Butane: what the decoding below would say,
			// without a YAML parse of the whole file (a MachineConfig is
			// then parsed again to be read).
			return false
		}
		var f butaneFields
		if yaml.Unmarshal(raw, &f) != nil {
			return false // the MachineConfig path says what is wrong
		}
		return f.Variant != "" && f.Version != "" && f.Kind != "MachineConfig"
	}
	return false
}

// blockRootKeys returns the keys of the YAML document raw when it is a
// block mapping at column 0 whose every key is a plain scalar of letters,
// digits and _.-/ followed by a colon: as `oc get -o yaml` and hand-written
// MachineConfigs are. Such a mapping's keys all start a line at column 0;
// what else starts a line there is a comment, a document marker, or the
// rest of a quoted scalar, which may pass for a key (that only makes the
// caller parse) or be refused. So when ok, raw's root mapping has no key
// that is not in keys. false for every other shape: flow style, an
// indented root, tags, anchors, aliases, merge, quoted or explicit keys,
// directives, tabs, a byte-order mark, and the line breaks YAML knows
// beside LF and CRLF (a lone CR, NEL, LS, PS: go-yaml's is_break), which a
// scan by LF would not see start a line.
func blockRootKeys(raw []byte) (keys [][]byte, ok bool) {
	if bytes.Count(raw, []byte("\r")) != bytes.Count(raw, []byte("\r\n")) {
		return nil, false
	}
	for _, brk := range []string{"\u0085", "\u2028", "\u2029"} {
		if bytes.Contains(raw, []byte(brk)) {
			return nil, false
		}
	}
	first := true
	for len(raw) > 0 {
		line := raw
		if i := bytes.IndexByte(raw, '\n'); i >= 0 {
			line, raw = raw[:i], raw[i+1:]
		} else {
			raw = nil
		}
		line = bytes.TrimSuffix(line, []byte("\r"))
		if len(line) == 0 || line[0] == '#' {
			continue
		}
		if rest, marker := documentMarker(line); marker {
			if hasContent(rest) {
				return nil, false
			}
			continue
		}
		if line[0] == ' ' {
			if first && hasContent(line) {
				return nil, false // the root is indented, or not a mapping
			}
			continue
		}
		k, ok := plainKey(line)
		if !ok {
			return nil, false
		}
		keys, first = append(keys, k), false
	}
	return keys, !first
}

// plainKey is the key of a line "KEY:" or "KEY: ..." whose KEY is letters,
// digits and _.-/ and starts with a letter or digit.
func plainKey(line []byte) ([]byte, bool) {
	for i, c := range line {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case i > 0 && (c == '_' || c == '.' || c == '-' || c == '/'):
		case i > 0 && c == ':':
			if i+1 == len(line) || line[i+1] == ' ' {
				return line[:i], true
			}
			return nil, false
		default:
			return nil, false
		}
	}
	return nil, false
}

// isIgnitionJSON: raw is a JSON object with an ignition.version, as
// Ignition's Parse tries first.
func isIgnitionJSON(raw []byte) bool {
	var v struct {
		Ignition struct {
			Version *string `json:"version"`
		} `json:"ignition"`
	}
	return json.Unmarshal(raw, &v) == nil && v.Ignition.Version != nil
}

// errButaneFilesDir replaces Butane's own message for a local file: its
// advice (-d/--files-dir) is for the butane command, not for a fragment.
var errButaneFilesDir = errors.New("local file contents (local:, trees) are not supported: " +
	"a fragment must be self-contained; inline the contents, or translate it with butane --files-dir and install the .ign")

// parseButane translates the Butane config raw with Ignition's module and
// parses the result as the Ignition config or MachineConfig it is; errors
// name file.
func parseButane(file string, raw []byte, sup ignition.Supplies) (parsed.Fragment, error) {
	out, rpt, err := butane.TranslateBytes(raw, butanecommon.TranslateBytesOptions{})
	if err != nil {
		return parsed.Fragment{File: file}, butaneError(file, raw, rpt, err)
	}
	if !bytes.HasPrefix(bytes.TrimSpace(out), []byte("{")) {
		// openshift: a MachineConfig in YAML.
		if out, err = yaml.YAMLToJSON(out); err != nil {
			return parsed.Fragment{File: file}, &configerr.LoadError{File: file, Err: fmt.Errorf("reading Butane's MachineConfig: %w", err)}
		}
	}
	// Parsed as JSON under a name of its own, so that nothing of the file's
	// extension applies; its errors then point into Butane's output, not
	// into file: they keep their JSON path and lose their position.
	frag, err := parseFragment(file+".json", out, sup, false, nil)
	frag.File = file
	frag.Warnings = append(frag.Warnings, butaneWarnings(rpt)...)
	if le := (*configerr.LoadError)(nil); errors.As(err, &le) {
		le.File, le.Line, le.Column = file, 0, 0
		le.Err = fmt.Errorf("in the config Butane translated it to: %w", le.Err)
		return frag, le
	}
	return frag, err
}

// butaneError is the LoadError for a failed translation: the first error of
// Butane's report, at its line and column in raw, or Butane's own error.
func butaneError(file string, raw []byte, rpt report.Report, err error) *configerr.LoadError {
	le := ignition.ReportError(file, raw, rpt, err, true)
	if le.Line == 0 {
		// A syntax error, or a value of the wrong type: Butane's report is
		// empty, and go-yaml's message names a line (for a syntax error,
		// one that may not be the error's).
		configerr.YAMLPosition(le, raw)
	}
	if le.Err.Error() == butanecommon.ErrNoFilesDir.Error() {
		le.Err = errButaneFilesDir
	}
	le.Err = butanePrefixed{le.Err}
	return le
}

// butanePrefixed says that err is Butane's.
type butanePrefixed struct{ err error }

func (e butanePrefixed) Error() string { return "Butane: " + e.err.Error() }
func (e butanePrefixed) Unwrap() error { return e.err }

// butaneWarnings are the warnings of Butane's report, with their lines.
func butaneWarnings(rpt report.Report) []string {
	var out []string
	for _, e := range rpt.Entries {
		if e.Kind != report.Warn {
			continue
		}
		w := "Butane: " + e.Message
		if e.Marker.StartP != nil {
			w = fmt.Sprintf("line %d column %d: %s", e.Marker.StartP.Line, e.Marker.StartP.Column, w)
		}
		out = append(out, w)
	}
	return out
}
