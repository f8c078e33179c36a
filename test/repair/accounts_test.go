package repair

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// accountFiles are what a tool rewrites; a refused repair leaves them as
// they were, byte for byte.
var accountFiles = []string{"/etc/passwd", "/etc/shadow", "/etc/group", "/etc/gshadow"}

func (r *root) accountFiles() map[string]string {
	r.t.Helper()
	m := map[string]string{}
	for _, f := range accountFiles {
		m[f] = r.read(f)
	}
	return m
}

// TestFieldInjection: a value of an account that is not one field of the
// account files (a line break, a ':', a ',' in a group list, a name taken
// for an option) is refused by `check` as a config error (exit 2, naming
// the file and the field, never showing a hash) and by `reconcile`, which
// runs no tool: the account files are untouched. Before, a hash with a
// line break reached chpasswd's input and set root's password.
func TestFieldInjection(t *testing.T) {
	requireTier(t)
	tests := []struct {
		name    string
		passwd  string // the config's passwd section
		context string
		secret  string // what no output may show
	}{
		{name: "a user's hash with a line break sets root's",
			passwd:  `{"users":[{"name":"core","passwordHash":"$6$salt$SECRET\nroot:$6$evil$ROOTPWNED"}]}`,
			context: "$.passwd.users.0.passwordHash", secret: "ROOTPWNED"},
		{name: "a group's hash with a line break sets another group's",
			passwd:  `{"groups":[{"name":"wheel","passwordHash":"x\ncore:$6$grp$INJECT"}]}`,
			context: "$.passwd.groups.0.passwordHash", secret: "INJECT"},
		{name: "a hash with a ':' shifts the shadow fields",
			passwd:  `{"users":[{"name":"core","passwordHash":"$6$salt$SECRET:0:0"}]}`,
			context: "$.passwd.users.0.passwordHash", secret: "SECRET"},
		{name: "a gecos with a line break adds a user",
			passwd:  `{"users":[{"name":"core","gecos":"Core\nevil:x:0:0::/:/bin/sh"}]}`,
			context: "$.passwd.users.0.gecos"},
		{name: "a shell with a ':'",
			passwd:  `{"users":[{"name":"core","shell":"/bin/sh:x"}]}`,
			context: "$.passwd.users.0.shell"},
		{name: "a home with a control character",
			passwd:  `{"users":[{"name":"core","homeDir":"/home/core\u0007"}]}`,
			context: "$.passwd.users.0.homeDir"},
		{name: "a supplementary group that is two",
			passwd:  `{"users":[{"name":"core","groups":["wheel,root"]}]}`,
			context: "$.passwd.users.0.groups.0"},
		{name: "a name taken for an option",
			passwd:  `{"users":[{"name":"-ouid=0"}]}`,
			context: "$.passwd.users.0.name"},
		{name: "a primary group with a line break",
			passwd:  `{"users":[{"name":"core","primaryGroup":"wheel\nroot"}]}`,
			context: "$.passwd.users.0.primaryGroup"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRoot(t)
			cfg := r.config("inject.ign", fmt.Sprintf(`{"ignition":{"version":"3.4.0"},"passwd":%s}`, tt.passwd))
			before := r.accountFiles()
			res, _ := r.check(cfg)
			if res.exit != 2 || !strings.Contains(res.stderr, cfg+": "+tt.context+": ") || !strings.Contains(res.stderr, "not one field") {
				t.Errorf("check: want exit 2 naming %s and %s, got %s", cfg, tt.context, res)
			}
			for _, args := range [][]string{{"--dry-run"}, {}} {
				res, _ := r.reconcile(cfg, args...)
				if res.exit != 2 || !strings.Contains(res.stderr, tt.context) {
					t.Errorf("reconcile %v: want exit 2 naming %s, got %s", args, tt.context, res)
				}
				if tt.secret != "" && strings.Contains(res.stdout+res.stderr, tt.secret) {
					t.Errorf("reconcile %v shows the hash:\n%s", args, res)
				}
			}
			if tt.secret != "" && strings.Contains(res.stdout+res.stderr, tt.secret) {
				t.Errorf("check shows the hash:\n%s", res)
			}
			if diff := cmp.Diff(before, r.accountFiles()); diff != "" {
				t.Errorf("the account files changed (-before +after):\n%s", diff)
			}
		})
	}
}

// TestAccountsBeforeNodes: the accounts are repaired first, and every node
// is planned against the accounts as that left them (Ignition's order):
// a file owned by a user whose uid reconcile changes is left with the new
// uid, not chowned to the old one; the same for a group's gid. The run's
// last word is a check's, which agrees with a fresh `check`; the dry run
// plans the steps the run takes.
func TestAccountsBeforeNodes(t *testing.T) {
	requireTier(t)
	for _, tt := range []struct {
		name, line, file string
		passwd, owner    string
		chown            [2]int
		want             string
	}{
		{name: "usermod --uid", passwd: `{"users":[{"name":"svc","uid":1500}]}`, owner: `"user":{"name":"svc"}`,
			chown: [2]int{1500, 0}, want: "regular file 644 1500:0"},
		{name: "groupmod --gid", passwd: `{"groups":[{"name":"svc","gid":1500}]}`, owner: `"group":{"name":"svc"}`,
			chown: [2]int{0, 1500}, want: "regular file 644 0:1500"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := newRoot(t)
			// svc is 1600 (user and group) in the root; the config says 1500.
			r.write("/etc/passwd", r.read("/etc/passwd")+"svc:x:1600:1600::/home/svc:/bin/sh\n", 0o644)
			r.write("/etc/shadow", r.read("/etc/shadow")+"svc:!:19000:0:99999:7:::\n", 0o640)
			r.write("/etc/group", r.read("/etc/group")+"svc:x:1600:\n", 0o644)
			r.write("/etc/gshadow", r.read("/etc/gshadow")+"svc:!::\n", 0o640)
			r.write("/etc/f", "f\n", 0o644)
			if err := os.Chown(r.host("/etc/f"), tt.chown[0], tt.chown[1]); err != nil {
				t.Fatal(err)
			}
			cfg := r.config("svc.ign", fmt.Sprintf(`{"ignition":{"version":"3.4.0"},"passwd":%s,
 "storage":{"files":[{"path":"/etc/f","mode":420,%s,"contents":{"source":"data:,f%%0A"}}]}}`, tt.passwd, tt.owner))
			_, dry := r.reconcile(cfg, "--dry-run")
			res, rep := r.reconcile(cfg)
			if res.exit != 0 || !rep.Clean {
				t.Errorf("reconcile: want exit 0, clean, got %s", res)
			}
			if got := r.stat("/etc/f"); got != tt.want {
				t.Errorf("/etc/f is %s, want %s (owned by the account's new id)\n%s", got, tt.want, res)
			}
			if diff := cmp.Diff(steps(dry), steps(rep)); diff != "" {
				t.Errorf("the dry run planned other steps than the run took (-dry +run):\n%s", diff)
			}
			for _, s := range steps(rep) {
				if strings.Contains(s, "/etc/f") {
					t.Errorf("a step on /etc/f, whose owner is right once the account is: %s", s)
				}
			}
			r.wantClean(cfg)
		})
	}
}

// TestKeysOfANewUser: a missing user with SSH keys is created, then its
// keys are written as the user: ~/.ssh and ~/.ssh/authorized_keys.d 0700
// and the user's, the key file 0600 and the user's, as Ignition writes them
// (internal/exec/util/passwd.go, writeAuthKeysFile). The dry run plans the
// key file with the uid useradd is about to give (it made the user in a
// copy of the account files), not "its owner cannot be resolved".
func TestKeysOfANewUser(t *testing.T) {
	requireTier(t)
	r := newRoot(t)
	cfg := r.config("bob.ign", `{"ignition":{"version":"3.4.0"},"passwd":{"users":[{"name":"bob","sshAuthorizedKeys":["ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBob bob@example"]}]}}`)
	before := r.accountFiles()
	dres, dry := r.reconcile(cfg, "--dry-run")
	if dres.exit != 0 || len(dry.Refused) != 0 {
		t.Errorf("dry run: want exit 0 and nothing refused, got %s", dres)
	}
	if diff := cmp.Diff(before, r.accountFiles()); diff != "" {
		t.Errorf("the dry run changed the account files (-before +after):\n%s", diff)
	}
	if _, err := os.Stat(r.host("/home/bob")); err == nil {
		t.Errorf("the dry run made /home/bob")
	}
	res, rep := r.reconcile(cfg)
	if res.exit != 0 || !rep.Clean {
		t.Fatalf("reconcile: want exit 0, clean, got %s", res)
	}
	if diff := cmp.Diff(steps(dry), steps(rep)); diff != "" {
		t.Errorf("the dry run planned other steps than the run took (-dry +run):\n%s", diff)
	}
	if !strings.Contains(r.read("/etc/passwd"), "\nbob:x:1001:1001:") {
		t.Fatalf("bob is not 1001:1001:\n%s", r.read("/etc/passwd"))
	}
	for p, want := range map[string]string{
		"/home/bob":                                 "directory 700 1001:1001", // useradd's, HOME_MODE
		"/home/bob/.ssh":                            "directory 700 1001:1001",
		"/home/bob/.ssh/authorized_keys.d":          "directory 700 1001:1001",
		"/home/bob/.ssh/authorized_keys.d/ignition": "regular file 600 1001:1001",
	} {
		if got := r.stat(p); got != want {
			t.Errorf("%s is %s, want %s", p, got, want)
		}
	}
	r.wantClean(cfg)
}

// TestImageAccountsNotRemovable: shouldExist false for an account that
// lives only in /usr/lib/passwd or /usr/lib/group (the image's, through
// nss-altfiles) cannot be applied — userdel and groupdel edit /etc only —
// and both the dry run and the run say so, with the reason, and exit 1;
// nothing is changed.
func TestImageAccountsNotRemovable(t *testing.T) {
	requireTier(t)
	for _, tt := range []struct{ name, passwd, want string }{
		{"user", `{"users":[{"name":"bob","shouldExist":false}]}`, `user "bob" is in /usr/lib/passwd`},
		{"group", `{"groups":[{"name":"imagegrp","shouldExist":false}]}`, `group "imagegrp" is in /usr/lib/group`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := newRoot(t)
			r.write("/usr/lib/passwd", "bob:x:900:900::/:/sbin/nologin\n", 0o644)
			r.write("/usr/lib/group", "imagegrp:x:901:\n", 0o644)
			cfg := r.config("gone.ign", `{"ignition":{"version":"3.4.0"},"passwd":`+tt.passwd+`}`)
			before := r.accountFiles()
			for _, args := range [][]string{{"--dry-run"}, {}} {
				res, rep := r.reconcile(cfg, args...)
				if res.exit != 1 || len(rep.Refused) != 1 || !strings.Contains(rep.Refused[0].Problem, tt.want) ||
					!strings.Contains(rep.Refused[0].Problem, "cannot be removed") || len(rep.Repaired) != 0 {
					t.Errorf("reconcile %v: want exit 1 and the account refused (%s), got %s", args, tt.want, res)
				}
			}
			if diff := cmp.Diff(before, r.accountFiles()); diff != "" {
				t.Errorf("the account files changed (-before +after):\n%s", diff)
			}
		})
	}
}

// TestRelativeRoot: a relative --root is made absolute once, for every
// step: the account tools (which refuse a relative --root) repair the
// password in the same run that writes the files.
func TestRelativeRoot(t *testing.T) {
	requireTier(t)
	r := newRoot(t)
	const hash = "$6$relsalt$RelativeRootHash"
	cfg := r.config("rel.ign", fmt.Sprintf(`{"ignition":{"version":"3.4.0"},"passwd":{"users":[{"name":"core","passwordHash":%q}]},
 "storage":{"files":[{"path":"/etc/rel","mode":420,"contents":{"source":"data:,rel%%0A"}}]}}`, hash))
	res := run(t, filepath.Dir(r.dir), "reconcile", "--root", filepath.Base(r.dir), "--config", cfg)
	if res.exit != 0 {
		t.Errorf("reconcile --root %s: want exit 0, got %s", filepath.Base(r.dir), res)
	}
	if !strings.Contains(r.read("/etc/shadow"), "\ncore:"+hash+":") {
		t.Errorf("core's hash is not set:\n%s", r.read("/etc/shadow"))
	}
	if r.read("/etc/rel") != "rel\n" {
		t.Errorf("/etc/rel not written")
	}
	r.wantClean(cfg)
}

// TestOneRunConverges: a missing unit declared enabled with an [Install]
// section is written and enabled by one reconcile, whose dry run plans the
// link too; `check` is clean after it.
func TestOneRunConverges(t *testing.T) {
	requireTier(t)
	r := newRoot(t)
	r.mkdir("/etc/systemd/system", 0o755, 0, 0)
	r.mkdir("/usr/lib/systemd/system", 0o755, 0, 0)
	cfg := r.config("unit.ign", `{"ignition":{"version":"3.4.0"},"systemd":{"units":[
 {"name":"foo.service","enabled":true,"contents":"[Service]\nExecStart=/bin/true\n[Install]\nWantedBy=multi-user.target\n"},
 {"name":"bar.service","enabled":false,"contents":"[Service]\nExecStart=/bin/true\n[Install]\nWantedBy=multi-user.target\n"}]}}`)
	_, dry := r.reconcile(cfg, "--dry-run")
	const link = "/etc/systemd/system/multi-user.target.wants/foo.service"
	if !slices.ContainsFunc(steps(dry), func(s string) bool { return strings.Contains(s, link) }) {
		t.Errorf("the dry run plans no link %s:\n%s", link, strings.Join(steps(dry), "\n"))
	}
	res, rep := r.reconcile(cfg)
	if res.exit != 0 || !rep.Clean || len(rep.Remaining) != 0 {
		t.Errorf("reconcile: want exit 0 and nothing left, got %s", res)
	}
	if diff := cmp.Diff(steps(dry), steps(rep)); diff != "" {
		t.Errorf("the dry run planned other steps than the run took (-dry +run):\n%s", diff)
	}
	if target, err := os.Readlink(r.host(link)); err != nil || target != "/etc/systemd/system/foo.service" {
		t.Errorf("%s: %q, %v", link, target, err)
	}
	r.wantClean(cfg)
}
