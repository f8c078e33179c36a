package conformance_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"

	"github.com/drift-monitor/drift-monitor/test/ostree"
)

// The first-boot record's paths, as drift-monitor(8) documents them.
const (
	adoptedConfig = "/etc/drift-monitor/desired.d/10-firstboot.ignition-cache.json"
	recordPath    = "/etc/drift-monitor/desired.d/10-firstboot.record"
)

// adoptFirstBoot does what drift-monitor-adopt.service does right after
// Ignition: the config cache Ignition wrote is left in the root's /run, and
// `drift-monitor adopt --root` adopts it and records what it leaves to the
// node. It returns the adopted config's path outside the root.
func adoptFirstBoot(t *testing.T, root string) string {
	t.Helper()
	return adoptCache(t, root, filepath.Join(filepath.Dir(root), "run", "cache.json"))
}

// adoptCache is adoptFirstBoot with Ignition's cache at cachePath.
func adoptCache(t *testing.T, root, cachePath string) string {
	t.Helper()
	cache, err := os.ReadFile(cachePath)
	if err != nil {
		t.Fatalf("Ignition's cache: %v", err)
	}
	mustMkdir(t, at(root, "/run"), 0o755)
	mustWrite(t, at(root, "/run/ignition.json"), string(cache), 0o640)
	r := runBinary(t, "adopt", "--root", root)
	if r.exit != 0 || r.stderr != "" {
		t.Fatalf("drift-monitor adopt: exit %d\nstdout:\n%s\nstderr:\n%s", r.exit, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stdout, "recorded what") {
		t.Errorf("drift-monitor adopt does not say it recorded anything:\n%s", r.stdout)
	}
	return at(root, adoptedConfig)
}

// recordNode is what the tests read of a node of the record.
type recordNode struct {
	Path string `json:"path"`
	Type string `json:"type"`
	Mode string `json:"mode"`
	UID  int    `json:"uid"`
	GID  int    `json:"gid"`
	Base *struct {
		Unknown string `json:"unknown"`
		Size    int64  `json:"size"`
		Digest  string `json:"digest"`
		Bytes   []byte `json:"bytes"`
	} `json:"base"`
}

// readRecord asserts the record is root's alone (0600, root's, in a 0700
// directory of root's) and returns its nodes by path and its bytes.
func readRecord(t *testing.T, root string) (map[string]recordNode, string) {
	t.Helper()
	for p, want := range map[string]uint32{recordPath: 0o600, filepath.Dir(recordPath): 0o700} {
		var st syscall.Stat_t
		if err := syscall.Lstat(at(root, p), &st); err != nil {
			t.Fatalf("the first-boot record: %v", err)
		}
		if st.Mode&0o7777 != want || st.Uid != 0 || st.Gid != 0 {
			t.Errorf("%s: mode %04o, owner %d:%d; want %04o, root's", p, st.Mode&0o7777, st.Uid, st.Gid, want)
		}
	}
	raw := read(t, root, recordPath)
	var rec struct {
		Version int          `json:"version"`
		Config  string       `json:"config"`
		Nodes   []recordNode `json:"nodes"`
	}
	if err := json.Unmarshal([]byte(raw), &rec); err != nil {
		t.Fatalf("the first-boot record is not JSON: %v\n%s", err, raw)
	}
	if rec.Version != 1 || rec.Config != adoptedConfig {
		t.Errorf("record version %d of %q, want 1 of %q", rec.Version, rec.Config, adoptedConfig)
	}
	nodes := map[string]recordNode{}
	for _, n := range rec.Nodes {
		nodes[n.Path] = n
	}
	return nodes, raw
}

// TestFirstBootRecord: the real Ignition provisions a root with a
// directory and files declared without mode, files only appended to (one
// new, one the image had for root's eyes only, one the image had for
// everyone), and a directory the image had; `drift-monitor adopt` records
// what Ignition left. Then a `chmod 0700` on the directory Ignition made
// 0755 is drift, as is an append-only file that lost a fragment or got its
// first one twice; reconcile restores exactly what Ignition wrote, taking
// each base from the record, the file, or nowhere (a secret base that is
// gone: refused, never guessed); and without the record check is lenient
// about modes again and reconcile refuses the append-only file.
func TestFirstBootRecord(t *testing.T) {
	requireTier(t)
	const (
		line1, line2 = "Welcome, line 1\n", "line 2\n"
		secretBase   = "token=FIRSTBOOT-SECRET-BASE-7qX2\n"
		publicBase   = "Banner from the image\n"
		fromIgnition = "from Ignition\n"
	)
	cfg := config{Ignition: version{"3.3.0"}, Storage: &storage{
		Directories: []directory{{Path: "/foo/bar"}, {Path: "/var/kept"}},
		Files: []file{
			{Path: "/etc/motd", Append: []resource{*percentURL(line1), *percentURL(line2)}},
			{Path: "/etc/pre/secret.conf", Append: []resource{*percentURL(fromIgnition)}},
			{Path: "/etc/issue", Append: []resource{*percentURL(fromIgnition)}},
			{Path: "/etc/pre/empty"},
		},
	}}
	root, log, err := runIgnition(t, cfg.json(), prepare{before: func(t *testing.T, root string) {
		mustMkdir(t, at(root, "/etc/pre"), 0o755)
		mustWrite(t, at(root, "/etc/pre/secret.conf"), secretBase, 0o600)
		chown(t, root, "/etc/pre/secret.conf", 1000, 1000)
		mustWrite(t, at(root, "/etc/issue"), publicBase, 0o644)
		mustMkdir(t, at(root, "/var/kept"), 0o700)
		chmod(t, root, "/var/kept", 0o710)
		chown(t, root, "/var/kept", 1000, 1001)
	}})
	if err != nil {
		t.Fatalf("%v\nIgnition's log:\n%s", err, log)
	}
	ignition := snapshot(t, root)
	// What Ignition wrote, as this test (and the record's rules) assume.
	if got := read(t, root, "/etc/motd"); got != line1+line2 {
		t.Fatalf("Ignition wrote /etc/motd = %q", got)
	}
	if n := ignition["/foo/bar"]; n.Type != "dir" || n.Mode != 0o755 || n.UID != 0 {
		t.Fatalf("Ignition made /foo/bar %+v, want a 0755 directory of root's", n)
	}
	cfgFile := adoptFirstBoot(t, root)
	recorded := snapshot(t, root) // with the adopted config and the record

	nodes, raw := readRecord(t, root)
	for p, want := range map[string]recordNode{
		"/foo/bar":       {Type: "directory", Mode: "0755", UID: 0, GID: 0},
		"/var/kept":      {Type: "directory", Mode: "0710", UID: 1000, GID: 1001},
		"/etc/motd":      {Type: "file", Mode: "0644", UID: 0, GID: 0},
		"/etc/pre/empty": {Type: "file", Mode: "0644", UID: 0, GID: 0},
	} {
		n := nodes[p]
		if n.Type != want.Type || n.Mode != want.Mode || n.UID != want.UID || n.GID != want.GID {
			t.Errorf("record of %s: %+v, want %+v", p, n, want)
		}
	}
	for p, size := range map[string]int64{"/etc/motd": 0, "/etc/pre/secret.conf": int64(len(secretBase)), "/etc/issue": int64(len(publicBase))} {
		b := nodes[p].Base
		if b == nil || b.Unknown != "" || b.Size != size || !strings.HasPrefix(b.Digest, "hmac-sha256:") {
			t.Errorf("record of %s's base: %+v, want %d bytes with a keyed digest", p, b, size)
		}
	}
	if b := nodes["/etc/issue"].Base; b == nil || string(b.Bytes) != publicBase {
		t.Errorf("record of /etc/issue's base keeps no bytes: the image's file was anyone's to read")
	}
	if b := nodes["/etc/pre/secret.conf"].Base; b != nil && b.Bytes != nil {
		t.Errorf("record of /etc/pre/secret.conf keeps its base's bytes: they were root's and uid 1000's alone")
	}
	// No secret byte, and no unkeyed digest of anything secret: the base,
	// the file, the fragment appended to it.
	for _, s := range []string{secretBase, secretBase + fromIgnition} {
		sum := sha256.Sum256([]byte(s))
		for _, leak := range []string{strings.TrimSuffix(s, "\n"), "FIRSTBOOT-SECRET", hex.EncodeToString(sum[:])} {
			if strings.Contains(raw, leak) {
				t.Errorf("the record holds %q, of a secret file:\n%s", leak, raw)
			}
		}
	}

	exit, rep := check(t, root, cfgFile)
	wantClean(t, root, exit, rep)

	// Ignition's blackbox directories.create / directories.defaultperms:
	// the directory it created is 0755; 0700 is drift now, and says where
	// the 0755 comes from.
	chmod(t, root, "/foo/bar", 0o700)
	exit, rep = check(t, root, cfgFile)
	wantDrift(t, root, exit, rep, []key{drifted("mode", "directory", "/foo/bar")})
	if len(rep.Drift) == 1 && !strings.Contains(rep.Drift[0].Message, "first boot") {
		t.Errorf("the mode drift does not say the mode is the first boot's: %q", rep.Drift[0].Message)
	}
	chown(t, root, "/var/kept", 0, -1)
	exit, rep = check(t, root, cfgFile)
	wantDrift(t, root, exit, rep, []key{drifted("mode", "directory", "/foo/bar"), drifted("owner", "directory", "/var/kept")})
	exit, rrep := reconcileRoot(t, root, cfgFile)
	if exit != 0 || len(rrep.Refused) != 0 {
		t.Fatalf("reconcile: exit %d, %s", exit, pretty(rrep))
	}
	compareNodes(t, recorded, snapshot(t, root), "/foo/bar", "/var/kept")

	// The case: /etc/motd lost its second line. The old reconcile
	// wrote line 1 + line 1 + line 2, and check called that clean.
	rewrite(t, root, "/etc/motd", line1)
	exit, rep = check(t, root, cfgFile)
	wantDrift(t, root, exit, rep, []key{drifted("content", "file", "/etc/motd")})
	exit, rrep = reconcileRoot(t, root, cfgFile)
	if exit != 0 || len(rrep.Refused) != 0 {
		t.Fatalf("reconcile: exit %d, %s", exit, pretty(rrep))
	}
	if got := read(t, root, "/etc/motd"); got != line1+line2 {
		t.Errorf("reconciled /etc/motd = %q, want Ignition's %q", got, line1+line2)
	}
	rewrite(t, root, "/etc/motd", line1+line1+line2)
	exit, rep = check(t, root, cfgFile)
	wantDrift(t, root, exit, rep, []key{drifted("content", "file", "/etc/motd")})

	// A kept base: from the start of the file (a secret one), from the
	// record (a public one), or refused when nothing holds it any more.
	rewrite(t, root, "/etc/pre/secret.conf", secretBase)
	rewrite(t, root, "/etc/issue", "vandalised\n")
	exit, rrep = reconcileRoot(t, root, cfgFile)
	if exit != 0 || len(rrep.Refused) != 0 {
		t.Fatalf("reconcile: exit %d, %s", exit, pretty(rrep))
	}
	compareNodes(t, recorded, snapshot(t, root), "/etc/motd", "/etc/pre/secret.conf", "/etc/issue")
	exit, rep = check(t, root, cfgFile)
	wantClean(t, root, exit, rep)

	rewrite(t, root, "/etc/pre/secret.conf", "token=replaced\n"+fromIgnition)
	r := runBinary(t, "reconcile", "--root", root, "--config", cfgFile)
	if r.exit != 1 || !strings.Contains(r.stdout+r.stderr, "/etc/pre/secret.conf") || !strings.Contains(r.stdout+r.stderr, "does not guess") {
		t.Errorf("reconcile of a secret append-only file whose base is gone: exit %d, want 1 and a refusal naming it\nstdout:\n%s\nstderr:\n%s", r.exit, r.stdout, r.stderr)
	}
	if strings.Contains(r.stdout+r.stderr, "FIRSTBOOT-SECRET") {
		t.Errorf("reconcile printed secret bytes:\n%s%s", r.stdout, r.stderr)
	}
	if got := read(t, root, "/etc/pre/secret.conf"); got != "token=replaced\n"+fromIgnition {
		t.Errorf("a refused file was written: %q", got)
	}
	rewrite(t, root, "/etc/pre/secret.conf", secretBase+fromIgnition)

	// Without the record: today's lenient answer for modes and owners, and
	// a refusal for the append-only file whose base nothing says.
	remove(t, root, recordPath)
	chmod(t, root, "/foo/bar", 0o700)
	exit, rep = check(t, root, cfgFile)
	wantClean(t, root, exit, rep)
	rewrite(t, root, "/etc/motd", line1)
	r = runBinary(t, "reconcile", "--root", root, "--config", cfgFile)
	if r.exit != 1 || !strings.Contains(r.stdout, "/etc/motd") || !strings.Contains(r.stdout, "first-boot record") {
		t.Errorf("reconcile without a record: exit %d, want 1 and /etc/motd refused for want of a first-boot record\nstdout:\n%s\nstderr:\n%s", r.exit, r.stdout, r.stderr)
	}
	if got := read(t, root, "/etc/motd"); got != line1 {
		t.Errorf("reconcile without a record wrote /etc/motd = %q", got)
	}
}

// compareNodes asserts the nodes at paths are in got as in want: type,
// mode, owner, group and content.
func compareNodes(t *testing.T, want, got map[string]node, paths ...string) {
	t.Helper()
	for _, p := range paths {
		w, g := want[p], got[p]
		if w.Type != g.Type || w.Mode != g.Mode || w.UID != g.UID || w.GID != g.GID || w.Content != g.Content {
			t.Errorf("%s after reconcile: %+v, want what Ignition wrote: %+v", p, g, w)
		}
	}
}

// TestBlackboxDefaultDirectoryMode: Ignition's own blackbox cases
// directories.create and directories.defaultperms
// (tests/positive/files/directory.go: CreateDirectoryOnRoot,
// ApplyDefaultDirectoryPermissions; spec 3.3.0), whose Out is a 0755
// directory of root's. Each sub-case: the root Ignition wrote is clean, and
// every declared node mutated is reported: with the first-boot record, a
// mode or owner other than the one Ignition gave is drift.
func TestBlackboxDefaultDirectoryMode(t *testing.T) {
	requireTier(t)
	for _, tt := range []struct{ name, config string }{
		{"directories.create", `{"ignition": {"version": "3.3.0"}, "storage": {"directories": [{"path": "/foo/bar"}]}}`},
		{"directories.defaultperms", `{"ignition": {"version": "3.3.0"}, "storage": {"directories": [{"filesystem": "root", "path": "/foo/bar"}]}}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			for _, m := range []struct {
				name   string
				mutate func(t *testing.T, root string)
				want   []key
			}{
				{"mode 0700", func(t *testing.T, r string) { chmod(t, r, "/foo/bar", 0o700) }, []key{drifted("mode", "directory", "/foo/bar")}},
				{"owner 1000", func(t *testing.T, r string) { chown(t, r, "/foo/bar", 1000, -1) }, []key{drifted("owner", "directory", "/foo/bar")}},
				{"group 1000", func(t *testing.T, r string) { chown(t, r, "/foo/bar", -1, 1000) }, []key{drifted("group", "directory", "/foo/bar")}},
			} {
				t.Run(m.name, func(t *testing.T) {
					root, log, err := runIgnition(t, []byte(tt.config), prepare{})
					if err != nil {
						t.Fatalf("%v\nIgnition's log:\n%s", err, log)
					}
					if n := snapshot(t, root)["/foo/bar"]; n.Type != "dir" || n.Mode != 0o755 || n.UID != 0 || n.GID != 0 {
						t.Fatalf("Ignition's Out: /foo/bar is %+v, want a 0755 directory of root's", n)
					}
					cfgFile := adoptFirstBoot(t, root)
					exit, rep := check(t, root, cfgFile)
					wantClean(t, root, exit, rep)
					m.mutate(t, root)
					exit, rep = check(t, root, cfgFile)
					wantDrift(t, root, exit, rep, m.want)
				})
			}
		})
	}
}

// TestFirstBootRecordOstree: on an rpm-ostree host, a real `ostree admin
// deploy` checks the deployment's /etc out from its /usr/etc, and the real
// Ignition then appends to the image's files there: the record says which
// /etc nodes the image had (their /usr/etc twin) and which Ignition made,
// and names the twin as the base of a file it appended to. A secret base,
// which the record never copies, is restored from that twin by reconcile
// after the file is overwritten; the twin's bytes are checked against the
// keyed digest first, so a twin changed since the first boot is refused.
func TestFirstBootRecordOstree(t *testing.T) {
	requireTier(t)
	const imageApp, imageMotd, frag = "token=IMAGE-SECRET-MARKER\n", "image motd\n", "from Ignition\n"
	sysroot := ostree.SysrootWith(t, map[string]ostree.File{
		"usr/etc/app.conf": {Content: imageApp, Mode: 0o600},
		"usr/etc/motd":     {Content: imageMotd, Mode: 0o644},
	}, nil)
	root := ostree.Deployment(t, sysroot)
	if got := read(t, root, "/etc/app.conf"); got != imageApp {
		t.Fatalf("the deployment's /etc/app.conf = %q, want the image's", got)
	}
	mustMkdir(t, at(root, "/run"), 0o755)
	mustWrite(t, at(root, "/run/ostree-booted"), "", 0o644)
	cfg := config{Ignition: version{"3.3.0"}, Storage: &storage{
		Directories: []directory{{Path: "/etc/app.d"}},
		Files: []file{
			{Path: "/etc/app.conf", Append: []resource{*percentURL(frag)}},
			{Path: "/etc/motd", Append: []resource{*percentURL(frag)}},
		},
	}}
	if _, log, err := runIgnition(t, cfg.json(), prepare{root: root}); err != nil {
		t.Fatalf("%v\nIgnition's log:\n%s", err, log)
	}
	if got := read(t, root, "/etc/app.conf"); got != imageApp+frag {
		t.Fatalf("Ignition wrote /etc/app.conf = %q", got)
	}
	cfgFile := adoptCache(t, root, at(root, "/run/cache.json"))
	provisioned := snapshot(t, root)

	raw := read(t, root, recordPath)
	var rec struct {
		OSTree bool `json:"ostree"`
		Nodes  []struct {
			Path   string `json:"path"`
			Origin string `json:"origin"`
			Base   *struct {
				Twin  string `json:"twin"`
				Bytes []byte `json:"bytes"`
			} `json:"base"`
		} `json:"nodes"`
	}
	if err := json.Unmarshal([]byte(raw), &rec); err != nil {
		t.Fatal(err)
	}
	origins, twins := map[string]string{}, map[string]string{}
	for _, n := range rec.Nodes {
		origins[n.Path] = n.Origin
		if n.Base != nil {
			twins[n.Path] = n.Base.Twin
			if n.Path == "/etc/app.conf" && n.Base.Bytes != nil {
				t.Errorf("the record copies the secret base of /etc/app.conf")
			}
		}
	}
	if !rec.OSTree {
		t.Errorf("the record does not say the host is an ostree host")
	}
	if want := map[string]string{"/etc/app.d": "ignition", "/etc/app.conf": "image", "/etc/motd": "image"}; !reflect.DeepEqual(origins, want) {
		t.Errorf("origins %v, want %v", origins, want)
	}
	if want := map[string]string{"/etc/app.conf": "/usr/etc/app.conf", "/etc/motd": "/usr/etc/motd"}; !reflect.DeepEqual(twins, want) {
		t.Errorf("twins %v, want %v", twins, want)
	}
	if strings.Contains(raw, "IMAGE-SECRET-MARKER") {
		t.Errorf("the record holds secret bytes:\n%s", raw)
	}
	exit, rep := check(t, root, cfgFile)
	wantClean(t, root, exit, rep)

	rewrite(t, root, "/etc/app.conf", "overwritten\n")
	exit, rrep := reconcileRoot(t, root, cfgFile)
	if exit != 0 || len(rrep.Refused) != 0 {
		t.Fatalf("reconcile: exit %d, %s", exit, pretty(rrep))
	}
	compareNodes(t, provisioned, snapshot(t, root), "/etc/app.conf")

	// The image changed /usr/etc since (an upgrade): its bytes are no
	// longer the base, and reconcile says so rather than append to them.
	// A new inode: the deployment's files are hard links into the repo.
	remove(t, root, "/usr/etc/app.conf")
	mustWrite(t, at(root, "/usr/etc/app.conf"), "token=NEWER-IMAGE\n", 0o600)
	rewrite(t, root, "/etc/app.conf", "overwritten\n")
	r := runBinary(t, "reconcile", "--root", root, "--config", cfgFile)
	if r.exit != 1 || !strings.Contains(r.stdout, "/etc/app.conf") || !strings.Contains(r.stdout, "/usr/etc/app.conf") {
		t.Errorf("reconcile with a changed twin: exit %d, want 1 and a refusal naming the file and its twin\nstdout:\n%s\nstderr:\n%s", r.exit, r.stdout, r.stderr)
	}
}
