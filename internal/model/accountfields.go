package model

import (
	"errors"
	"fmt"
	"strings"
)

// Account fields as the tools take them.
//
// Ignition hands every field of an account to shadow-utils as it is
// (v2.27.0 internal/exec/util/passwd.go: EnsureUser, SetPasswordHash,
// EnsureGroup put the name last on useradd's, usermod's, groupadd's and
// groupmod's command line, and each value after its option), and the tools
// write it into colon-separated, line-separated files: /etc/passwd,
// /etc/shadow, /etc/group, /etc/gshadow. A value is one field there only if
// it holds no ':' and no line break; shadow-utils 4.13 (Debian 12's passwd)
// refuses every control character in a field it writes (usermod --password,
// --comment, --home and --shell exit 1 or 3 on any byte below 0x20 and on
// 0x7f, and write nothing), and reads a list of groups or members split at
// ','. reconcile feeds a password to chpasswd and chgpasswd on their input
// as NAME:HASH (so that no other user sees it in /proc), where a line
// break would start another account's line and a ':' would end the name;
// and it runs the tools with the name as the last argument, where one
// starting with '-' would be taken for an option; a name that starts a
// line with '#' or '+' makes it a comment or an NIS entry.
//
// So a value that is not one field of the file it goes to is refused when
// the config is loaded (a config error, naming the field) and again before
// any tool runs: a config that would rewrite another account's line is
// never applied, as Ignition's usermod never applies it.

// AccountField is what an account's value is, for the rule it must keep.
type AccountField int

const (
	// FieldName is a user's or group's name, a user's primary group and
	// each of its supplementary groups: an item of /etc/group's member
	// list too (a group by name or by gid).
	FieldName AccountField = iota
	// FieldValue is a gecos, a home directory or a shell: one field of
	// /etc/passwd.
	FieldValue
	// FieldHash is a password hash: one field of /etc/shadow or
	// /etc/gshadow, and the second of chpasswd's NAME:HASH line. It is a
	// secret: its problems never show it.
	FieldHash
)

// ErrNotOneField is wrapped by the error of a value that a tool would not
// take as one field.
var ErrNotOneField = errors.New("not one field of the account files")

// AccountFieldProblem says why v cannot be handed to shadow-utils as a
// field of kind f, or nil.
func AccountFieldProblem(f AccountField, v string) error {
	var why string
	switch i := strings.IndexFunc(v, isControl); {
	case i >= 0 && (v[i] == '\n' || v[i] == '\r'):
		why = "it holds a line break, which would start another line of the account files"
	case i >= 0:
		why = fmt.Sprintf("it holds the control character %#02x, which shadow-utils refuses in a field", v[i])
	case strings.Contains(v, ":"):
		why = "it holds a ':', which separates the fields of the account files"
	case f == FieldName && strings.Contains(v, ","):
		why = "it holds a ',', which separates the names of a group list"
	case f == FieldName && strings.ContainsAny(v, " \t\v\f"):
		// useradd and groupadd refuse such a name, and the tools read a
		// group given as " 0" as gid 0 (getgr_nam_gid: strtoll skips
		// white space), where a check would look for a group of that name.
		why = "it holds white space, which no account name has"
	case f == FieldName && strings.HasPrefix(v, "-"):
		why = "it starts with '-': a tool would take it for an option"
	case f == FieldName && (strings.HasPrefix(v, "#") || strings.HasPrefix(v, "+")):
		// A line that starts with '#' is a comment to the readers of the
		// account files (this one's too), one with '+' an NIS entry to
		// glibc's compat module.
		why = fmt.Sprintf("it starts with %q, which makes its line a comment or an NIS entry", v[:1])
	case f == FieldName && v == "":
		why = "it is empty"
	default:
		return nil
	}
	if f != FieldHash {
		why = fmt.Sprintf("%q: %s", v, why)
	}
	return fmt.Errorf("%w: %s", ErrNotOneField, why)
}

func isControl(r rune) bool { return r < 0x20 || r == 0x7f }

// AccountProblem checks every field of a derived account that a tool is
// handed: the name of the field that is not one field, and why; "" and nil
// when every one is.
func AccountProblem(a *Account) (field string, err error) {
	check := func(name string, f AccountField, v *string) {
		if err == nil && v != nil {
			if err = AccountFieldProblem(f, *v); err != nil {
				field = name
			}
		}
	}
	check("name", FieldName, &a.Name)
	check("passwordHash", FieldHash, a.PasswordHash)
	check("gecos", FieldValue, a.Gecos)
	check("homeDir", FieldValue, a.Home)
	check("shell", FieldValue, a.Shell)
	check("primaryGroup", FieldName, a.PrimaryGroup)
	for i := range a.Groups {
		check(fmt.Sprintf("groups.%d", i), FieldName, &a.Groups[i])
	}
	return field, err
}
