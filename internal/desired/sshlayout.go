package desired

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"sort"
	"strconv"
	"strings"

	"github.com/drift-monitor/drift-monitor/internal/model"
)

// SSHKeysEnv overrides the SSH keys layout decided from the host:
// "fragment" (~USER/.ssh/authorized_keys.d/ignition), "authorized_keys"
// (~USER/.ssh/authorized_keys) or "auto" (the default, also when unset).
const SSHKeysEnv = "DRIFT_MONITOR_SSH_KEYS"

// SSHLayout is where Ignition writes a user's SSH keys on a host.
type SSHLayout int

const (
	// SSHFragment: ~USER/.ssh/authorized_keys.d/ignition, upstream's default.
	SSHFragment SSHLayout = iota
	// SSHAuthorizedKeys: ~USER/.ssh/authorized_keys, replaced whole.
	SSHAuthorizedKeys
)

func (l SSHLayout) String() string {
	if l == SSHAuthorizedKeys {
		return "authorized_keys"
	}
	return "fragment"
}

// Ignition writes the fragment only when built with
// WRITE_AUTHORIZED_KEYS_FRAGMENT true (internal/distro/distro.go, used by
// AuthorizeSSHKeys in internal/exec/util/passwd.go); otherwise it replaces
// ~/.ssh/authorized_keys with the same bytes. The builds without it are
// RHEL's and CentOS's up to 8 (RHCOS 8, OpenShift 4.12 and older, whose
// sshd reads no authorized_keys.d) and SUSE's.

// DecideSSHLayout decides the layout from the host's os-release fields and,
// when they do not tell, from the layout present (fragment or
// authorized_keys files of the declared users; present reports whether a
// host path exists). setting is SSHKeysEnv's value.
func DecideSSHLayout(setting string, osRelease map[string]string, fragments, authorizedKeys []string, present func(string) bool) (SSHLayout, error) {
	switch setting {
	case "fragment":
		return SSHFragment, nil
	case "authorized_keys":
		return SSHAuthorizedKeys, nil
	case "", "auto":
	default:
		return SSHFragment, fmt.Errorf("%s=%q: want fragment, authorized_keys or auto", SSHKeysEnv, setting)
	}
	if l, ok := layoutOfOS(osRelease); ok {
		return l, nil
	}
	for _, p := range fragments {
		if present(p) {
			return SSHFragment, nil
		}
	}
	for _, p := range authorizedKeys {
		if present(p) {
			return SSHAuthorizedKeys, nil
		}
	}
	return SSHFragment, nil
}

// layoutOfOS is the layout of the distributions whose Ignition build is
// known; ok is false for others.
func layoutOfOS(osr map[string]string) (SSHLayout, bool) {
	ids := append([]string{osr["ID"]}, strings.Fields(osr["ID_LIKE"])...)
	for _, id := range ids {
		if strings.Contains(id, "suse") || id == "sles" || id == "sle-micro" {
			return SSHAuthorizedKeys, true
		}
	}
	switch osr["ID"] {
	case "rhcos", "scos":
		// VERSION_ID is OpenShift's ("412.86..."); RHEL_VERSION is the base.
		if major, ok := majorOf(osr["RHEL_VERSION"]); ok {
			return layoutOfRHEL(major), true
		}
		if v, ok := majorOf(osr["OPENSHIFT_VERSION"]); ok && v == 4 {
			minor, _ := strconv.Atoi(strings.SplitN(strings.TrimPrefix(osr["OPENSHIFT_VERSION"], "4."), ".", 2)[0])
			if minor <= 12 {
				return SSHAuthorizedKeys, true
			}
			return SSHFragment, true
		}
	case "rhel", "centos", "almalinux", "rocky", "ol":
		if major, ok := majorOf(osr["VERSION_ID"]); ok {
			return layoutOfRHEL(major), true
		}
	case "fedora", "flatcar", "fedora-asahi-remix":
		return SSHFragment, true
	}
	return SSHFragment, false
}

func layoutOfRHEL(major int) SSHLayout {
	if major <= 8 {
		return SSHAuthorizedKeys
	}
	return SSHFragment
}

func majorOf(v string) (int, bool) {
	s, _, _ := strings.Cut(v, ".")
	n, err := strconv.Atoi(s)
	return n, err == nil
}

// parseOSRelease reads os-release(5) assignments; malformed lines are
// skipped, as systemd does.
func parseOSRelease(data []byte) map[string]string {
	m := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		l := strings.TrimSpace(sc.Text())
		if l == "" || l[0] == '#' {
			continue
		}
		k, v, ok := strings.Cut(l, "=")
		if !ok {
			continue
		}
		if u, err := strconv.Unquote(v); err == nil {
			v = u
		} else if len(v) >= 2 && v[0] == '\'' && v[len(v)-1] == '\'' {
			v = v[1 : len(v)-1]
		}
		m[k] = v
	}
	return m
}

// readOSRelease reads root's /etc/os-release, else /usr/lib/os-release,
// inside root (an absolute symlink leads where it would if root were /).
func readOSRelease(r Host) map[string]string {
	for _, p := range []string{"/etc/os-release", "/usr/lib/os-release"} {
		if data, err := r.ReadFile(p); err == nil {
			return parseOSRelease(data)
		}
	}
	return nil
}

// applySSHLayout moves st's SSH keys entries to ~/.ssh/authorized_keys when
// root's layout says so. It is applied to a state whether parsed or cached:
// the layout is the host's, not the config's.
func applySSHLayout(root Host, st *model.State) error {
	var frags, keys []string
	for i := range st.Entries {
		if e := &st.Entries[i]; e.Kind == model.KindSSHKeys {
			frags = append(frags, e.Path)
			keys = append(keys, authorizedKeysOf(e.Path))
		}
	}
	setting := os.Getenv(SSHKeysEnv)
	if len(frags) == 0 && (setting == "" || setting == "auto") {
		return nil
	}
	// Whether a node has the name, itself (a link is not followed): what
	// cannot be told counts as present, so that nothing is decided on a
	// directory that could not be read.
	present := func(p string) bool {
		p = path.Clean(p)
		ents, err := root.ReadDir(path.Dir(p))
		if err != nil {
			return !errors.Is(err, fs.ErrNotExist)
		}
		for _, e := range ents {
			if e.Name() == path.Base(p) {
				return true
			}
		}
		return false
	}
	l, err := DecideSSHLayout(setting, readOSRelease(root), frags, keys, present)
	if err != nil || l == SSHFragment {
		return err
	}
	for i := range st.Entries {
		if e := &st.Entries[i]; e.Kind == model.KindSSHKeys {
			e.Path = authorizedKeysOf(e.Path)
		}
	}
	sort.SliceStable(st.Entries, func(i, j int) bool { return st.Entries[i].Path < st.Entries[j].Path })
	return nil
}

// authorizedKeysOf is ~/.ssh/authorized_keys for ~/.ssh/authorized_keys.d/ignition.
func authorizedKeysOf(fragment string) string {
	return path.Join(path.Dir(path.Dir(fragment)), "authorized_keys")
}
