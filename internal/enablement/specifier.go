package enablement

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"syscall"

	"github.com/drift-monitor/drift-monitor/internal/errpath"
)

// errUnknownSpecifier is systemd's EBADSLT: a %-letter it does not know.
var errUnknownSpecifier = errors.New("unknown specifier")

type specValue struct {
	s   string
	err error
}

// printf expands specifiers in an [Install] value the way systemd's
// install_name_printf() does for the system scope: from the unit's name
// (%n %N %p %i %j), the credentials of the system manager (%u %U %g %G),
// the root's /etc/machine-id (%m) and os-release (%o %w %W %A %B %M), and,
// as systemctl does even with --root, the running host (%H %l %b %a %v).
func (t *Tree) printf(info *installInfo, format string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(format); i++ {
		c := format[i]
		if c != '%' {
			b.WriteByte(c)
			continue
		}
		if i++; i == len(format) {
			b.WriteByte('%') // a stray % at the end stays
			break
		}
		c = format[i]
		v, known, err := t.specifier(info, c)
		switch {
		case err != nil:
			return "", fmt.Errorf("%%%c: %w", c, err)
		case known:
			b.WriteString(v)
		case c == '%':
			b.WriteByte('%')
		case isAlnum(c):
			return "", fmt.Errorf("%%%c: %w", c, errUnknownSpecifier)
		default:
			b.WriteByte('%')
			b.WriteByte(c)
		}
	}
	if b.Len() > unitNameMax {
		return "", fmt.Errorf("expanding %q: %w", format, syscall.ENAMETOOLONG)
	}
	return b.String(), nil
}

func isAlnum(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// specifier returns the value of %c; known is false for letters systemd's
// install table does not have.
func (t *Tree) specifier(info *installInfo, c byte) (v string, known bool, err error) {
	switch c {
	case 'n':
		if classifyName(info.name) == nameTemplate && info.defaultInstance != "" {
			return replaceInstance(info.name, info.defaultInstance), true, nil
		}
		return info.name, true, nil
	case 'N':
		prefix := info.name[:strings.LastIndexByte(info.name, '.')]
		if strings.HasSuffix(prefix, "@") && info.defaultInstance != "" {
			prefix += info.defaultInstance
		}
		return prefix, true, nil
	case 'p':
		return namePrefix(info.name), true, nil
	case 'i':
		if inst := nameInstanceOf(info.name); inst != "" {
			return inst, true, nil
		}
		return info.defaultInstance, true, nil
	case 'j':
		prefix := namePrefix(info.name)
		return prefix[strings.LastIndexByte(prefix, '-')+1:], true, nil
	case 'u', 'g':
		return "root", true, nil
	case 'U', 'G':
		return "0", true, nil
	case 'a', 'b', 'H', 'l', 'm', 'v', 'o', 'w', 'W', 'A', 'B', 'M':
		sv, ok := t.specs[c]
		if !ok {
			sv.s, sv.err = t.systemSpecifier(c)
			t.specs[c] = sv
		}
		return sv.s, true, sv.err
	}
	return "", false, nil
}

func (t *Tree) systemSpecifier(c byte) (string, error) {
	switch c {
	case 'a':
		var u syscall.Utsname
		if err := syscall.Uname(&u); err != nil {
			return "", err
		}
		return architecture(utsString(u.Machine[:])), nil
	case 'v':
		var u syscall.Utsname
		if err := syscall.Uname(&u); err != nil {
			return "", err
		}
		return utsString(u.Release[:]), nil
	case 'b':
		data, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
		if err != nil {
			return "", errpath.Strip(err)
		}
		return strings.ReplaceAll(strings.TrimSpace(string(data)), "-", ""), nil
	case 'H', 'l':
		h, err := os.Hostname()
		if err != nil {
			return "", err
		}
		if h == "" || h == "(none)" {
			h = "localhost"
		}
		if c == 'l' {
			h, _, _ = strings.Cut(h, ".")
		}
		return h, nil
	case 'm':
		return t.machineID()
	}
	key := map[byte]string{'o': "ID", 'w': "VERSION_ID", 'W': "VARIANT_ID", 'A': "IMAGE_VERSION", 'B': "BUILD_ID", 'M': "IMAGE_ID"}[c]
	return t.osRelease(key)
}

func utsString[T int8 | uint8](f []T) string {
	b := make([]byte, 0, len(f))
	for _, c := range f {
		if c == 0 {
			break
		}
		b = append(b, byte(c))
	}
	return string(b)
}

// architecture maps uname's machine to systemd's architecture names.
func architecture(machine string) string {
	switch {
	case machine == "x86_64":
		return "x86-64"
	case len(machine) == 4 && machine[0] == 'i' && strings.HasSuffix(machine, "86"):
		return "x86"
	case machine == "aarch64":
		return "arm64"
	case machine == "aarch64_be":
		return "arm64-be"
	case strings.HasPrefix(machine, "arm") && strings.HasSuffix(machine, "b"):
		return "arm-be"
	case strings.HasPrefix(machine, "arm"):
		return "arm"
	case machine == "ppc64le":
		return "ppc64-le"
	case machine == "ppcle":
		return "ppc-le"
	}
	return machine
}

// machineID reads the root's /etc/machine-id as systemd's %m does.
func (t *Tree) machineID() (string, error) {
	data, err := t.readFile("/etc/machine-id")
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("no /etc/machine-id: %w", syscall.EUNATCH)
		}
		return "", err
	}
	id := strings.TrimSuffix(string(data), "\n")
	if len(id) != 32 || strings.Trim(strings.ToLower(id), "0123456789abcdef") != "" {
		return "", fmt.Errorf("/etc/machine-id holds no machine ID: %w", syscall.ENOMEDIUM)
	}
	return strings.ToLower(id), nil
}

// osRelease returns a field of the root's os-release ("" if it is not set).
func (t *Tree) osRelease(key string) (string, error) {
	var data []byte
	found := false
	for _, name := range []string{"/etc/os-release", "/usr/lib/os-release"} {
		var err error
		data, err = t.readFile(name)
		if err == nil {
			found = true
			break
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
	}
	if !found {
		return "", fmt.Errorf("no os-release: %w", fs.ErrNotExist)
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		k, v, ok := strings.Cut(strings.TrimSpace(sc.Text()), "=")
		if ok && strings.TrimSpace(k) == key {
			return shellUnquote(strings.TrimSpace(v)), nil
		}
	}
	return "", nil
}

// shellUnquote undoes the quoting os-release(5) allows.
func shellUnquote(v string) string {
	var b strings.Builder
	var quote byte
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case quote == '\'' && c == '\'', quote == '"' && c == '"':
			quote = 0
		case quote == '\'':
			b.WriteByte(c)
		case c == '\\' && i+1 < len(v) && (quote == 0 || strings.IndexByte("\"\\`$", v[i+1]) >= 0):
			i++
			b.WriteByte(v[i])
		case quote == 0 && (c == '\'' || c == '"'):
			quote = c
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}
