package escape_test

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/drift-monitor/drift-monitor/internal/escape"
)

func TestEscape(t *testing.T) {
	tests := []struct {
		name, in, escape, control string
	}{
		{"plain", "/etc/chrony.conf", "/etc/chrony.conf", "/etc/chrony.conf"},
		{"space kept", "/etc/a b", "/etc/a b", "/etc/a b"},
		{"non-ASCII letters kept", "/srv/café/日本語/Ωmega", "/srv/café/日本語/Ωmega", "/srv/café/日本語/Ωmega"},
		{"newline in a path", "/etc/evil\nNo drift: all clean", `/etc/evil\nNo drift: all clean`, `/etc/evil\nNo drift: all clean`},
		{"carriage return", "a\rb", `a\rb`, `a\rb`},
		{"tab", "a\tb", `a\tb`, `a\tb`},
		{"ESC sequence", "/etc/\x1b[31mred\x1b[0m", `/etc/\x1b[31mred\x1b[0m`, `/etc/\x1b[31mred\x1b[0m`},
		{"terminal title sequence", "\x1b]0;pwned\x07", `\x1b]0;pwned\a`, `\x1b]0;pwned\a`},
		{"NUL and DEL", "a\x00b\x7f", `a\x00b\x7f`, `a\x00b\x7f`},
		{"C1 control", "a\u0085b\u009bc", `a\u0085b\u009bc`, `a\u0085b\u009bc`},
		{"invalid UTF-8", "/etc/\xff\xfe", `/etc/\xff\xfe`, `/etc/\xff\xfe`},
		{"truncated UTF-8 sequence", "caf\xc3", `caf\xc3`, `caf\xc3`},
		{"replacement character itself kept", "a\uFFFDb", "a\uFFFDb", "a\uFFFDb"},
		{"bidi override", "/etc/\u202Egnp.sh", `/etc/\u202egnp.sh`, `/etc/\u202egnp.sh`},
		{"zero-width space", "a\u200Bb", `a\u200bb`, `a\u200bb`},
		{"no-break space", "a\u00A0b", `a\u00a0b`, `a\u00a0b`},
		{"backslash", `C:\path`, `C:\\path`, `C:\path`},
		{"backslash and control", "\\\n", `\\\n`, `\\n`},
		{"empty", "", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := escape.Name(tt.in); got != tt.escape {
				t.Errorf("Name(%q) = %q, want %q", tt.in, got, tt.escape)
			}
			if got := escape.Text(tt.in); got != tt.control {
				t.Errorf("Text(%q) = %q, want %q", tt.in, got, tt.control)
			}
		})
	}
}

// TestEscapeIsSafe: whatever the input, the output of Name and Text holds no control
// character and is valid UTF-8.
func TestEscapeIsSafe(t *testing.T) {
	var all strings.Builder
	for b := 0; b < 256; b++ {
		all.WriteByte(byte(b))
	}
	for r := rune(0x80); r < 0x3000; r++ {
		all.WriteRune(r)
	}
	for name, esc := range map[string]func(string) string{"Name": escape.Name, "Text": escape.Text} {
		out := esc(all.String())
		if !utf8.ValidString(out) {
			t.Errorf("%s output is not valid UTF-8", name)
		}
		for i, r := range out {
			if unicode.IsControl(r) || !unicode.IsPrint(r) && r != ' ' {
				t.Fatalf("%s output holds %U at %d", name, r, i)
			}
		}
	}
}

// The journal message cases (journal.EscapeMessage was escape.Name).
func TestNameJournalMessages(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"plain", "No drift: watching 42 paths", "No drift: watching 42 paths"},
		{"newline", "a\nb", `a\nb`},
		{"tab and cr", "a\tb\rc", `a\tb\rc`},
		{"escape sequence", "\x1b[31mred", `\x1b[31mred`},
		{"del and c1", "\x7f\u009b", `\x7f\u009b`},
		{"bidi override", "evil\u202etxt", `evil\u202etxt`},
		{"line separator", "a\u2028b", `a\u2028b`},
		{"backslash", `C:\path`, `C:\\path`},
		{"invalid utf-8", "a\xffb", `a\xffb`},
		{"quotes kept", `say "hi"`, `say "hi"`},
		{"unicode kept", "chrony.conf — ünïcode ✓", "chrony.conf — ünïcode ✓"},
		{"empty", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := escape.Name(tt.in); got != tt.want {
				t.Errorf("Name(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}
