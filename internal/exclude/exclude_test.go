package exclude

import (
	"strings"
	"testing"

	"github.com/drift-monitor/drift-monitor/internal/drift"
	"github.com/google/go-cmp/cmp"
)

func mustParse(t *testing.T, text string) *Rules {
	t.Helper()
	ps, err := Parse("exclude.conf", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	return New(ps...)
}

// TestLeaves: a pattern matches a path or any directory above it, by
// path.Match; a literal pattern and a glob answer alike.
func TestLeaves(t *testing.T) {
	r := mustParse(t, "# rotated by cert-manager\n/etc/pki/ca-trust\n\n  /var/lib/kubelet/*.json  \n/srv/[ab]x/\n")
	for p, want := range map[string]bool{
		"/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem": true,
		"/etc/pki/ca-trust":              true,
		"/etc/pki":                       false,
		"/etc/pki/ca-trust-other":        false,
		"/etc/pki/other":                 false,
		"/var/lib/kubelet/config.json":   true,
		"/var/lib/kubelet/config.json/x": true,
		"/var/lib/kubelet/sub/conf.json": false,
		"/srv/ax/file":                   true,
		"/srv/cx/file":                   false,
		// A path that is not absolute matches nothing, and the walk up
		// ends (path.Dir never reaches "/" from it).
		"etc/pki/ca-trust": false,
		"":                 false,
	} {
		if _, got := r.Leaves(p); got != want {
			t.Errorf("Leaves(%q) = %v, want %v", p, got, want)
		}
		if got := r.Forbids(p); got != want {
			t.Errorf("Forbids(%q) = %v, want %v", p, got, want)
		}
	}
	if p, _ := r.Leaves("/var/lib/kubelet/config.json"); p.Describe() != "/var/lib/kubelet/*.json (exclude.conf:4)" {
		t.Errorf("the pattern is described as %q", p.Describe())
	}
	var none *Rules
	if _, ok := none.Leaves("/etc"); ok || none.Unreported("content", "/etc") || !none.Empty() || none.DriftFilter() != nil {
		t.Errorf("the nil rulebook leaves something alone")
	}
}

// TestKindPatterns: KIND:PATTERN leaves that kind of drift unreported at
// the matching paths (and below them), and the paths themselves checked;
// other kinds there, and that kind elsewhere, are reported.
func TestKindPatterns(t *testing.T) {
	r := mustParse(t, "fileattr:/etc/kubernetes/\nxattr:/usr/local/bin/*\n/var/tmp\n")
	if _, ok := r.Leaves("/etc/kubernetes/kubelet.conf"); ok {
		t.Errorf("a kind pattern left the whole path alone")
	}
	if r.LeavesEntry("/etc/kubernetes/kubelet.conf") || r.Forbids("/etc/kubernetes/kubelet.conf") {
		t.Errorf("a kind pattern left the entry alone, or forbade its repair")
	}
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
		{drift.Content, "/var/tmp/x", true},
		{drift.Content, "var/tmp/x", false},
	} {
		if got := r.Unreported(string(c.kind), c.path); got != c.want {
			t.Errorf("Unreported(%s, %s) = %v, want %v", c.kind, c.path, got, c.want)
		}
		if got := r.DriftFilter()(&drift.Drift{Kind: c.kind, Path: c.path}); got != c.want {
			t.Errorf("DriftFilter(%s at %s) = %v, want %v", c.kind, c.path, got, c.want)
		}
	}
}

// TestParseErrors: every refusal names the file and line, or the flag, and
// what is wrong.
func TestParseErrors(t *testing.T) {
	for line, want := range map[string]string{
		"relative/path":         `x.conf:3: pattern "relative/path" is not an absolute path`,
		"labels:/etc/x":         `x.conf:3: pattern "labels:/etc/x": "labels" is not a kind of drift`,
		"acl:etc/x":             `x.conf:3: pattern "acl:etc/x" is not an absolute path`,
		"acl:/etc/[":            `x.conf:3: pattern "acl:/etc/[": syntax error in pattern`,
		"/etc/[a-":              `x.conf:3: pattern "/etc/[a-": syntax error in pattern`,
		"/":                     `x.conf:3: pattern "/" matches every path`,
		"/*":                    `x.conf:3: pattern "/*" matches every path`,
		"/etc/\x1b[2Jx":         `x.conf:3: not a pattern: control characters`,
		"/etc/\xff":             `x.conf:3: not a pattern: control characters or bytes that are not UTF-8`,
		"C:/Windows/system.ini": `x.conf:3: pattern "C:/Windows/system.ini": "C" is not a kind of drift`,
	} {
		_, err := Parse("x.conf", []byte("# two lines before\n/etc/fine\n"+line+"\n/etc/after\n"))
		if err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%q: error %v, want one starting %q", line, err, want)
		}
		if err != nil && (strings.ContainsRune(err.Error(), 0x1b) || strings.Contains(err.Error(), "\xff")) {
			t.Errorf("%q: the error shows the control character: %q", line, err)
		}
	}
	// A kind may cover everything: label:/ leaves every label alone.
	if _, err := Parse("x.conf", []byte("label:/\n")); err != nil {
		t.Errorf("label:/ refused: %v", err)
	}
	ps, err := Parse("x.conf", []byte("\r\n/etc/a/\r\n# c\n\tlabel:/etc/b//c\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := []Pattern{{Glob: "/etc/a", From: "x.conf:2"}, {Kind: "label", Glob: "/etc/b/c", From: "x.conf:4"}}
	if diff := cmp.Diff(want, ps); diff != "" {
		t.Errorf("patterns (-want +got):\n%s", diff)
	}
}

// FuzzParse: whatever the file holds, Parse either refuses it or returns
// patterns that parse again to themselves and that every question takes
// without a panic.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"/etc/pki\n", "label:/etc/*\n# c\n", "/etc/[a-\n", "\xff\n", "/a/b/../c\n", "content:/x/?y\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ps, err := Parse("f", data)
		if err != nil {
			return
		}
		r := New(ps...)
		for _, p := range ps {
			again, err := ParsePattern(p.String(), p.From)
			if err != nil || again != p {
				t.Fatalf("%q parses to %+v, which parses again to %+v (%v)", data, p, again, err)
			}
			r.Leaves(p.Glob)
			r.Unreported(p.Kind, p.Glob)
		}
	})
}

// TestIndexAnswersAsEveryPattern: the rulebook's index of its globs gives
// the answer of trying every pattern on the path and each directory above
// it, for globs whose character classes and escapes match a "/" too.
func TestIndexAnswersAsEveryPattern(t *testing.T) {
	globs := []string{"/etc/*", "/etc/a*/b", "/etc/a?b", "/etc/a[/]b", `/etc/a\/b`, "/etc/[a-c]x/y", "/e*/k/*.json",
		"/etc/kubernetes/*", "/var/lib/*/x", "/*/a/b", "/etc/a[^x]b/c", "/etc/\\*"}
	paths := []string{"/etc", "/etc/a/b", "/etc/a/b/c", "/etc/axb", "/etc/ax/b", "/etc/bx/y/z", "/etc/k/v.json", "/e/k/x.json/y",
		"/etc/kubernetes", "/etc/kubernetes/kubelet.conf", "/var/lib/kubelet/x", "/var/lib/x", "/usr/a/b", "/etc/*", "/etc/x",
		"/etc/a+b/c/d", "/srv"}
	for _, g := range globs {
		p, err := ParsePattern(g, "t")
		if err != nil {
			t.Fatal(err)
		}
		r := New(p)
		for _, q := range paths {
			if _, got := r.Leaves(q); got != matchUp(p.Glob, q) {
				t.Errorf("%s leaves %s alone: %v, want %v", g, q, got, !got)
			}
		}
	}
}
