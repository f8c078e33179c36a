package desired

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"

	"github.com/drift-monitor/drift-monitor/internal/desired/butane"
	"github.com/drift-monitor/drift-monitor/internal/desired/configerr"
	"github.com/drift-monitor/drift-monitor/internal/desired/discover"
	"github.com/drift-monitor/drift-monitor/internal/desired/ignition"
	"github.com/drift-monitor/drift-monitor/internal/desired/machineconfig"
	"github.com/drift-monitor/drift-monitor/internal/desired/parsed"
	"sigs.k8s.io/yaml"
)

// Format detection: which reader reads a config file.
//
// A file named as Ignition's config cache (discover.IsCacheName) is read
// as one; otherwise, as Ignition 2.27 takes a Butane config where it takes
// an Ignition one (Ignition JSON first):
//   - a *.bu file is Butane unless it is Ignition JSON (then it is read as
//     one, as Ignition's Parse would);
//   - a *.yaml or *.yml file is Butane when it carries `variant:` and
//     `version:` and is not a MachineConfig (`kind: MachineConfig`), else
//     it must be a MachineConfig;
//   - JSON is a MachineConfig by its kind (or the MCD's currentconfig's
//     shape: machineconfig.Detect), else an Ignition config.

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
func parseFragment(file string, raw []byte, sup ignition.Supplies, cache bool, reread func() ([]byte, error)) (parsed.Fragment, error) {
	if !cache && isButane(file, raw) {
		return butane.Parse(file, raw, func(file string, raw []byte) (parsed.Fragment, error) {
			return parseFragment(file, raw, sup, false, nil)
		})
	}
	ext := filepath.Ext(file)
	isYAML := ext == ".yaml" || ext == ".yml"
	if isYAML {
		j, err := yamlToJSON(file, raw)
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
		return machineconfig.Parse(file, &mc, sup, reread)
	case isYAML:
		return parsed.Fragment{File: file}, &configerr.LoadError{File: file, Err: errors.New("a YAML file must hold a MachineConfig (kind: MachineConfig) or a Butane config (variant: and version:)")}
	}
	return ignition.ParseFile(file, raw, version, sup, cache, reread)
}

// yamlToJSON decodes the one YAML document of file.
func yamlToJSON(file string, raw []byte) ([]byte, error) {
	if n := yamlDocuments(raw); n > 1 {
		// YAMLToJSON would keep the first and drop the rest silently.
		return nil, &configerr.LoadError{File: file, Err: fmt.Errorf("holds %d YAML documents; put one MachineConfig in each file", n)}
	}
	j, err := yaml.YAMLToJSON(raw)
	if err != nil {
		le := &configerr.LoadError{File: file, Err: fmt.Errorf("invalid YAML: %w", err)}
		configerr.YAMLPosition(le, raw)
		return nil, le
	}
	return j, nil
}

// yamlDocuments counts the documents of a YAML stream that hold more than
// comments, directives and white space. Document markers ("---", "...")
// stand at the start of a line, where no scalar's content can.
func yamlDocuments(raw []byte) int {
	n, content := 0, false
	for _, line := range bytes.Split(raw, []byte("\n")) {
		if rest, ok := documentMarker(line); ok {
			if content {
				n++
			}
			content = hasContent(rest)
			continue
		}
		if !bytes.HasPrefix(line, []byte("%")) && hasContent(line) {
			content = true
		}
	}
	if content {
		n++
	}
	return n
}

func documentMarker(line []byte) (rest []byte, ok bool) {
	for _, m := range []string{"---", "..."} {
		if rest, found := bytes.CutPrefix(line, []byte(m)); found &&
			(len(rest) == 0 || rest[0] == ' ' || rest[0] == '\t' || rest[0] == '\r') {
			return rest, true
		}
	}
	return nil, false
}

func hasContent(line []byte) bool {
	t := bytes.TrimSpace(line)
	return len(t) > 0 && t[0] != '#'
}

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
