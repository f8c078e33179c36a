package blackbox

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/drift-monitor/drift-monitor/test/harness"
	"github.com/google/go-cmp/cmp"
)

// The exclusions are one rulebook: on the same root, with the same
// exclude.conf, the daemon, check, reconcile --dry-run and audit-rules
// leave the same paths alone and report the same drift.

// exclConfig declares every kind of entry twice over: one that the
// exclusions leave alone (under /etc/excl, a unit's, a drop-in's, a
// mask's, a user's SSH keys, the value a file holds, one kind of drift),
// one that they do not. Kernel arguments are not here: with --root they are
// checked by no command (a notice says so), excluded or not.
const exclConfig = `{"ignition":{"version":"3.4.0"},
 "storage":{
  "files":[
   {"path":"/etc/kept/file.conf","mode":420,"contents":{"source":"data:,declared%0A"}},
   {"path":"/etc/kept/target","mode":420,"contents":{"source":"data:,target%0A"}},
   {"path":"/etc/excl/file.conf","mode":420,"contents":{"source":"data:,declared%0A"}},
   {"path":"/etc/kind/both.conf","mode":420,"contents":{"source":"data:,declared%0A"}}],
  "directories":[{"path":"/etc/kept/dir","mode":493},{"path":"/etc/excl/dir","mode":493}],
  "links":[
   {"path":"/etc/kept/link","target":"/etc/kept/file.conf"},
   {"path":"/etc/excl/link","target":"/etc/kept/file.conf"},
   {"path":"/etc/kept/hard","target":"/etc/kept/target","hard":true},
   {"path":"/etc/excl/hard","target":"/etc/kept/target","hard":true}]},
 "systemd":{"units":[
   {"name":"kept.service","contents":"[Service]\nExecStart=/bin/true\n",
    "dropins":[{"name":"10-kept.conf","contents":"[Service]\nNice=1\n"}]},
   {"name":"excl.service","contents":"[Service]\nExecStart=/bin/true\n"},
   {"name":"dropins.service","dropins":[{"name":"10-excl.conf","contents":"[Service]\nNice=2\n"}]},
   {"name":"masked-kept.service","mask":true},
   {"name":"masked-excl.service","mask":true},
   {"name":"enabled-kept.service","enabled":true,"contents":"[Service]\nExecStart=/bin/true\n[Install]\nWantedBy=multi-user.target\n"},
   {"name":"enabled-excl.service","enabled":true,"contents":"[Service]\nExecStart=/bin/true\n[Install]\nWantedBy=multi-user.target\n"}]},
 "passwd":{
  "users":[
   {"name":"core","shell":"/bin/bash","passwordHash":"$6$bbWant$WantedUserHash","sshAuthorizedKeys":["ssh-ed25519 AAAAkept core@kept"]},
   {"name":"alice","groups":["wheel"]},
   {"name":"excl","sshAuthorizedKeys":["ssh-ed25519 AAAAexcl excl@excl"]}],
  "groups":[{"name":"docker","gid":1500},{"name":"wheel","passwordHash":"$6$bbWant$WantedGroupHash"}]}}`

// exclConf is the root's /etc/drift-monitor/exclude.conf, which every
// command reads by default.
const exclConf = `# whole paths: a directory and what lies below it
/etc/excl
# a unit, a drop-in, a mask, a user's SSH keys
/etc/systemd/system/excl.service
/etc/systemd/system/dropins.service.d/10-excl.conf
/etc/systemd/system/masked-excl.service
/home/excl
# the files that hold a value: users' password hashes, groups'
/etc/shadow
/etc/gshadow
# one kind of drift at a path
mode:/etc/kind/*
enablement:/etc/systemd/system/enabled-excl.service
`

// exclWantReported is the drift every command must report, as
// ENTRY SUBJECT KIND (the subject: the path and unit, or the account).
var exclWantReported = []string{
	"directory /etc/kept/dir mode",
	"dropin /etc/systemd/system/kept.service.d/10-kept.conf|kept.service content",
	"enablement /etc/systemd/system/enabled-kept.service|enabled-kept.service enablement",
	"file /etc/kept/file.conf content",
	"file /etc/kind/both.conf content",
	"group docker gid",
	"hardlink /etc/kept/hard hardlink",
	"link /etc/kept/link target",
	"mask /etc/systemd/system/masked-kept.service|masked-kept.service unmasked",
	"sshkeys /home/core/.ssh/authorized_keys.d/ignition content",
	"unit /etc/systemd/system/kept.service|kept.service content",
	"user alice groups",
	"user core shell",
}

// exclWantRefused is the reported drift reconcile does not repair, and
// why: usermod --groups rewrites /etc/gshadow (the group's member list
// there), which the exclusions leave alone.
var exclWantRefused = map[string]string{
	"user alice groups": "it would write /etc/gshadow, which is excluded",
}

// exclWantLeft are the declared paths left alone entirely.
var exclWantLeft = []string{
	"/etc/excl/dir", "/etc/excl/file.conf", "/etc/excl/hard", "/etc/excl/link",
	"/etc/systemd/system/dropins.service.d/10-excl.conf", "/etc/systemd/system/excl.service",
	"/etc/systemd/system/masked-excl.service", "/home/excl/.ssh/authorized_keys.d/ignition",
}

// exclRoot is a root provisioned with exclConfig, then drifted: every
// entry differs from its declaration (the excluded ones included), in one
// way each.
func exclRoot(t *testing.T) *fixture {
	f := newFixture(t, exclConfig)
	f.write("/etc/drift-monitor/exclude.conf", exclConf, 0o644)
	f.write("/etc/passwd", "root:x:0:0:root:/root:/bin/bash\ncore:x:1000:1000::/home/core:/bin/sh\n"+
		"alice:x:1001:1001::/home/alice:/bin/bash\nexcl:x:1002:1002::/home/excl:/bin/bash\n", 0o644)
	f.write("/etc/shadow", "root:*:19000:0:99999:7:::\ncore:$6$bbGot$AnotherUserHash:19000:0:99999:7:::\n"+
		"alice:*:19000:0:99999:7:::\nexcl:*:19000:0:99999:7:::\n", 0o640)
	f.write("/etc/group", "root:x:0:\ncore:x:1000:\nalice:x:1001:\nexcl:x:1002:\ndocker:x:1501:\nwheel:x:10:\n", 0o644)
	f.write("/etc/gshadow", "root:*::\ncore:!::\nalice:!::\nexcl:!::\ndocker:!::\nwheel:$6$bbGot$AnotherGroupHash::\n", 0o640)
	for _, p := range []string{"/etc/kept/file.conf", "/etc/excl/file.conf", "/etc/kind/both.conf"} {
		f.write(p, "drifted\n", 0o644)
	}
	os.Chmod(f.host("/etc/kind/both.conf"), 0o600)
	f.write("/etc/kept/target", "target\n", 0o644)
	for _, p := range []string{"/etc/kept/hard", "/etc/excl/hard"} {
		f.write(p, "target\n", 0o644) // a copy, not the target's inode
	}
	for _, p := range []string{"/etc/kept/dir", "/etc/excl/dir"} {
		if err := os.MkdirAll(f.host(p), 0o700); err != nil {
			t.Fatal(err)
		}
		os.Chmod(f.host(p), 0o700)
	}
	for _, p := range []string{"/etc/kept/link", "/etc/excl/link"} {
		if err := os.Symlink("/etc/elsewhere", f.host(p)); err != nil {
			t.Fatal(err)
		}
	}
	const unitDir = "/etc/systemd/system/"
	f.write(unitDir+"kept.service", "[Service]\nExecStart=/bin/false\n", 0o644)
	f.write(unitDir+"kept.service.d/10-kept.conf", "[Service]\nNice=9\n", 0o644)
	f.write(unitDir+"excl.service", "[Service]\nExecStart=/bin/false\n", 0o644)
	f.write(unitDir+"dropins.service.d/10-excl.conf", "[Service]\nNice=9\n", 0o644)
	install := "[Service]\nExecStart=/bin/true\n[Install]\nWantedBy=multi-user.target\n"
	f.write(unitDir+"enabled-kept.service", install, 0o644) // and not enabled
	f.write(unitDir+"enabled-excl.service", install, 0o644)
	// The masks are not there: the units are not masked.
	for user, uid := range map[string]int{"core": 1000, "excl": 1002} {
		p := "/home/" + user + "/.ssh/authorized_keys.d/ignition"
		f.write(p, "ssh-ed25519 AAAAother other@elsewhere\n", 0o600)
		for q := p; q != "/home"; q = filepath.Dir(q) {
			os.Lchown(f.host(q), uid, uid)
		}
		os.Chmod(f.host("/home/"+user+"/.ssh"), 0o700)
		os.Chmod(f.host("/home/"+user+"/.ssh/authorized_keys.d"), 0o700)
	}
	return f
}

// accountNoun is the account a drift message names: `user "core": …`.
var accountNoun = regexp.MustCompile(`^(?:user|group) "([^"]*)": `)

// reported is the drift a command reports, as exclWantReported writes it.
func reported(entry, path, unit, account, kind string) string {
	subject := path
	switch {
	case entry == "user" || entry == "group":
		subject = account
	case unit != "":
		subject += "|" + unit
	}
	return entry + " " + subject + " " + kind
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return slices.Compact(s)
}

// TestExclusionsOneRulebook: the differential test over the commands.
// Every command reads the same root's exclude.conf by default; each must
// report exactly exclWantReported and leave exclWantLeft alone: the daemon
// (its drift over the bus, the excluded count in its status line), check
// --format json (its drift and left_alone), reconcile --dry-run --format
// json (what it would repair, what it lists as left alone, and the one
// repair that would write an excluded file) and audit-rules (no rule at or below a path left alone, one for
// every other declared node).
func TestExclusionsOneRulebook(t *testing.T) {
	harness.RequireRoot(t, "reconcile (even --dry-run) and the SSH keys' owners")
	f := exclRoot(t)
	answers := map[string][]string{}

	// The daemon, asked over a private bus.
	bus := privateBus(t)
	d := startDaemonWith(t, f.root, daemonOpts{bus: bus})
	d.wait("the first check's drift", 20*time.Second, func() bool { return strings.HasPrefix(d.status(), "Drift:") })
	out, errOut, code := runCLI(t, bus, "status", "--format", "json")
	var st harness.StatusReport
	if err := json.Unmarshal([]byte(out), &st); err != nil || code != 1 || st.DriftTruncated {
		t.Fatalf("status --format json: exit %d, %v, stderr %q:\n%s", code, err, errOut, out)
	}
	for _, it := range st.Drift {
		account := ""
		if m := accountNoun.FindStringSubmatch(it.Message); m != nil {
			account = m[1]
		}
		answers["daemon"] = append(answers["daemon"], reported(it.Entry, it.Path, it.Unit, account, it.Kind))
	}
	wantStatus := fmt.Sprintf("; %d declared paths excluded", len(exclWantLeft))
	if !strings.Contains(st.Status, wantStatus) {
		t.Errorf("the daemon's status %q does not say %q", st.Status, wantStatus)
	}

	// check --format json.
	out, errOut, code = runCLI(t, bus, "check", "--root", f.root, "--format", "json")
	var rep harness.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != 1 {
		t.Fatalf("check --format json: exit %d, %v, stderr %q:\n%s", code, err, errOut, out)
	}
	for _, it := range rep.Drift {
		answers["check"] = append(answers["check"], reported(it.Entry, it.Path, it.Unit, it.User+it.Group, it.Kind))
	}
	checkLeft := leftPaths(rep.LeftAlone)

	// reconcile --dry-run --format json.
	out, errOut, code = runCLI(t, bus, "reconcile", "--root", f.root, "--dry-run", "--format", "json")
	var rec harness.ReconcileReport
	if err := json.Unmarshal([]byte(out), &rec); err != nil {
		t.Fatalf("reconcile --dry-run --format json: exit %d, %v, stderr %q:\n%s", code, err, errOut, out)
	}
	refused := map[string]string{}
	for _, a := range rec.Refused {
		for _, k := range a.Drift {
			refused[reported(a.Entry, a.Path, a.Unit, a.User+a.Group, k)] = a.Problem
		}
	}
	if diff := cmp.Diff(exclWantRefused, refused, cmp.Comparer(func(want, got string) bool {
		return strings.HasPrefix(got, want) || strings.HasPrefix(want, got)
	})); code != 1 || diff != "" {
		t.Errorf("reconcile --dry-run: exit %d, want 1; not repaired (-want +got):\n%s", code, diff)
	}
	for _, a := range append(rec.Repaired, rec.Refused...) {
		for _, k := range a.Drift {
			answers["reconcile"] = append(answers["reconcile"], reported(a.Entry, a.Path, a.Unit, a.User+a.Group, k))
		}
	}
	reconcileLeft := leftPaths(rec.LeftAlone)
	if diff := cmp.Diff(rep.LeftAlone, rec.LeftAlone); diff != "" {
		t.Errorf("check and reconcile list different entries as left alone (-check +reconcile):\n%s", diff)
	}

	// audit-rules: the paths it watches, as the host's.
	out, errOut, code = runCLI(t, bus, "audit-rules", "--root", f.root)
	if code != 0 {
		t.Fatalf("audit-rules: exit %d, stderr %q", code, errOut)
	}
	var watched []string
	for _, l := range strings.Split(out, "\n") {
		if p, ok := strings.CutPrefix(l, "-a always,exit -F path="+f.root); ok {
			watched = append(watched, strings.Fields(p)[0])
		}
	}

	want := sorted(exclWantReported)
	for _, who := range []string{"daemon", "check", "reconcile"} {
		if diff := cmp.Diff(want, sorted(answers[who])); diff != "" {
			t.Errorf("%s reports other drift than the exclusions leave (-want +got):\n%s", who, diff)
		}
	}
	for who, left := range map[string][]string{"check": checkLeft, "reconcile": reconcileLeft} {
		if diff := cmp.Diff(exclWantLeft, left); diff != "" {
			t.Errorf("%s leaves other paths alone (-want +got):\n%s", who, diff)
		}
	}
	for _, w := range watched {
		for _, l := range exclWantLeft {
			if w == l || strings.HasPrefix(w, l+"/") || w == "/etc/shadow" || w == "/etc/gshadow" {
				t.Errorf("audit-rules watches %s, which is left alone", w)
			}
		}
	}
	for _, p := range []string{"/etc/kept/file.conf", "/etc/kept/target", "/etc/kind/both.conf", "/etc/kept/dir", "/etc/kept/link",
		"/etc/kept/hard", "/etc/systemd/system/kept.service", "/etc/systemd/system/kept.service.d/10-kept.conf",
		"/home/core/.ssh/authorized_keys.d/ignition", "/etc/passwd", "/etc/group"} {
		if !slices.Contains(watched, p) {
			t.Errorf("audit-rules does not watch %s, which is checked (rules for %v)", p, watched)
		}
	}
	if t.Failed() {
		t.Logf("the answers: %q", answers)
	}
	exclusionsOthersMayWrite(t, f, bus, d, sorted(answers["daemon"]))
}

// exclusionsOthersMayWrite: an exclusion file that a user other than root
// could have written — itself (any user's to write, or another user's), or
// a directory on its path (behind a link: one any user may write, one a
// group other than root's may write) — is refused alike by check,
// reconcile --dry-run and audit-rules (exit 2, naming the file, the node,
// its mode and its owner) and by the daemon, which keeps its last good
// rules, says so in its status line, and reports the same drift as
// before; put right, the file applies again.
func exclusionsOthersMayWrite(t *testing.T, f *fixture, bus string, d *daemonProc, before []string) {
	const conf = "/etc/drift-monitor/exclude.conf"
	if err := os.MkdirAll(f.host("/srv/excl"), 0o755); err != nil {
		t.Fatal(err)
	}
	f.write("/srv/excl/exclude.conf", exclConf, 0o644)
	// linkIn puts a link to the file under /srv in conf's place, renamed
	// into place: the daemon sees its file replaced.
	linkIn := func() {
		if err := os.Symlink("/srv/excl/exclude.conf", f.host(conf+".new")); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(f.host(conf+".new"), f.host(conf)); err != nil {
			t.Fatal(err)
		}
	}
	putBack := func() { f.write(conf+".new", exclConf, 0o644); os.Rename(f.host(conf+".new"), f.host(conf)) }
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	const others = ": a user other than root could have written it"
	uid := os.Geteuid()
	type spoilt struct {
		name       string
		spoil, fix func()
		want       string
	}
	cases := []spoilt{{
		name:  "a world-writable exclude.conf",
		spoil: func() { must(os.Chmod(f.host(conf), 0o666)) },
		fix:   func() { must(os.Chmod(f.host(conf), 0o644)) },
		want:  fmt.Sprintf("%s: mode 0666, owned by uid %d: writable by every user%s", conf, uid, others),
	}, {
		name:  "a world-writable directory behind a link on its path",
		spoil: func() { must(os.Chmod(f.host("/srv"), 0o777)); linkIn() },
		fix:   func() { must(os.Chmod(f.host("/srv"), 0o755)); putBack() },
		want:  fmt.Sprintf("%s: through directory /srv: mode 0777, owned by uid %d: writable by every user%s", conf, uid, others),
	}}
	if uid == 0 {
		cases = append(cases, spoilt{
			name:  "an exclude.conf of another user's",
			spoil: func() { must(os.Chown(f.host(conf), 1000, 1000)) },
			fix:   func() { must(os.Chown(f.host(conf), 0, 0)) },
			want:  conf + ": owned by uid 1000 (mode 0644)" + others,
		}, spoilt{
			name: "a directory on its path that another group may write",
			spoil: func() {
				must(os.Chown(f.host("/srv/excl"), 0, 1000))
				must(os.Chmod(f.host("/srv/excl"), 0o775))
				linkIn()
			},
			fix: func() {
				must(os.Chmod(f.host("/srv/excl"), 0o755))
				must(os.Chown(f.host("/srv/excl"), 0, 0))
				putBack()
			},
			want: conf + ": through directory /srv/excl: mode 0775, owned by uid 0 and group 1000: writable by that group" + others,
		})
	}
	for _, tc := range cases {
		tc.spoil()
		for _, args := range [][]string{
			{"check", "--root", f.root},
			{"reconcile", "--root", f.root, "--dry-run"},
			{"audit-rules", "--root", f.root},
		} {
			out, errOut, code := runCLI(t, bus, args...)
			if code != 2 || !strings.Contains(errOut, tc.want) {
				t.Errorf("%s: %s: exit %d, stderr %q, stdout %q; want 2 saying %q", tc.name, args[0], code, errOut, out, tc.want)
			}
		}
		d.wait(tc.name+": the daemon keeping its last good rules", 20*time.Second, func() bool {
			s := d.status()
			return strings.Contains(s, "exclusions refused ("+tc.want) && strings.Contains(s, "), keeping the last good ones") &&
				strings.Contains(s, fmt.Sprintf("; %d declared paths excluded", len(exclWantLeft)))
		})
		out, errOut, code := runCLI(t, bus, "status", "--format", "json")
		var st harness.StatusReport
		if err := json.Unmarshal([]byte(out), &st); err != nil || code != 1 {
			t.Fatalf("%s: status --format json: exit %d, %v, stderr %q:\n%s", tc.name, code, err, errOut, out)
		}
		var now []string
		for _, it := range st.Drift {
			account := ""
			if m := accountNoun.FindStringSubmatch(it.Message); m != nil {
				account = m[1]
			}
			now = append(now, reported(it.Entry, it.Path, it.Unit, account, it.Kind))
		}
		if diff := cmp.Diff(before, sorted(now)); diff != "" {
			t.Errorf("%s: the daemon reports other drift than with its last good rules (-before +now):\n%s", tc.name, diff)
		}
		tc.fix()
		d.wait(tc.name+": put right", 20*time.Second, func() bool { return !strings.Contains(d.status(), "exclusions refused") })
	}
}

func leftPaths(ls []harness.Left) []string {
	var out []string
	for _, l := range ls {
		out = append(out, l.Path)
	}
	return sorted(out)
}
