package enablement

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// longLineMax is systemd's LONG_LINE_MAX: longer lines make the parser fail.
const longLineMax = 1 << 20

// whitespace is systemd's WHITESPACE.
const whitespace = " \t\n\r"

// splitLines splits data the way systemd's read_line() does: a line ends at
// "\n", "\r" or NUL, and one terminator may combine one of each of "\n" and
// "\r" (so "\r\n" and "\n\r" end one line), optionally followed by a NUL.
func splitLines(data []byte) []string {
	const (
		eolLF  = 1
		eolCR  = 2
		eolNUL = 4
	)
	class := func(c byte) int {
		switch c {
		case '\n':
			return eolLF
		case '\r':
			return eolCR
		case 0:
			return eolNUL
		}
		return 0
	}
	var lines []string
	for i := 0; i < len(data); {
		start := i
		for i < len(data) && class(data[i]) == 0 {
			i++
		}
		line := string(data[start:i])
		seen := 0
		for i < len(data) {
			c := class(data[i])
			if seen&eolNUL != 0 || c == 0 || seen&c != 0 {
				break
			}
			seen |= c
			i++
		}
		lines = append(lines, line)
	}
	return lines
}

// validUTF8 mirrors systemd's utf8_is_valid(), which unlike Go also rejects
// the Unicode noncharacters.
func validUTF8(s string) bool {
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n <= 1 {
			return false
		}
		if (r >= 0xFDD0 && r <= 0xFDEF) || r&0xFFFE == 0xFFFE {
			return false
		}
		i += n
	}
	return true
}

// safeSectionName mirrors string_is_safe(): no control characters, quotes
// or backslashes.
func safeSectionName(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c > 0 && c < ' ') || c == 0x7f || strings.IndexByte("\"'\\", c) >= 0 {
			return false
		}
	}
	return true
}

// parseInstall reads the [Install] section of a unit file or drop-in at p
// (a path inside the root, for messages) into info, as systemd's
// config_parse() does with install.c's table. Everything systemd only warns
// about is ignored; what makes systemd's parser fail wraps ErrBad.
func (t *Tree) parseInstall(info *installInfo, p string, data []byte) error {
	var (
		inInstall bool
		cont      string
		inCont    bool
		bomSeen   bool
	)
	lines := splitLines(data)
	for n, raw := range lines {
		if len(raw) > longLineMax {
			return fmt.Errorf("%w: %s:%d: line too long", ErrBad, p, n+1)
		}
		if l := strings.TrimLeft(raw, whitespace); l != "" && (l[0] == '#' || l[0] == ';') {
			// Comment lines are dropped even inside a continuation.
			continue
		}
		l := raw
		if !bomSeen && strings.HasPrefix(l, "\xef\xbb\xbf") {
			l, bomSeen = l[3:], true
		}
		if inCont {
			if len(cont)+len(l) > longLineMax {
				return fmt.Errorf("%w: %s:%d: continuation line too long", ErrBad, p, n+1)
			}
			l = cont + l
		}
		if endsEscaped(l) {
			// A trailing backslash continues the line; it becomes a space.
			cont, inCont = l[:len(l)-1]+" ", true
			continue
		}
		inCont = false
		if err := t.parseLine(info, p, n+1, l, &inInstall); err != nil {
			return err
		}
	}
	if inCont {
		return t.parseLine(info, p, len(lines), cont, &inInstall)
	}
	return nil
}

// endsEscaped reports whether l ends in a backslash that is not itself
// escaped.
func endsEscaped(l string) bool {
	escaped := false
	for i := 0; i < len(l); i++ {
		if escaped {
			escaped = false
		} else if l[i] == '\\' {
			escaped = true
		}
	}
	return escaped
}

// parseLine mirrors conf-parser.c's parse_line() for install.c's table.
func (t *Tree) parseLine(info *installInfo, p string, n int, l string, inInstall *bool) error {
	l = strings.Trim(l, whitespace)
	if l == "" {
		return nil
	}
	if !validUTF8(l) {
		return fmt.Errorf("%w: %s:%d: line is not valid UTF-8", ErrBad, p, n)
	}
	if l[0] == '[' {
		if l[len(l)-1] != ']' {
			return fmt.Errorf("%w: %s:%d: invalid section header %q", ErrBad, p, n, l)
		}
		name := l[1 : len(l)-1]
		if !safeSectionName(name) {
			return fmt.Errorf("%w: %s:%d: bad characters in section header %q", ErrBad, p, n, l)
		}
		// Other sections ([Unit], [Service], [X-Foo], unknown ones) are
		// skipped; systemd at most warns about them.
		*inInstall = name == "Install"
		return nil
	}
	key, value, ok := strings.Cut(l, "=")
	if !*inInstall || !ok || key == "" {
		return nil
	}
	key, value = strings.Trim(key, whitespace), strings.Trim(value, whitespace)
	switch key {
	case "Alias":
		if mayAlias(unitType(info.name)) {
			info.aliases = parseStrv(info.aliases, value)
		}
	case "WantedBy":
		info.wantedBy = parseStrv(info.wantedBy, value)
	case "RequiredBy":
		info.requiredBy = parseStrv(info.requiredBy, value)
	case "DefaultInstance":
		// Only templates have one; instances ignore it silently, other
		// units with a warning.
		if classifyName(info.name) != nameTemplate {
			return nil
		}
		s, err := t.printf(info, value)
		if err != nil {
			return fmt.Errorf("%w: %s:%d: resolving DefaultInstance=%q: %v", ErrBad, p, n, value, err)
		}
		if s != "" && !validInstance(s) {
			return fmt.Errorf("%w: %s:%d: invalid DefaultInstance= value %q", ErrBad, p, n, s)
		}
		info.defaultInstance = s
	case "Also":
		for rest := value; ; {
			w, r, found, err := extractWord(rest, false, false)
			if err != nil {
				return fmt.Errorf("%w: %s:%d: Also=%q: %v", ErrBad, p, n, value, err)
			}
			if !found {
				break
			}
			rest = r
			s, err := t.printf(info, w)
			if err != nil {
				return fmt.Errorf("%w: %s:%d: resolving Also=%q: %v", ErrBad, p, n, w, err)
			}
			if classifyName(s) == nameInvalid {
				return fmt.Errorf("%w: %s:%d: Also= names %q, which is not a unit name", ErrBad, p, n, s)
			}
			info.also = append(info.also, s)
		}
	}
	// UpheldBy= is unknown to systemd 252, like every other key: ignored.
	return nil
}

// parseStrv mirrors config_parse_strv(): an empty value resets the list,
// otherwise the words are appended; on a syntax error (an unterminated
// quote) the words before it are kept and the rest is ignored.
func parseStrv(list []string, value string) []string {
	if value == "" {
		return nil
	}
	for rest := value; ; {
		w, r, found, err := extractWord(rest, true, true)
		if err != nil || !found {
			return list
		}
		list, rest = append(list, w), r
	}
}

// extractWord mirrors systemd's extract_first_word() with whitespace
// separators for the two flag sets install.c uses: (EXTRACT_UNQUOTE |
// EXTRACT_RETAIN_ESCAPE) for lists, and no flags for Also=. found is false
// when only whitespace is left.
func extractWord(s string, unquote, retainEscape bool) (word, rest string, found bool, err error) {
	i := 0
	for i < len(s) && strings.IndexByte(whitespace, s[i]) >= 0 {
		i++
	}
	if i == len(s) {
		return "", "", false, nil
	}
	var b strings.Builder
	var quote byte
	backslash := false
	for ; i < len(s); i++ {
		c := s[i]
		switch {
		case backslash:
			b.WriteByte(c)
			backslash = false
		case quote != 0 && c == quote:
			quote = 0
		case c == '\\' && !retainEscape:
			backslash = true
		case quote != 0:
			b.WriteByte(c)
		case unquote && (c == '\'' || c == '"'):
			quote = c
		case strings.IndexByte(whitespace, c) >= 0:
			for i < len(s) && strings.IndexByte(whitespace, s[i]) >= 0 {
				i++
			}
			return b.String(), s[i:], true, nil
		default:
			b.WriteByte(c)
		}
	}
	if backslash {
		return "", "", false, fmt.Errorf("trailing backslash")
	}
	if quote != 0 {
		return "", "", false, fmt.Errorf("unterminated quote")
	}
	return b.String(), "", true, nil
}
