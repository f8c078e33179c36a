package daemon

import "testing"

func TestExclusions(t *testing.T) {
	x, err := parseExclusions("x.conf", []byte("# rotated by cert-manager\n/etc/pki/ca-trust\n\n/var/lib/kubelet/*.json\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]bool{
		"/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem": true,
		"/etc/pki/ca-trust":              true,
		"/etc/pki/other":                 false,
		"/var/lib/kubelet/config.json":   true,
		"/var/lib/kubelet/sub/conf.json": false,
	} {
		if got := x.match(p); got != want {
			t.Errorf("match(%q) = %v, want %v", p, got, want)
		}
	}
	if _, err := parseExclusions("x.conf", []byte("relative/path\n"), nil); err == nil || err.Error() != `x.conf:1: pattern "relative/path" is not an absolute path` {
		t.Errorf("relative pattern: got error %v", err)
	}
}
