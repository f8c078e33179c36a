// Package format tells which reader reads a config file, from its name
// and its first bytes, without reading what it declares. A file named as
// Ignition's config cache (discover.IsCacheName) is read as one;
// otherwise, as Ignition 2.27 takes a Butane config where it takes an
// Ignition one (Ignition JSON first):
//   - a *.bu file is Butane unless it is Ignition JSON (then it is read as
//     one, as Ignition's Parse would);
//   - a *.yaml or *.yml file is Butane when it carries `variant:` and
//     `version:` and is not a MachineConfig (`kind: MachineConfig`), else
//     it must be a MachineConfig, one YAML document (YAMLToJSON);
//   - JSON is a MachineConfig by its kind (or the MCD's currentconfig's
//     shape), else an Ignition config: the MachineConfig reader's to tell
//     (machineconfig.Detect), as it keeps what it decoded to tell it.
//
// It is a stage of its own, below every reader, so that deciding a
// file's format links no reader (Butane's translator least of all), and
// the decision's shortcuts (blockRootKeys) are tested against the full
// decoding in one place.
package format

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"

	"sigs.k8s.io/yaml"

	"github.com/drift-monitor/drift-monitor/internal/desired/configerr"
	"github.com/drift-monitor/drift-monitor/internal/desired/discover"
)

// IsYAML: the file's name says it is YAML (a MachineConfig or Butane).
func IsYAML(file string) bool {
	ext := filepath.Ext(file)
	return ext == ".yaml" || ext == ".yml"
}

// YAMLToJSON decodes the one YAML document of file.
func YAMLToJSON(file string, raw []byte) ([]byte, error) {
	if n := Documents(raw); n > 1 {
		// yaml.YAMLToJSON would keep the first and drop the rest silently.
		return nil, &configerr.LoadError{File: file, Err: fmt.Errorf("holds %d YAML documents; put one MachineConfig in each file", n)}
	}
	if j, ok := plainYAMLToJSON(raw); ok {
		return j, nil // what yaml.YAMLToJSON gives, without go-yaml (yamlfast.go)
	}
	j, err := yaml.YAMLToJSON(raw)
	if err != nil {
		le := &configerr.LoadError{File: file, Err: fmt.Errorf("invalid YAML: %w", err)}
		configerr.YAMLPosition(le, raw)
		return nil, le
	}
	return j, nil
}

// Documents counts the documents of a YAML stream that hold more than
// comments, directives and white space. Document markers ("---", "...")
// stand at the start of a line, where no scalar's content can.
func Documents(raw []byte) int {
	n, content := 0, false
	for line := range bytes.SplitSeq(raw, []byte("\n")) { // the lines of a large file, none kept
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

// IsButane says whether the fragment named file, with bytes raw, is a
// Butane config (see the package's doc).
func IsButane(file string, raw []byte) bool {
	switch filepath.Ext(file) {
	case discover.ButaneExt:
		return !isIgnitionJSON(raw)
	case ".yaml", ".yml":
		if Documents(raw) > 1 {
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
