package selinux

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"
)

// ConfigPath is where a root says which policy it uses (SELINUXTYPE) and
// whether it enforces it (SELINUX).
const ConfigPath = "/etc/selinux/config"

// ForRoot loads the file contexts of the policy a root uses, as Ignition
// finds them (internal/exec/util/selinux.go, RelabelFiles: SELINUXTYPE= of
// <root>/etc/selinux/config, then <root>/etc/selinux/<type>/contexts/files/
// file_contexts), enforcing or not. nil without an error: the root has no
// config, or SELinux is disabled there and the policy is not installed —
// there is no label to want. An error: labels cannot be checked, and why.
func ForRoot(read Reader) (*Contexts, error) {
	fc, mode, err := PolicyOf(read)
	if fc == "" || err != nil {
		return nil, err
	}
	c, err := Load(read, fc)
	if errors.Is(err, fs.ErrNotExist) && mode == "disabled" {
		return nil, nil
	}
	return c, err
}

// PolicyOf reads the root's config: the path of the file contexts of the
// policy it names and its SELINUX= mode; "" without an error when the root
// has no config.
func PolicyOf(read Reader) (fileContexts, mode string, err error) {
	data, err := read(ConfigPath)
	if errors.Is(err, fs.ErrNotExist) {
		return "", "", nil
	}
	if err != nil {
		return "", "", err
	}
	var typ string
	for _, l := range strings.Split(string(data), "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(l), "=")
		if !ok || strings.HasPrefix(k, "#") {
			continue
		}
		v = strings.Trim(strings.TrimSpace(v), `"'`)
		switch strings.TrimSpace(k) {
		case "SELINUX":
			mode = v
		case "SELINUXTYPE":
			typ = v
		}
	}
	if typ == "" || strings.Contains(typ, "/") || typ == ".." {
		return "", "", fmt.Errorf("%s names no policy type (SELINUXTYPE=%q)", ConfigPath, typ)
	}
	return "/etc/selinux/" + typ + "/contexts/files/file_contexts", mode, nil
}

// Files are the files Load reads for the file contexts at path, present
// or not: what a change of the policy changes.
func Files(path string) []string {
	return []string{path, path + ".homedirs", path + ".local", path + ".subs", path + ".subs_dist"}
}
