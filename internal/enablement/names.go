package enablement

import "strings"

// nameKind is what systemd's unit_name_to_instance() tells about a unit name.
type nameKind int

const (
	nameInvalid  nameKind = iota
	namePlain             // foo.service
	nameTemplate          // foo@.service
	nameInstance          // foo@bar.service
)

// unitNameMax is systemd's UNIT_NAME_MAX: valid names are shorter.
const unitNameMax = 256

var unitTypes = map[string]bool{
	"service": true, "mount": true, "swap": true, "socket": true,
	"target": true, "device": true, "automount": true, "timer": true,
	"path": true, "slice": true, "scope": true,
}

// validNameChar reports whether c may appear in a unit name before its type
// suffix (systemd's VALID_CHARS_WITH_AT).
func validNameChar(c byte) bool {
	switch {
	case c >= '0' && c <= '9', c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
		return true
	}
	return strings.IndexByte(":-_.\\@", c) >= 0
}

// classifyName mirrors unit_name_is_valid(): it returns nameInvalid for a
// string that is not a unit name.
func classifyName(n string) nameKind {
	if n == "" || len(n) >= unitNameMax {
		return nameInvalid
	}
	dot := strings.LastIndexByte(n, '.')
	if dot <= 0 || !unitTypes[n[dot+1:]] {
		return nameInvalid
	}
	at := -1
	for i := 0; i < dot; i++ {
		if n[i] == '@' && at < 0 {
			at = i
		}
		if !validNameChar(n[i]) {
			return nameInvalid
		}
	}
	switch {
	case at == 0:
		return nameInvalid
	case at < 0:
		return namePlain
	case at+1 == dot:
		return nameTemplate
	default:
		return nameInstance
	}
}

// validInstance mirrors unit_instance_is_valid().
func validInstance(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !validNameChar(s[i]) {
			return false
		}
	}
	return true
}

// unitType returns the type suffix of a valid unit name ("service").
func unitType(n string) string {
	return n[strings.LastIndexByte(n, '.')+1:]
}

// mayAlias mirrors unit_type_may_alias().
func mayAlias(t string) bool {
	switch t {
	case "service", "socket", "target", "device", "timer", "path":
		return true
	}
	return false
}

// mayTemplate mirrors unit_type_may_template().
func mayTemplate(t string) bool {
	switch t {
	case "service", "socket", "target", "timer", "path":
		return true
	}
	return false
}

// namePrefix returns what comes before the '@' or, without one, before the
// type suffix: "foo" for both foo@bar.service and foo.service.
func namePrefix(n string) string {
	if i := strings.IndexByte(n, '@'); i >= 0 {
		return n[:i]
	}
	return n[:strings.LastIndexByte(n, '.')]
}

// nameInstanceOf returns the instance of foo@bar.service ("bar"), or "".
func nameInstanceOf(n string) string {
	at := strings.IndexByte(n, '@')
	if at < 0 {
		return ""
	}
	return n[at+1 : strings.LastIndexByte(n, '.')]
}

// templateOf turns foo@bar.service (or foo@.service) into foo@.service; ok
// is false for names that are neither instances nor templates.
func templateOf(n string) (string, bool) {
	if k := classifyName(n); k != nameInstance && k != nameTemplate {
		return "", false
	}
	return n[:strings.IndexByte(n, '@')+1] + n[strings.LastIndexByte(n, '.'):], true
}

// replaceInstance turns foo@.service and bar into foo@bar.service.
func replaceInstance(tmpl, instance string) string {
	return tmpl[:strings.IndexByte(tmpl, '@')+1] + instance + tmpl[strings.LastIndexByte(tmpl, '.'):]
}

// hiddenOrBackup mirrors hidden_or_backup_file(): systemd skips such
// directory entries everywhere it lists a directory.
func hiddenOrBackup(name string) bool {
	if strings.HasPrefix(name, ".") || strings.HasSuffix(name, "~") {
		return true
	}
	switch name {
	case "lost+found", "aquota.user", "aquota.group":
		return true
	}
	dot := strings.LastIndexByte(name, '.')
	if dot < 0 {
		return false
	}
	switch name[dot+1:] {
	case "rpmnew", "rpmsave", "rpmorig", "dpkg-old", "dpkg-new", "dpkg-tmp",
		"dpkg-dist", "dpkg-bak", "dpkg-backup", "dpkg-remove", "ucf-new",
		"ucf-old", "ucf-dist", "swp", "bak", "old", "new":
		return true
	}
	return false
}

// baseName is GNU basename(): what follows the last slash, "" for a path
// that ends in one.
func baseName(p string) string {
	return p[strings.LastIndexByte(p, '/')+1:]
}
