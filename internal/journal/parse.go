package journal

import (
	"strconv"
	"strings"
)

// PlainRecord is a plain line (see NewHandler) read back: for programs that
// run the daemon outside journald and read its stderr (tests, benchmarks).
type PlainRecord struct {
	Level   string
	Message string // as written: escaped
	Fields  map[string]string
}

// ParsePlain reads a plain line back. Fields start at the first
// " MESSAGE_ID=" (every record the daemon journals begins its fields with
// it); a line without one is all message. Quoted values are unquoted.
func ParsePlain(line string) PlainRecord {
	r := PlainRecord{Fields: map[string]string{}}
	level, rest, _ := strings.Cut(line, " ")
	r.Level = level
	i := strings.Index(rest, " "+FieldMessageID+"=")
	if i < 0 {
		r.Message = rest
		return r
	}
	r.Message = rest[:i]
	for _, kv := range splitFields(rest[i+1:]) {
		k, v, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(v, `"`) {
			if u, err := strconv.Unquote(v); err == nil {
				v = u
			}
		}
		r.Fields[k] = v
	}
	return r
}

// splitFields splits KEY=VALUE words on spaces outside quoted values.
func splitFields(s string) []string {
	var out []string
	var cur strings.Builder
	quoted := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\' && quoted && i+1 < len(s):
			cur.WriteByte(c)
			cur.WriteByte(s[i+1])
			i++
		case c == '"':
			quoted = !quoted
			cur.WriteByte(c)
		case c == ' ' && !quoted:
			out = append(out, cur.String())
			cur.Reset()
		default:
			cur.WriteByte(c)
		}
	}
	if cur.Len() > 0 {
		out = append(out, cur.String())
	}
	return out
}
