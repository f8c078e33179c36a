package model

import (
	"errors"
	"strings"
	"testing"
)

func TestAccountFieldProblem(t *testing.T) {
	tests := []struct {
		name  string
		field AccountField
		value string
		want  string // "" when it is one field
	}{
		{"a hash", FieldHash, "$6$salt$abc./XYZ", ""},
		{"no password login", FieldHash, "*", ""},
		{"a locked hash", FieldHash, "!$6$salt$abc", ""},
		{"a hash with a line break", FieldHash, "$6$salt$x\nroot:$6$evil$y", "line break"},
		{"a hash with a carriage return", FieldHash, "$6$x\r", "line break"},
		{"a hash with a ':'", FieldHash, "$6$x:0:0", "':'"},
		{"a hash with a tab", FieldHash, "$6$x\ty", "control character 0x09"},
		{"a hash with a NUL", FieldHash, "$6$x\x00y", "control character 0x00"},
		{"a hash with DEL", FieldHash, "$6$x\x7fy", "control character 0x7f"},
		{"a gecos with commas", FieldValue, "Core Admin,Room 1,555", ""},
		{"a gecos with a line break", FieldValue, "a\nevil:x:0:0::/:/bin/sh", "line break"},
		{"a shell with a ':'", FieldValue, "/bin/sh:x", "':'"},
		{"a home with UTF-8", FieldValue, "/home/élodie", ""},
		{"a name", FieldName, "core", ""},
		{"a name with a dot and a dollar", FieldName, "machine.1$", ""},
		{"a name with a ','", FieldName, "wheel,root", "','"},
		{"a name with a ':'", FieldName, "a:b", "':'"},
		{"a name taken for an option", FieldName, "-ouid=0", "option"},
		{"an empty name", FieldName, "", "empty"},
		{"a name that makes a comment", FieldName, "#0", "comment"},
		{"a name that makes an NIS entry", FieldName, "+", "NIS"},
		{"a name with a line break", FieldName, "core\nroot", "line break"},
		{"a group that strtoll reads as gid 0", FieldName, " 0", "white space"},
		{"a name with a space", FieldName, "a b", "white space"},
		{"a gid", FieldName, "1000", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := AccountFieldProblem(tt.field, tt.value)
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want) || !errors.Is(err, ErrNotOneField)):
				t.Errorf("error %v, want one saying %q", err, tt.want)
			case tt.field == FieldHash && err != nil && strings.Contains(err.Error(), "salt"):
				t.Errorf("the problem shows the hash: %v", err)
			}
		})
	}
}
