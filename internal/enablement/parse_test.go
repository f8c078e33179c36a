package enablement

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestSplitLines(t *testing.T) {
	cases := []struct {
		name string
		in   string
		want []string
	}{
		{name: "empty", in: "", want: nil},
		{name: "LF", in: "a\nb\n", want: []string{"a", "b"}},
		{name: "no final newline", in: "a\nb", want: []string{"a", "b"}},
		{name: "CRLF is one line end", in: "a\r\nb\r\n", want: []string{"a", "b"}},
		{name: "LFCR is one line end", in: "a\n\rb", want: []string{"a", "b"}},
		{name: "CR alone", in: "a\rb", want: []string{"a", "b"}},
		{name: "two LF make an empty line", in: "a\n\nb", want: []string{"a", "", "b"}},
		{name: "CRLFCR", in: "a\r\n\rb", want: []string{"a", "", "b"}},
		{name: "NUL ends a line", in: "a\x00b", want: []string{"a", "b"}},
		{name: "NUL then LF", in: "a\x00\nb", want: []string{"a", "", "b"}},
		{name: "CR then NUL", in: "a\r\x00b", want: []string{"a", "b"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, splitLines([]byte(tc.in))); diff != "" {
				t.Errorf("splitLines(%q) mismatch (-want +got):\n%s", tc.in, diff)
			}
		})
	}
}

func TestExtractWords(t *testing.T) {
	words := func(s string, unquote, retainEscape bool) ([]string, bool) {
		var out []string
		for rest := s; ; {
			w, r, found, err := extractWord(rest, unquote, retainEscape)
			if err != nil {
				return out, false
			}
			if !found {
				return out, true
			}
			out, rest = append(out, w), r
		}
	}
	cases := []struct {
		name         string
		in           string
		unquote      bool
		retainEscape bool
		want         []string
		wantOK       bool
	}{
		{name: "list: words", in: "  a.target\tb.target  ", unquote: true, retainEscape: true, want: []string{"a.target", "b.target"}, wantOK: true},
		{name: "list: quotes", in: `"a b" c'd e'f`, unquote: true, retainEscape: true, want: []string{"a b", "cd ef"}, wantOK: true},
		{name: "list: empty quoted word", in: `""`, unquote: true, retainEscape: true, want: []string{""}, wantOK: true},
		{name: "list: backslashes kept", in: `a\ b`, unquote: true, retainEscape: true, want: []string{`a\`, "b"}, wantOK: true},
		{name: "list: unterminated quote", in: `a "b`, unquote: true, retainEscape: true, want: []string{"a"}, wantOK: false},
		{name: "Also: quotes kept", in: `"a.service"`, want: []string{`"a.service"`}, wantOK: true},
		{name: "Also: escape", in: `a\.service b`, want: []string{"a.service", "b"}, wantOK: true},
		{name: "Also: trailing backslash", in: `a\`, want: nil, wantOK: false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := words(tc.in, tc.unquote, tc.retainEscape)
			if diff := cmp.Diff(tc.want, got); diff != "" || ok != tc.wantOK {
				t.Errorf("words(%q) = %q, %v; want ok %v (-want +got):\n%s", tc.in, got, ok, tc.wantOK, diff)
			}
		})
	}
}

func TestClassifyName(t *testing.T) {
	cases := []struct {
		in   string
		want nameKind
	}{
		{"foo.service", namePlain},
		{"foo@.service", nameTemplate},
		{"foo@bar.service", nameInstance},
		{"foo@bar@baz.socket", nameInstance},
		{"dev-sda1.device", namePlain},
		{`a\x2db.mount`, namePlain},
		{"foo", nameInvalid},
		{".service", nameInvalid},
		{"@foo.service", nameInvalid},
		{"foo.conf", nameInvalid},
		{"foo bar.service", nameInvalid},
		{"foo/bar.service", nameInvalid},
		{string(make([]byte, 300)) + ".service", nameInvalid},
	}
	for _, tc := range cases {
		if got := classifyName(tc.in); got != tc.want {
			t.Errorf("classifyName(%q) = %v, want %v", tc.in, got, tc.want)
		}
	}
}
