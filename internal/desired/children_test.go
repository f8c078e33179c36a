package desired

import (
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/drift-monitor/drift-monitor/internal/desired/discover"
	"github.com/drift-monitor/drift-monitor/internal/model"
)

// dataChild is a config reference to child, carried in a data URL.
func dataChild(child string, hash string) string {
	ref := fmt.Sprintf(`{"source":"data:;base64,%s"`, base64.StdEncoding.EncodeToString([]byte(child)))
	if hash != "" {
		ref += fmt.Sprintf(`,"verification":{"hash":%q}`, hash)
	}
	return ref + "}"
}

func sha512Hex(s string) string {
	sum := sha512.Sum512([]byte(s))
	return "sha512-" + hex.EncodeToString(sum[:])
}

func fileAt(p, content string) string {
	return fmt.Sprintf(`{"path":%q,"contents":{"source":"data:,%s"}}`, p, content)
}

func withChildren(version, kind, refs string, files ...string) string {
	return fmt.Sprintf(`{"ignition":{"version":%q,"config":{%q:%s}},"storage":{"files":[%s]}}`,
		version, kind, refs, strings.Join(files, ","))
}

// TestChildConfigs: merge children are applied depth-first onto the parent,
// each overriding it; a replace child discards the parent; remote children
// are never fetched and leave a config entry carrying a notice.
func TestChildConfigs(t *testing.T) {
	plain := func(files ...string) string {
		return fmt.Sprintf(`{"ignition":{"version":"3.3.0"},"storage":{"files":[%s]}}`, strings.Join(files, ","))
	}
	grandchild := plain(fileAt("/etc/deep", "deep"), fileAt("/etc/shared", "grandchild"))
	child := withChildren("3.2.0", "merge", "["+dataChild(grandchild, "")+"]",
		fileAt("/etc/child", "child"), fileAt("/etc/shared", "child"))
	tests := []struct {
		name  string
		raw   string
		files map[string]string // path: exact content
		notes []string          // config entries' Target
	}{
		{
			name: "merge: child overrides the parent, its own child overrides it",
			raw: withChildren("3.4.0", "merge", "["+dataChild(child, sha512Hex(child))+"]",
				fileAt("/etc/parent", "parent"), fileAt("/etc/shared", "parent")),
			files: map[string]string{"/etc/parent": "parent", "/etc/child": "child", "/etc/deep": "deep", "/etc/shared": "grandchild"},
		},
		{
			name: "merge: later children override earlier ones",
			raw: withChildren("3.0.0", "merge", "["+dataChild(plain(fileAt("/etc/shared", "one")), "")+","+
				dataChild(plain(fileAt("/etc/shared", "two")), "")+"]", fileAt("/etc/shared", "parent")),
			files: map[string]string{"/etc/shared": "two"},
		},
		{
			name: "replace: the parent's entries are dropped",
			raw: fmt.Sprintf(`{"ignition":{"version":"3.3.0","config":{"replace":%s}},"storage":{"files":[%s]}}`,
				dataChild(child, ""), fileAt("/etc/parent", "parent")),
			files: map[string]string{"/etc/child": "child", "/etc/deep": "deep", "/etc/shared": "grandchild"},
		},
		{
			name: "remote merge: a notice, the parent still checked",
			raw: withChildren("3.3.0", "merge", `[{"source":"https://user:pw@example.com/c.ign?token=abc"},`+dataChild(plain(fileAt("/etc/b", "b")), "")+`]`,
				fileAt("/etc/parent", "parent")),
			files: map[string]string{"/etc/parent": "parent", "/etc/b": "b"},
			notes: []string{"ignition.config.merge.0 (https://example.com/c.ign)"},
		},
		{
			name: "remote replace: nothing of the parent",
			raw: fmt.Sprintf(`{"ignition":{"version":"3.3.0","config":{"replace":{"source":"s3://bucket/c.ign"}}},"storage":{"files":[%s]}}`,
				fileAt("/etc/parent", "parent")),
			files: map[string]string{},
			notes: []string{"ignition.config.replace (s3://bucket/c.ign)"},
		},
		{
			name:  "remote grandchild: named through its data-URL parent",
			raw:   withChildren("3.3.0", "merge", "["+dataChild(withChildren("3.3.0", "merge", `[{"source":"tftp://10.0.0.1/x.ign"}]`), "")+"]"),
			files: map[string]string{},
			notes: []string{"ignition.config.merge.0 > ignition.config.merge.0 (tftp://10.0.0.1/x.ign)"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, err := deriveState("/", []string{"/etc/drift-monitor/desired.d/10.ign"}, [][]byte{[]byte(tt.raw)}, [4][]byte{})
			if err != nil {
				t.Fatal(err)
			}
			files := map[string]string{}
			var notes []string
			for _, e := range st.Entries {
				switch e.Kind {
				case model.KindFile:
					files[e.Path] = string(e.Content.Exact)
				case model.KindConfig:
					if e.Path != "/etc/drift-monitor/desired.d/10.ign" || e.Content == nil || e.Content.Unverifiable == "" {
						t.Errorf("config entry %+v: want the referencing file's path and an unverifiable reason", e)
					}
					notes = append(notes, e.Target)
				}
			}
			if diff := cmp.Diff(tt.files, files); diff != "" {
				t.Errorf("files (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.notes, notes); diff != "" {
				t.Errorf("unfetched children (-want +got):\n%s", diff)
			}
			for _, w := range st.Warnings {
				if strings.Contains(w, "token") || strings.Contains(w, "pw@") {
					t.Errorf("warning shows a credential: %s", w)
				}
			}
		})
	}
}

func TestChildConfigErrors(t *testing.T) {
	child := `{"ignition":{"version":"3.3.0"}}`
	tests := []struct{ name, raw, want string }{
		{"hash mismatch", withChildren("3.3.0", "merge", "["+dataChild(child, sha512Hex(child+" "))+"]"),
			"10.ign: ignition.config.merge.0: verification.hash does not match"},
		{"invalid child", withChildren("3.3.0", "merge", "["+dataChild(`{"ignition":{"version":"9.9.9"}}`, "")+"]"),
			"10.ign: ignition.config.merge.0: the child config is invalid"},
		{"child conflicts with the parent", withChildren("3.3.0", "merge",
			"["+dataChild(`{"ignition":{"version":"3.3.0"},"storage":{"links":[{"path":"/etc/a","target":"/x"}]}}`, "")+"]",
			fileAt("/etc/a/b", "x")),
			"10.ign: after merging its child configs"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("10.ign", []byte(tt.raw))
			if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
				t.Fatalf("Parse: %v, want an error starting %q", err, tt.want)
			}
		})
	}
}

func TestHostPath(t *testing.T) {
	for _, tt := range []struct{ root, file, want string }{
		{"/", "/etc/x.ign", "/etc/x.ign"},
		{"/srv/root", "/srv/root/etc/x.ign", "/etc/x.ign"},
		{"/srv/root", "/tmp/x.ign", "/tmp/x.ign"},
	} {
		if got := discover.HostPath(tt.root, tt.file); got != tt.want {
			t.Errorf("discover.HostPath(%q, %q) = %q, want %q", tt.root, tt.file, got, tt.want)
		}
	}
}

// TestSuppliedChild: a *.child file whose digest is a remote child's
// verification.hash stands for the child; one that matches nothing is a
// warning, and the child stays unfetched.
func TestSuppliedChild(t *testing.T) {
	child := `{"ignition":{"version":"3.3.0"},"storage":{"files":[` + fileAt("/etc/remote-child", "declared") + `]}}`
	parent := func(hash string) string {
		return withChildren("3.3.0", "merge", fmt.Sprintf(`[{"source":"https://example.com/c.ign","verification":{"hash":%q}}]`, hash),
			fileAt("/etc/parent", "parent"))
	}
	tests := []struct {
		name      string
		hash      string
		supply    string
		files     []string
		unfetched int
		warning   string
	}{
		{"sha512 matches", sha512Hex(child), child, []string{"/etc/parent", "/etc/remote-child"}, 0, ""},
		{"sha256 matches, upper case", "sha256-" + strings.ToUpper(sha256Hex(child)), child, []string{"/etc/parent", "/etc/remote-child"}, 0, ""},
		{"another file's digest", sha512Hex(child), child + " ", []string{"/etc/parent"}, 1, "/d/c.child: supplies no child config"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, err := deriveState("/", []string{"/d/10.ign", "/d/c.child"}, [][]byte{[]byte(parent(tt.hash)), []byte(tt.supply)}, [4][]byte{})
			if err != nil {
				t.Fatal(err)
			}
			var files []string
			unfetched := 0
			for _, e := range st.Entries {
				switch e.Kind {
				case model.KindFile:
					files = append(files, e.Path)
				case model.KindConfig:
					unfetched++
				}
			}
			if diff := cmp.Diff(tt.files, files); diff != "" {
				t.Errorf("files (-want +got):\n%s", diff)
			}
			if unfetched != tt.unfetched {
				t.Errorf("%d unfetched children, want %d", unfetched, tt.unfetched)
			}
			if diff := cmp.Diff([]string{"/d/10.ign", "/d/c.child"}, st.Files); diff != "" {
				t.Errorf("files the state came from (-want +got):\n%s", diff)
			}
			warned := false
			for _, w := range st.Warnings {
				warned = warned || (tt.warning != "" && strings.HasPrefix(w, tt.warning))
			}
			if warned != (tt.warning != "") {
				t.Errorf("warnings %q, want one starting %q", st.Warnings, tt.warning)
			}
		})
	}
	if !discover.IsFragmentName("worker.child") {
		t.Error("a .child file is not read with the config files: its changes would not reload the daemon")
	}
}

func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}
