package firstboot

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/drift-monitor/drift-monitor/internal/desired"
	"github.com/drift-monitor/drift-monitor/internal/model"
	"github.com/drift-monitor/drift-monitor/internal/ondisk"
	"github.com/google/go-cmp/cmp"
)

var testKey = []byte("0123456789abcdef0123456789abcdef")

// firstBootRoot is a root as Ignition left it for config: a directory it
// made (no mode declared), one it kept, and files only appended to: to
// nothing, to a base anyone could read, to a secret base, and to an /etc
// file whose base is its /usr/etc twin's on an rpm-ostree host.
const config = `{"ignition": {"version": "3.3.0"}, "storage": {
  "directories": [{"path": "/foo/bar"}, {"path": "/var/kept"}, {"path": "/var/declared", "mode": 448}],
  "files": [
    {"path": "/etc/motd", "append": [{"source": "data:,line%201%0A"}, {"source": "data:,line%202%0A"}]},
    {"path": "/etc/issue", "append": [{"source": "data:,frag%0A"}]},
    {"path": "/etc/secret.conf", "append": [{"source": "data:,frag%0A"}]},
    {"path": "/etc/os-motd", "append": [{"source": "data:,frag%0A"}]},
    {"path": "/etc/damaged", "append": [{"source": "data:,frag%0A"}]},
    {"path": "/etc/exact", "mode": 420, "contents": {"source": "data:,x"}}
  ]}}`

const secretBase = "token=SECRET-BASE-MARKER\n"

func firstBootRoot(t *testing.T, ostree bool) (root string, cfg string) {
	t.Helper()
	root = t.TempDir()
	for p, mode := range map[string]os.FileMode{"foo/bar": 0o755, "var/kept": 0o710, "var/declared": 0o700, "etc": 0o755, "usr/etc": 0o755, "run": 0o755} {
		if err := os.MkdirAll(filepath.Join(root, p), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(filepath.Join(root, p), mode); err != nil {
			t.Fatal(err)
		}
	}
	for p, c := range map[string]struct {
		content string
		mode    os.FileMode
	}{
		"etc/motd":        {"line 1\nline 2\n", 0o644},
		"etc/issue":       {"banner\nfrag\n", 0o644},
		"etc/secret.conf": {secretBase + "frag\n", 0o600},
		"etc/os-motd":     {"from the image\nfrag\n", 0o640},
		"usr/etc/os-motd": {"from the image\n", 0o640},
		"etc/damaged":     {"no fragment\n", 0o644},
		"etc/exact":       {"x", 0o644},
	} {
		if err := os.WriteFile(filepath.Join(root, p), []byte(c.content), c.mode); err != nil {
			t.Fatal(err)
		}
	}
	if ostree {
		if err := os.WriteFile(filepath.Join(root, "run/ostree-booted"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cfg = filepath.Join(t.TempDir(), "config.ign")
	if err := os.WriteFile(cfg, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	return root, cfg
}

func load(t *testing.T, root, cfg string) (*ondisk.Root, model.State) {
	t.Helper()
	r, err := ondisk.OpenRoot(root)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	st, err := desired.LoadState(r, []string{cfg})
	if err != nil {
		t.Fatal(err)
	}
	return r, st
}

// TestMake: the record holds the first boot's mode and owner of every node
// the config leaves them to, and nothing of nodes it declares whole; the
// base of each append-only file as a length and a keyed digest, its bytes
// only where anyone could read them, its /usr/etc twin where that held the
// same bytes; a file that did not end with its fragments has no base, and
// says why. No secret byte, and no unkeyed digest, is in what is written.
func TestMake(t *testing.T) {
	root, cfg := firstBootRoot(t, true)
	r, st := load(t, root, cfg)
	rec, problems := Make(r, st.Entries, "/etc/drift-monitor/desired.d/x.ign", testKey)
	if len(problems) != 0 {
		t.Errorf("problems %q, want none", problems)
	}
	uid, gid := os.Getuid(), os.Getgid()
	keyedOf := func(s string) model.Digest {
		sum := sha256.Sum256([]byte(s))
		m := hmac.New(sha256.New, testKey)
		m.Write(sum[:])
		return model.Digest(m.Sum(nil))
	}
	want := []Node{
		{Path: "/etc/damaged", Type: "file", Mode: "0644", UID: uid, GID: gid, Origin: "ignition",
			Base: &model.Base{Unknown: "at the first boot it did not end with its appended fragments"}},
		{Path: "/etc/issue", Type: "file", Mode: "0644", UID: uid, GID: gid, Origin: "ignition",
			Base: &model.Base{Size: 7, Keyed: keyedOf("banner\n"), Bytes: []byte("banner\n")}},
		{Path: "/etc/motd", Type: "file", Mode: "0644", UID: uid, GID: gid, Origin: "ignition",
			Base: &model.Base{Size: 0, Keyed: keyedOf(""), Bytes: []byte{}}},
		{Path: "/etc/os-motd", Type: "file", Mode: "0640", UID: uid, GID: gid, Origin: "image",
			Base: &model.Base{Size: 15, Keyed: keyedOf("from the image\n"), Twin: "/usr/etc/os-motd"}},
		{Path: "/etc/secret.conf", Type: "file", Mode: "0600", UID: uid, GID: gid, Origin: "ignition",
			Base: &model.Base{Size: int64(len(secretBase)), Keyed: keyedOf(secretBase)}},
		{Path: "/foo/bar", Type: "directory", Mode: "0755", UID: uid, GID: gid},
		// Its mode is declared, its owner is not: the record has both,
		// and Apply takes only the owner.
		{Path: "/var/declared", Type: "directory", Mode: "0700", UID: uid, GID: gid},
		{Path: "/var/kept", Type: "directory", Mode: "0710", UID: uid, GID: gid},
	}
	if diff := cmp.Diff(want, rec.Nodes); diff != "" {
		t.Errorf("nodes (-want +got):\n%s", diff)
	}
	if !rec.OSTree || rec.KeyID != KeyID(testKey) || rec.KeyID == "" {
		t.Errorf("ostree %v, key id %q; want true, %q", rec.OSTree, rec.KeyID, KeyID(testKey))
	}
	raw, err := rec.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(secretBase))
	file := sha256.Sum256([]byte(secretBase + "frag\n"))
	for _, leak := range []string{"SECRET-BASE-MARKER", hex.EncodeToString(sum[:]), hex.EncodeToString(file[:])} {
		if strings.Contains(string(raw), leak) {
			t.Errorf("the record holds %q:\n%s", leak, raw)
		}
	}
	back, err := Parse(raw)
	if err != nil {
		t.Fatalf("Parse of Marshal: %v", err)
	}
	if diff := cmp.Diff(rec.Nodes, back.Nodes, cmp.Comparer(func(a, b []byte) bool { return string(a) == string(b) })); diff != "" {
		t.Errorf("round trip (-made +parsed):\n%s", diff)
	}

	// Without a key, no base; without /run/ostree-booted, no origin.
	root, cfg = firstBootRoot(t, false)
	r, st = load(t, root, cfg)
	rec, _ = Make(r, st.Entries, "/x.ign", nil)
	for _, n := range rec.Nodes {
		if n.Origin != "" || (n.Base != nil && n.Base.Unknown == "") {
			t.Errorf("without a key or ostree: %+v", n)
		}
	}
}

// TestApply: the record's mode and owner are wanted where no config
// declares them (and say so), never over a declaration; append-only files
// get their bases; with another key, the bases are left out, with a
// warning. A record others may write, or that is not one, is not used.
func TestApply(t *testing.T) {
	root, cfg := firstBootRoot(t, true)
	r, st := load(t, root, cfg)
	rec, _ := Make(r, st.Entries, "/x.ign", testKey)
	raw, _ := rec.Marshal()
	recFile := filepath.Join(root, "etc/record")
	if err := os.WriteFile(recFile, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	byPath := func(st model.State) map[string]model.Entry {
		m := map[string]model.Entry{}
		for _, e := range st.Entries {
			m[e.Path] = e
		}
		return m
	}

	_, st = load(t, root, cfg)
	if w := (Use{Path: "/etc/record", Key: testKey}).Apply(r, &st); len(w) != 0 {
		t.Errorf("warnings %q", w)
	}
	got := byPath(st)
	if e := got["/foo/bar"]; e.Mode == nil || *e.Mode != 0o755 || e.UID == nil || *e.UID != os.Getuid() || e.FirstBoot == nil || !e.FirstBoot.Mode || e.FirstBoot.Record != "/etc/record" {
		t.Errorf("/foo/bar after Apply: %+v", e)
	}
	if e := got["/var/declared"]; e.Mode == nil || *e.Mode != 0o700 || (e.FirstBoot != nil && e.FirstBoot.Mode) {
		t.Errorf("/var/declared: the declared mode must win: %+v", e)
	}
	if e := got["/etc/secret.conf"]; e.Content.Base == nil || e.Content.Base.Unknown != "" || !e.Content.Base.Holds([]byte(secretBase)) || e.Content.Base.Holds([]byte("other\n")) {
		t.Errorf("/etc/secret.conf's base: %+v", e.Content.Base)
	}
	if e := got["/etc/damaged"]; e.Content.Base == nil || !strings.Contains(e.Content.Base.Unknown, "did not end") {
		t.Errorf("/etc/damaged's base: %+v", e.Content.Base)
	}
	if e := got["/etc/exact"]; e.Content.Base != nil || e.FirstBoot != nil {
		t.Errorf("/etc/exact is declared whole, the record has nothing for it: %+v", e)
	}

	_, st = load(t, root, cfg)
	w := (Use{Path: "/etc/record", Key: []byte("another key, another host......")}).Apply(r, &st)
	if len(w) != 1 || !strings.Contains(w[0], "another digest key") {
		t.Errorf("warnings with another key: %q", w)
	}
	if e := byPath(st)["/etc/secret.conf"]; e.Content.Base == nil || e.Content.Base.Unknown == "" {
		t.Errorf("with another key, the base is used: %+v", e.Content.Base)
	}
	if e := byPath(st)["/foo/bar"]; e.Mode == nil || *e.Mode != 0o755 {
		t.Errorf("with another key, the modes are not used: %+v", e)
	}

	for name, bad := range map[string]struct {
		raw  string
		mode os.FileMode
		want string
	}{
		"group-readable": {string(raw), 0o640, "lets others at it"},
		"not JSON":       {"{", 0o600, "not used"},
		"other version":  {`{"version": 2, "nodes": []}`, 0o600, "version 2"},
		"relative path":  {`{"version": 1, "nodes": [{"path": "etc/x", "type": "file", "mode": "0644"}]}`, 0o600, "not a clean absolute path"},
		// Two records in one file (an append instead of a replace): which
		// one is meant cannot be told, so neither is used.
		"two records":   {string(raw) + string(raw), 0o600, "after the record"},
		"trailing data": {string(raw) + "x", 0o600, "after the record"},
	} {
		t.Run(name, func(t *testing.T) {
			if err := os.WriteFile(recFile, []byte(bad.raw), bad.mode); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(recFile, bad.mode); err != nil {
				t.Fatal(err)
			}
			_, st := load(t, root, cfg)
			w := (Use{Path: "/etc/record", Key: testKey}).Apply(r, &st)
			if len(w) != 1 || !strings.Contains(w[0], bad.want) || !strings.Contains(w[0], "/etc/record") {
				t.Errorf("warnings %q, want one naming the record: ...%s...", w, bad.want)
			}
			if e := byPath(st)["/foo/bar"]; e.Mode != nil {
				t.Errorf("an unusable record was used: %+v", e)
			}
		})
	}

	// A directory on its path that any user may write (the rule of every
	// file of settings, package writers): not used, saying which.
	if err := os.WriteFile(recFile, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(root, "etc"), 0o777); err != nil {
		t.Fatal(err)
	}
	_, st = load(t, root, cfg)
	w = (Use{Path: "/etc/record", Key: testKey}).Apply(r, &st)
	if want := "through directory " + filepath.Join(root, "etc") + ": mode 0777"; len(w) != 1 || !strings.Contains(w[0], want) || byPath(st)["/foo/bar"].Mode != nil {
		t.Errorf("a record in a world-writable directory: warnings %q, want one saying %q", w, want)
	}
	if err := os.Chmod(filepath.Join(root, "etc"), 0o755); err != nil {
		t.Fatal(err)
	}

	// No record: nothing changes, nothing is said.
	_, st = load(t, root, cfg)
	if w := (Use{Path: "/etc/none", Key: testKey}).Apply(r, &st); len(w) != 0 || byPath(st)["/foo/bar"].Mode != nil {
		t.Errorf("without a record: warnings %q, /foo/bar %+v", w, byPath(st)["/foo/bar"])
	}
}

// TestUnits: the record keeps each declared unit's enablement as the unit
// files say right after the first boot's preset, Apply gives it to the
// unit's enablement entry, and a record made before units were recorded
// (no "units") says nothing of any unit.
func TestUnits(t *testing.T) {
	root := t.TempDir()
	for p, c := range map[string]string{
		"usr/lib/systemd/system/a.service": "[Service]\nExecStart=/bin/true\n[Install]\nAlias=b.service\n",
		"usr/lib/systemd/system/c.service": "[Service]\nExecStart=/bin/true\n[Install]\nWantedBy=multi-user.target\n",
	} {
		if err := os.MkdirAll(filepath.Join(root, filepath.Dir(p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, p), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(root, "etc/systemd/system"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/usr/lib/systemd/system/a.service", filepath.Join(root, "etc/systemd/system/b.service")); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(t.TempDir(), "config.ign")
	units := `{"ignition": {"version": "3.3.0"}, "systemd": {"units": [
	  {"name": "a.service", "enabled": true}, {"name": "c.service", "enabled": true},
	  {"name": "gone.service", "enabled": false}, {"name": "d.service", "contents": "[Service]\nExecStart=/bin/true\n"}]}}`
	if err := os.WriteFile(cfg, []byte(units), 0o600); err != nil {
		t.Fatal(err)
	}
	r, st := load(t, root, cfg)
	rec, problems := Make(r, st.Entries, "/x.ign", testKey)
	want := []Unit{{"a.service", "enabled"}, {"c.service", "disabled"}, {"gone.service", "not-found"}}
	if diff := cmp.Diff(want, rec.Units); diff != "" || len(problems) != 0 {
		t.Errorf("units (-want +got):\n%s\nproblems %q", diff, problems)
	}
	raw, err := rec.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	recFile := filepath.Join(root, "etc/record")
	if err := os.WriteFile(recFile, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	firstBoot := func() map[string]*model.FirstBoot {
		_, st := load(t, root, cfg)
		if w := (Use{Path: "/etc/record", Key: testKey}).Apply(r, &st); len(w) != 0 {
			t.Errorf("warnings %q", w)
		}
		m := map[string]*model.FirstBoot{}
		for _, e := range st.Entries {
			if e.Kind == model.KindEnablement {
				m[e.Unit] = e.FirstBoot
			}
		}
		return m
	}
	got := firstBoot()
	for unit, state := range map[string]string{"a.service": "enabled", "c.service": "disabled", "gone.service": "not-found"} {
		if fb := got[unit]; fb == nil || fb.Enablement != state || fb.Record != "/etc/record" || fb.Mode || fb.Owner || fb.Group {
			t.Errorf("%s after Apply: %+v, want enablement %s", unit, fb, state)
		}
	}

	// A record of an older drift-monitor: no units.
	legacy := rec
	legacy.Units = nil
	raw, _ = legacy.Marshal()
	noUnits := strings.Replace(string(raw), ",\n  \"units\": null", "", 1)
	if strings.Contains(noUnits, "units") {
		t.Fatalf("the legacy record has units:\n%s", noUnits)
	}
	if err := os.WriteFile(recFile, []byte(noUnits), 0o600); err != nil {
		t.Fatal(err)
	}
	for unit, fb := range firstBoot() {
		if fb != nil {
			t.Errorf("a record without units: %s has %+v", unit, fb)
		}
	}

	for name, bad := range map[string]string{
		"unknown state": `{"version": 1, "nodes": [], "units": [{"unit": "a.service", "state": "on"}]}`,
		"no unit":       `{"version": 1, "nodes": [], "units": [{"unit": "", "state": "enabled"}]}`,
		"a path":        `{"version": 1, "nodes": [], "units": [{"unit": "../a.service", "state": "enabled"}]}`,
	} {
		if _, err := Parse([]byte(bad)); err == nil {
			t.Errorf("%s: Parse(%s) took it", name, bad)
		}
	}
}
