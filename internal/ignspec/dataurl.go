package ignspec

import (
	"encoding/base64"
	"strings"
	"unsafe"
)

// Base64DataURL decodes the data URL of the shape Ignition's tools write
// ("data:;base64," and base64 without white space) the way dataurl's
// DecodeString does for that shape (the base64 alphabet and padding, then
// encoding/base64's StdEncoding: dataurl.go, lex.go), without its lexer,
// which reads the string rune by rune and copies its data twice: a tenth
// of a cold load. ok false: another shape, or an error dataurl reports.
func Base64DataURL(src string) (data []byte, ok bool) {
	b64, ok := base64Part(src)
	if !ok {
		return nil, false
	}
	data, err := base64.StdEncoding.DecodeString(b64)
	return data, err == nil
}

// base64Part is the base64 of a data URL of that shape, all of it in the
// base64 alphabet; ok false for another shape.
func base64Part(src string) (b64 string, ok bool) {
	const prefix = "data:;base64,"
	b64, found := strings.CutPrefix(src, prefix)
	if !found {
		return "", false
	}
	for i := 0; i < len(b64); i++ {
		c := b64[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '+' || c == '/' || c == '=') {
			return "", false
		}
	}
	return b64, true
}

// validBase64DataURL: Base64DataURL decodes src (into scratch, which it
// returns grown as needed, so that checking allocates nothing).
func validBase64DataURL(src string, scratch []byte) ([]byte, bool) {
	b64, ok := base64Part(src)
	if !ok {
		return scratch, false
	}
	if n := base64.StdEncoding.DecodedLen(len(b64)); cap(scratch) < n {
		scratch = make([]byte, n)
	}
	// Decode only reads its source: the string's bytes, not a copy of them.
	_, err := base64.StdEncoding.Decode(scratch[:cap(scratch)], unsafe.Slice(unsafe.StringData(b64), len(b64)))
	return scratch, err == nil
}
