package daemon

import (
	"strings"
	"testing"

	"github.com/drift-monitor/drift-monitor/internal/drift"
)

// TestKindExclusions: KIND:PATTERN leaves that kind of drift unreported
// at the matching paths (and below them), and the path watched; other
// kinds there, and that kind elsewhere, are reported.
func TestKindExclusions(t *testing.T) {
	x, err := parseExclusions("exclude.conf", []byte("fileattr:/etc/kubernetes/\nxattr:/usr/local/bin/*\n/var/tmp\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if Excluded(x, "/etc/kubernetes/kubelet.conf") {
		t.Errorf("a kind pattern excluded the whole path")
	}
	if !Excluded(x, "/var/tmp/x") {
		t.Errorf("a path pattern no longer excludes")
	}
	ex := x.kindExclusion()
	for _, c := range []struct {
		kind drift.Kind
		path string
		want bool
	}{
		{drift.FileAttr, "/etc/kubernetes/kubelet.conf", true},
		{drift.FileAttr, "/etc/kubernetes", true},
		{drift.Content, "/etc/kubernetes/kubelet.conf", false},
		{drift.FileAttr, "/etc/other", false},
		{drift.Xattr, "/usr/local/bin/tool", true},
		{drift.ACL, "/usr/local/bin/tool", false},
		// A user's password drift is reported at /etc/shadow, its entry
		// at /etc/passwd: a path pattern leaves the drift alone too.
		{drift.PasswordHash, "/var/tmp/shadow", true},
	} {
		if got := ex(&drift.Drift{Kind: c.kind, Path: c.path}); got != c.want {
			t.Errorf("%s at %s excluded = %v, want %v", c.kind, c.path, got, c.want)
		}
	}
	// A drift without an absolute path (none has one today) is not
	// excluded, and its matching ends.
	if ex(&drift.Drift{Kind: drift.Content}) || ex(&drift.Drift{Kind: drift.Content, Path: "etc/x"}) {
		t.Errorf("a drift without an absolute path was excluded")
	}
	if parsed, _ := parseExclusions("f", nil, nil); parsed.kindExclusion() != nil {
		t.Errorf("no pattern, yet a drift filter")
	}
	for line, want := range map[string]string{
		"labels:/etc/x": `"labels" is not a kind of drift`,
		"acl:etc/x":     "is not an absolute path",
		"acl:/etc/[":    "syntax error",
	} {
		if _, err := parseExclusions("f", []byte(line+"\n"), nil); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %v, want one saying %q", line, err, want)
		}
	}
}
