package format

import (
	"bytes"
	"encoding/json"
	"regexp"
)

// The YAML fast path: a MachineConfig in the YAML that `oc get -o yaml`
// and sigs.k8s.io/yaml's JSONToYAML write, turned into JSON without
// go-yaml, whose parser (a token and an event for every scalar, a map of
// interfaces for every object) took a second for a MachineConfig of
// 10,000 files.
//
// plainYAMLToJSON reads a small part of YAML: block mappings and block
// sequences indented by spaces, keys of plain words, plain scalars on one
// line, single-quoted scalars on one line, "" and double-quoted scalars
// without escapes, the empty flow collections [] and {}, and literal block
// scalars (| and |-) without indentation indicator. Anything else (a tab,
// a comment, an anchor, a tag, a flow collection, a multi-line plain or
// quoted scalar, keys out of order or repeated, a byte that is not
// printable ASCII, a document marker) is not ok, and YAMLToJSON asks
// sigs.k8s.io/yaml.
//
// What it answers is what sigs.k8s.io/yaml's YAMLToJSON gives, byte for
// byte: go-yaml v2's resolution of each plain scalar (resolve.go: a first
// byte outside "+-0123456789yYnNtTfFoO~." is a string; the words of
// resolveMap are booleans and null; a decimal integer without a sign or a
// leading zero is an int; a few shapes that begin with a digit are
// strings, checked against resolve's tries below; any other plain scalar
// is not ok), then encoding/json's Marshal of the objects, keys sorted:
// JSONToYAML writes them sorted (go-yaml's Marshal of a map sorts its
// keys), so the JSON is written as the YAML is read, without a tree, and a
// mapping whose keys are not in that order is not ok.
// TestPlainYAMLIsSigsYAML and FuzzPlainYAML hold it to YAMLToJSON.
func plainYAMLToJSON(raw []byte) ([]byte, bool) {
	if len(raw) == 0 || raw[len(raw)-1] != '\n' {
		return nil, false
	}
	for _, c := range raw {
		if (c < 0x20 || c > 0x7e) && c != '\n' {
			return nil, false
		}
	}
	p := yamlParser{b: raw, col: -1, out: make([]byte, 0, len(raw))}
	if in, content, more := p.peek(); !more || in != 0 || content[0] == '-' || !p.mapping(0) {
		return nil, false
	}
	if _, _, more := p.peek(); more {
		return nil, false
	}
	return p.out, true
}

// appendJSONString appends s as encoding/json's Marshal writes it: as it
// is, quoted, when it is printable ASCII without a byte Marshal escapes
// (a quote, a backslash, and <, > and & for HTML); else by Marshal.
func appendJSONString(out, s []byte) []byte {
	plain := true
	for _, c := range s {
		if c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			plain = false
			break
		}
	}
	if plain {
		out = append(out, '"')
		out = append(out, s...)
		return append(out, '"')
	}
	j, _ := json.Marshal(string(s)) // a string always marshals
	return append(out, j...)
}

type yamlParser struct {
	b   []byte
	out []byte // the JSON written so far
	i   int    // the start of the next line
	// col, when not negative, is where the next line's content starts: the
	// first key of a mapping that is a sequence's item ("- key: v").
	col int
}

// peek finds the next line that is not blank: its indentation and content
// (without the newline); more false at the end. A blank line (spaces only)
// is skipped.
func (p *yamlParser) peek() (indent int, content []byte, more bool) {
	for p.i < len(p.b) {
		end := p.i + bytes.IndexByte(p.b[p.i:], '\n')
		line := p.b[p.i:end]
		if p.col >= 0 {
			return p.col, line[p.col:], true
		}
		n := 0
		for n < len(line) && line[n] == ' ' {
			n++
		}
		if n < len(line) {
			return n, line[n:], true
		}
		p.i = end + 1
	}
	return 0, nil, false
}

// next steps over the line peek found.
func (p *yamlParser) next() {
	p.i += bytes.IndexByte(p.b[p.i:], '\n') + 1
	p.col = -1
}

// block writes the mapping or sequence whose lines are indented by indent.
func (p *yamlParser) block(indent int) bool {
	in, content, more := p.peek()
	if !more || in != indent {
		return false
	}
	if content[0] == '-' {
		return p.sequence(indent)
	}
	return p.mapping(indent)
}

func (p *yamlParser) sequence(indent int) bool {
	p.out = append(p.out, '[')
	for first := true; ; first = false {
		in, content, more := p.peek()
		if !more || in < indent || content[0] != '-' {
			// A line that is not an item ends the sequence: the next key
			// of the mapping it is a value of, at the same indentation.
			p.out = append(p.out, ']')
			return true
		}
		if in > indent {
			return false
		}
		if len(content) < 2 || content[1] != ' ' {
			return false // "-" alone, or "-x": not an item this reads
		}
		rest := content[2:]
		if len(rest) == 0 || rest[0] == ' ' {
			return false
		}
		if !first {
			p.out = append(p.out, ',')
		}
		if _, _, isKey := splitKey(rest); isKey {
			// "- key: v": a mapping whose keys are at indent+2.
			p.col = indent + 2
			if !p.mapping(indent + 2) {
				return false
			}
			continue
		}
		if !p.scalar(rest) {
			return false
		}
		p.next()
	}
}

func (p *yamlParser) mapping(indent int) bool {
	p.out = append(p.out, '{')
	var last []byte
	for first := true; ; first = false {
		in, content, more := p.peek()
		if !more || in < indent {
			p.out = append(p.out, '}')
			return true
		}
		if in > indent {
			return false
		}
		key, rest, isKey := splitKey(content)
		if !isKey || (!first && bytes.Compare(last, key) >= 0) {
			return false // out of order or repeated: not as JSONToYAML writes
		}
		last = key
		if !first {
			p.out = append(p.out, ',')
		}
		p.out = append(appendJSONString(p.out, key), ':')
		p.next()
		var ok bool
		switch {
		case len(rest) == 0:
			// The value is the block below, or a sequence at the key's
			// indentation; nothing: null.
			in, content, more := p.peek()
			switch {
			case more && in > indent:
				ok = p.block(in)
			case more && in == indent && content[0] == '-':
				ok = p.sequence(indent)
			default:
				p.out, ok = append(p.out, "null"...), true
			}
		case string(rest) == "|" || string(rest) == "|-":
			ok = p.literal(indent, rest[len(rest)-1] == '-')
		default:
			ok = p.scalar(rest)
		}
		if !ok {
			return false
		}
	}
}

// literal reads a literal block scalar's lines, below a key indented by
// indent; strip: "|-" (no final line break), else "|" (one kept).
func (p *yamlParser) literal(indent int, strip bool) bool {
	var text []byte
	at := -1 // the content's indentation, from its first line
	for p.i < len(p.b) {
		end := p.i + bytes.IndexByte(p.b[p.i:], '\n')
		line := p.b[p.i:end]
		n := 0
		for n < len(line) && line[n] == ' ' {
			n++
		}
		if n == len(line) { // blank
			if at < 0 || n > at {
				return false // before the first line, or spaces of content
			}
			text = append(text, '\n')
			p.i = end + 1
			continue
		}
		if n <= indent {
			break
		}
		if at < 0 {
			at = n
		}
		if n < at {
			return false
		}
		text = append(append(text, line[at:]...), '\n')
		p.i = end + 1
	}
	if at < 0 {
		return false
	}
	text = bytes.TrimRight(text, "\n")
	if !strip {
		text = append(text, '\n')
	}
	p.out = appendJSONString(p.out, text)
	return true
}

// splitKey splits "key: rest" or "key:" (a key of plain word bytes that
// go-yaml resolves as the string it is); isKey false for anything else.
func splitKey(content []byte) (key, rest []byte, isKey bool) {
	i := 0
	for i < len(content) && keyByte(content[i]) {
		i++
	}
	if i == 0 || i >= len(content) || content[i] != ':' {
		return nil, nil, false
	}
	key = content[:i]
	if isString, ok := plainScalar(key); !ok || !isString {
		return nil, nil, false
	}
	switch {
	case i+1 == len(content):
		return key, nil, true
	case content[i+1] != ' ':
		return nil, nil, false
	}
	rest = content[i+2:]
	if len(rest) > 0 && rest[0] == ' ' {
		return nil, nil, false
	}
	return key, rest, true
}

func keyByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '/' || c == '-' || c == '_'
}

// scalar writes a value on one line: [] and {}, a quoted scalar of the
// shapes read, or a plain scalar.
func (p *yamlParser) scalar(s []byte) bool {
	switch {
	case string(s) == "[]" || string(s) == "{}":
		p.out = append(p.out, s...)
		return true
	case s[0] == '\'':
		text, ok := singleQuoted(s)
		if ok {
			p.out = appendJSONString(p.out, text)
		}
		return ok
	case s[0] == '"':
		// Without escapes: its value is its bytes.
		if len(s) < 2 || s[len(s)-1] != '"' || bytes.ContainsAny(s[1:len(s)-1], `"\`) {
			return false
		}
		p.out = appendJSONString(p.out, s[1:len(s)-1])
		return true
	}
	isString, ok := plainScalar(s)
	switch {
	case !ok:
		return false
	case isString:
		p.out = appendJSONString(p.out, s)
	case s[0] >= '0' && s[0] <= '9':
		p.out = append(p.out, s...) // decimal: JSON writes the int so
	default:
		p.out = append(p.out, resolveWords[string(s)]...)
	}
	return true
}

// singleQuoted reads a single-quoted scalar on one line, in which two
// quotes stand for one.
func singleQuoted(s []byte) ([]byte, bool) {
	text := []byte{}
	i := 1
	for {
		j := bytes.IndexByte(s[i:], '\'')
		if j < 0 {
			return nil, false
		}
		text = append(text, s[i:i+j]...)
		i += j + 1
		if i < len(s) && s[i] == '\'' {
			text = append(text, '\'')
			i++
			continue
		}
		break
	}
	return text, i == len(s)
}

// plainScalar resolves a plain scalar on one line as go-yaml v2's resolve
// does (see plainYAMLToJSON): a string, or else a decimal int or a word
// of resolveWords; ok false for a shape not read here.
func plainScalar(s []byte) (isString, ok bool) {
	// What cannot be a plain scalar on one line, or could end one: an
	// indicator first, ": " or " #" inside, a space or a colon last.
	if len(s) == 0 || bytes.IndexByte([]byte("-?:,[]{}#&*!|>'\"%@`"), s[0]) >= 0 ||
		bytes.Contains(s, []byte(": ")) || bytes.Contains(s, []byte(" #")) || s[len(s)-1] == ' ' || s[len(s)-1] == ':' {
		return false, false
	}
	switch s[0] {
	case '+', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9', '.':
		switch {
		case decimal.Match(s):
			return false, true
		case dotted.Match(s), digitsThenWord.Match(s):
			return true, true
		}
		return false, false
	case 'y', 'Y', 'n', 'N', 't', 'T', 'f', 'F', 'o', 'O', '~':
		if _, ok := resolveWords[string(s)]; ok {
			return false, true
		}
	}
	return true, true
}

// resolveWords are go-yaml v2's resolveMap words of the first bytes
// "yYnNtTfFoO~" (resolve.go, init), as JSON.
var resolveWords = map[string]string{
	"y": "true", "Y": "true", "yes": "true", "Yes": "true", "YES": "true",
	"true": "true", "True": "true", "TRUE": "true",
	"on": "true", "On": "true", "ON": "true",
	"n": "false", "N": "false", "no": "false", "No": "false", "NO": "false",
	"false": "false", "False": "false", "FALSE": "false",
	"off": "false", "Off": "false", "OFF": "false",
	"~": "null", "null": "null", "Null": "null", "NULL": "null",
}

var (
	// decimal: strconv.ParseInt(s, 0, 64) gives the int s writes, which
	// encoding/json writes as s (no sign, no leading zero: base 10; at
	// most 18 digits: within int64). No timestamp has no dash.
	decimal = regexp.MustCompile(`^(0|[1-9][0-9]{0,17})$`)
	// dotted (3.2.0): two dots or more, so neither an int nor a float
	// (yamlStyleFloat has one dot at most), nor a timestamp (no dash).
	dotted = regexp.MustCompile(`^[0-9]+(\.[0-9]+){2,}$`)
	// digitsThenWord (99-worker): an int or a float has no letter after a
	// dash; a timestamp needs four digits, a dash and a digit
	// (parseTimestamp's formats all begin 2006-1-2); and 0b needs a b
	// right after the 0.
	digitsThenWord = regexp.MustCompile(`^[0-9]+-[A-Za-z][A-Za-z0-9.-]*$`)
)
