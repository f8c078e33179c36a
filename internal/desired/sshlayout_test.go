package desired

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/drift-monitor/drift-monitor/internal/desired/statekey"
	"github.com/google/go-cmp/cmp"
)

func TestDecideSSHLayout(t *testing.T) {
	const frag, keys = "/home/core/.ssh/authorized_keys.d/ignition", "/home/core/.ssh/authorized_keys"
	osr := func(s string) map[string]string { return parseOSRelease([]byte(s)) }
	tests := []struct {
		name    string
		setting string
		os      map[string]string
		present []string
		want    SSHLayout
		wantErr bool
	}{
		{name: "Fedora CoreOS", os: osr("ID=fedora\nVARIANT_ID=coreos\nVERSION_ID=40\n"), present: []string{keys}, want: SSHFragment},
		{name: "RHEL 8", os: osr(`ID="rhel"` + "\nVERSION_ID=\"8.6\"\n"), want: SSHAuthorizedKeys},
		{name: "RHEL 9", os: osr("ID=rhel\nVERSION_ID=9.4\n"), want: SSHFragment},
		{name: "CentOS Stream 8", os: osr("ID=\"centos\"\nID_LIKE=\"rhel fedora\"\nVERSION_ID=\"8\"\n"), want: SSHAuthorizedKeys},
		{name: "CentOS Stream 9", os: osr("ID=centos\nVERSION_ID=9\n"), present: []string{keys}, want: SSHFragment},
		{name: "RHCOS 4.12 (RHEL 8.6)", os: osr("ID=\"rhcos\"\nVERSION_ID=\"412.86\"\nRHEL_VERSION=\"8.6\"\nOPENSHIFT_VERSION=\"4.12\"\n"), want: SSHAuthorizedKeys},
		{name: "RHCOS 4.16 (RHEL 9.4)", os: osr("ID=rhcos\nVERSION_ID=416.94\nRHEL_VERSION=9.4\nOPENSHIFT_VERSION=4.16\n"), want: SSHFragment},
		{name: "RHCOS without RHEL_VERSION, OpenShift 4.11", os: osr("ID=rhcos\nOPENSHIFT_VERSION=4.11\n"), want: SSHAuthorizedKeys},
		{name: "openSUSE MicroOS", os: osr("ID=\"opensuse-microos\"\nID_LIKE=\"suse opensuse opensuse-tumbleweed\"\n"), present: []string{frag}, want: SSHAuthorizedKeys},
		{name: "SLE Micro", os: osr("ID=sle-micro\nVERSION_ID=5.5\n"), want: SSHAuthorizedKeys},
		{name: "unknown OS, fragment present", os: osr("ID=debian\n"), present: []string{frag, keys}, want: SSHFragment},
		{name: "unknown OS, only authorized_keys present", os: osr("ID=debian\n"), present: []string{keys}, want: SSHAuthorizedKeys},
		{name: "no os-release, nothing present: upstream's default", want: SSHFragment},
		{name: "override: authorized_keys", setting: "authorized_keys", os: osr("ID=fedora\n"), want: SSHAuthorizedKeys},
		{name: "override: fragment", setting: "fragment", os: osr("ID=rhel\nVERSION_ID=8.10\n"), want: SSHFragment},
		{name: "override: auto", setting: "auto", os: osr("ID=rhel\nVERSION_ID=8.10\n"), want: SSHAuthorizedKeys},
		{name: "override: invalid", setting: "both", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			present := func(p string) bool {
				for _, q := range tt.present {
					if p == q {
						return true
					}
				}
				return false
			}
			got, err := DecideSSHLayout(tt.setting, tt.os, []string{frag}, []string{keys}, present)
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Errorf("DecideSSHLayout = %v, %v; want %v (error: %v)", got, err, tt.want, tt.wantErr)
			}
		})
	}
}

func TestLoadStateSSHLayout(t *testing.T) {
	const cfg = `{"ignition":{"version":"3.3.0"},"passwd":{"users":[{"name":"core","sshAuthorizedKeys":["k"]}]},
		"storage":{"files":[{"path":"/home/core/.ssh/authorized_keys.e","contents":{"source":"data:,"}}]}}`
	tests := []struct {
		name, osRelease, setting string
		want                     []string
	}{
		{"RHEL 8: authorized_keys", "ID=rhel\nVERSION_ID=8.6\n", "",
			[]string{"/etc/passwd", "/home/core/.ssh/authorized_keys", "/home/core/.ssh/authorized_keys.e"}},
		{"Fedora: fragment", "ID=fedora\n", "",
			[]string{"/etc/passwd", "/home/core/.ssh/authorized_keys.d/ignition", "/home/core/.ssh/authorized_keys.e"}},
		{"RHEL 8 overridden", "ID=rhel\nVERSION_ID=8.6\n", "fragment",
			[]string{"/etc/passwd", "/home/core/.ssh/authorized_keys.d/ignition", "/home/core/.ssh/authorized_keys.e"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(SSHKeysEnv, tt.setting)
			root := t.TempDir()
			writeFile(t, filepath.Join(root, "etc/passwd"), "core:x:1000:1000::/home/core:/bin/sh\n")
			writeFile(t, filepath.Join(root, "usr/lib/os-release"), tt.osRelease)
			writeFile(t, filepath.Join(root, "etc/drift-monitor/desired.d/a.ign"), cfg)
			for _, c := range []statekey.Cache{nil, &memCache{}} {
				for range 2 { // the second through the cache, when there is one
					st, err := LoadCached(c, dirHost(root), nil, nil)
					if err != nil {
						t.Fatal(err)
					}
					var got []string
					for _, e := range st.Entries {
						got = append(got, e.Path)
					}
					if diff := cmp.Diff(tt.want, got); diff != "" {
						t.Errorf("paths (-want +got):\n%s", diff)
					}
				}
				if m, ok := c.(*memCache); ok && (m.puts != 1 || m.hits != 1) {
					t.Errorf("%d states kept and %d served by the cache, want 1 and 1", m.puts, m.hits)
				}
			}
		})
	}
	t.Run("invalid setting names the variable", func(t *testing.T) {
		t.Setenv(SSHKeysEnv, "nope")
		root := t.TempDir()
		writeFile(t, filepath.Join(root, "etc/drift-monitor/desired.d/a.ign"), cfg)
		if _, err := LoadState(dirHost(root), nil); err == nil || !strings.Contains(err.Error(), SSHKeysEnv) {
			t.Errorf("LoadState = %v, want an error naming %s", err, SSHKeysEnv)
		}
	})
}
