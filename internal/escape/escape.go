// Package escape writes untrusted names and text so that they cannot drive a
// terminal or forge a line: control characters, bidirectional overrides and
// other non-printable runes, and invalid UTF-8 become Go escapes (\n, \x1b,
// \u202e). Printable text, including non-ASCII letters, stays as it is. It
// does not quote: callers that need a delimited value quote it themselves.
package escape

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Name makes a name safe for a terminal, a status line or a journal field:
// control characters, invalid UTF-8 and backslashes become Go escapes; every
// other character, including non-ASCII letters, stays as it is.
func Name(s string) string { return escape(s, true) }

// Text escapes control characters and invalid UTF-8 but leaves
// backslashes alone: for file content shown in diffs, where they are common.
func Text(s string) string { return escape(s, false) }

func escape(s string, backslash bool) string {
	clean := true
	for _, r := range s {
		if r == utf8.RuneError || backslash && r == '\\' || !unicode.IsPrint(r) && r != ' ' {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\\' && backslash:
			b.WriteString(`\\`)
		case r == ' ' || r == '\\' || unicode.IsPrint(r):
			b.WriteRune(r)
		default:
			e := fmt.Sprintf("%q", string(r))
			b.WriteString(e[1 : len(e)-1])
		}
		i += size
	}
	return b.String()
}
