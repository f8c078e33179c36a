package reconcile

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/drift-monitor/drift-monitor/internal/accountdb"
	"github.com/drift-monitor/drift-monitor/internal/drift"
	"github.com/drift-monitor/drift-monitor/internal/model"
	"github.com/drift-monitor/drift-monitor/internal/ondisk"
	"github.com/google/go-cmp/cmp"
)

// recorded is a Commands that runs nothing and keeps what it was asked.
type recorded struct {
	runs []string
	in   []string
}

func (r *recorded) Run(_ context.Context, name string, args []string, stdin []byte) error {
	r.runs = append(r.runs, name+" "+strings.Join(args, " "))
	r.in = append(r.in, string(stdin))
	return nil
}

func ptr[T any](v T) *T { return &v }

const secretHash = "$6$salt$TheDeclaredSecretHash"

func TestAccountRepairs(t *testing.T) {
	root := t.TempDir()
	for name, content := range map[string]string{
		"etc/passwd":      "core:x:1000:1000::/home/core:/bin/bash\n",
		"etc/shadow":      "core:!:19000::::::\n",
		"etc/group":       "core:x:1000:\nwheel:x:10:\n",
		"etc/gshadow":     "core:!::\nwheel:!::\n",
		"usr/lib/passwd":  "image:x:900:900::/:/sbin/nologin\n",
		"usr/lib/group":   "imagegrp:x:901:\n",
		"home/core/.keep": "",
	} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(root, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r, err := ondisk.OpenRoot(root)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	user := func(a model.Account) *model.Entry {
		return &model.Entry{Kind: model.KindUser, Path: accountdb.PasswdFile, User: a.Name, Type: model.TypeNone, Account: &a}
	}
	group := func(a model.Account) *model.Entry {
		return &model.Entry{Kind: model.KindGroup, Path: accountdb.GroupFile, Type: model.TypeNone, Account: &a}
	}
	hash := secretHash
	tests := []struct {
		name    string
		entry   *model.Entry
		kinds   []drift.Kind
		runs    []string // ROOT for the root
		done    []string
		problem string
	}{
		{name: "only the fields that drifted", entry: user(model.Account{Name: "core", Shell: ptr("/bin/sh"), Gecos: ptr("Admin"), Groups: []string{"wheel"}}),
			kinds: []drift.Kind{drift.Shell, drift.Groups},
			runs:  []string{"usermod --root ROOT --groups wheel --shell /bin/sh core"},
			done:  []string{"usermod --groups wheel --shell /bin/sh core"}},
		{name: "a password through stdin", entry: user(model.Account{Name: "core", PasswordHash: &hash}),
			kinds: []drift.Kind{drift.PasswordHash},
			runs:  []string{"chpasswd --encrypted --root ROOT"},
			done:  []string{"chpasswd --encrypted (the declared password hash on its input)"}},
		{name: "a home that exists is named, not moved onto", entry: user(model.Account{Name: "core", Home: ptr("/home/core")}),
			kinds: []drift.Kind{drift.HomeDir},
			runs:  []string{"usermod --root ROOT --home /home/core core"}},
		{name: "a home that does not exist is moved to", entry: user(model.Account{Name: "core", Home: ptr("/var/home/core")}),
			kinds: []drift.Kind{drift.HomeDir},
			runs:  []string{"usermod --root ROOT --home /var/home/core --move-home core"}},
		{name: "a missing user, created as Ignition creates it", entry: user(model.Account{Name: "svc", ID: ptr(1600), PrimaryGroup: ptr("wheel"),
			PasswordHash: &hash, Creation: model.Creation{NoCreateHome: true, System: true}}),
			kinds: []drift.Kind{drift.Missing},
			runs: []string{"useradd --root ROOT --no-create-home --system --password * --uid 1600 --gid wheel svc",
				"chpasswd --encrypted --root ROOT"}},
		{name: "a user that must not exist", entry: user(model.Account{Name: "core", Absent: true}), kinds: []drift.Kind{drift.Present},
			runs: []string{"userdel --remove --root ROOT core"}},
		{name: "a user of the image's", entry: user(model.Account{Name: "image", Shell: ptr("/bin/sh")}), kinds: []drift.Kind{drift.Shell},
			problem: `user "image" is in /usr/lib/passwd`},
		{name: "a primary group that does not exist", entry: user(model.Account{Name: "core", PrimaryGroup: ptr("nosuch")}), kinds: []drift.Kind{drift.PrimaryGroup},
			problem: `its primary group "nosuch" does not exist`},
		{name: "a group's gid and password", entry: group(model.Account{Name: "wheel", ID: ptr(11), PasswordHash: &hash}),
			kinds: []drift.Kind{drift.GID, drift.PasswordHash},
			runs:  []string{"groupmod --root ROOT --gid 11 wheel", "chgpasswd --encrypted --root ROOT"}},
		{name: "a missing group", entry: group(model.Account{Name: "docker", Creation: model.Creation{System: true}}), kinds: []drift.Kind{drift.Missing},
			runs: []string{"groupadd --root ROOT --system docker"}},
		{name: "a group that must not exist", entry: group(model.Account{Name: "wheel", Absent: true}), kinds: []drift.Kind{drift.Present},
			runs: []string{"groupdel --root ROOT wheel"}},
		{name: "a group of the image's", entry: group(model.Account{Name: "imagegrp", ID: ptr(5)}), kinds: []drift.Kind{drift.GID},
			problem: `group "imagegrp" is in /usr/lib/group`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, dry := range []bool{true, false} {
				cmds := &recorded{}
				rec := &Reconciler{Root: r, Commands: cmds, DryRun: dry}
				res := rec.Repair(context.Background(), []*model.Entry{tt.entry}, map[string][]drift.Kind{tt.entry.ID(): tt.kinds})
				if tt.problem != "" {
					if len(res.Refused) != 1 || !strings.Contains(res.Refused[0].Problem, tt.problem) {
						t.Fatalf("refused %+v, want a problem with %q", res.Refused, tt.problem)
					}
					continue
				}
				if len(res.Repaired) != 1 {
					t.Fatalf("result %+v, want one repair", res)
				}
				var want []string
				if !dry {
					for _, w := range tt.runs {
						want = append(want, strings.ReplaceAll(w, "ROOT", root))
					}
				}
				if diff := cmp.Diff(want, cmds.runs); diff != "" {
					t.Errorf("dry run %v: commands (-want +got):\n%s", dry, diff)
				}
				a := res.Repaired[0]
				if tt.done != nil {
					if diff := cmp.Diff(tt.done, a.Done); diff != "" {
						t.Errorf("done (-want +got):\n%s", diff)
					}
				}
				for _, d := range a.Done {
					if strings.Contains(d, root) || strings.Contains(d, "TheDeclaredSecretHash") {
						t.Errorf("done %q shows the root or the hash", d)
					}
				}
				for i, run := range cmds.runs {
					if strings.Contains(run, "TheDeclaredSecretHash") {
						t.Errorf("the hash is on a command line: %s", run)
					}
					if strings.HasPrefix(run, "ch") && cmds.in[i] != tt.entry.Account.Name+":"+secretHash+"\n" {
						t.Errorf("%s: stdin %q", run, cmds.in[i])
					}
				}
			}
		})
	}
}

// failing is a Commands whose tool fails, echoing its input.
type failing struct{}

func (failing) Run(_ context.Context, name string, _ []string, stdin []byte) error {
	return fmt.Errorf("%s: exit status 1: bad line %q", name, stdin)
}

// A tool that echoes the hash it was given: its message is the reason,
// without the hash.
func TestAccountRepairFailureShowsNoHash(t *testing.T) {
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "etc"), 0o755)
	os.WriteFile(filepath.Join(root, "etc/passwd"), []byte("core:x:1000:1000::/home/core:/bin/bash\n"), 0o644)
	r, err := ondisk.OpenRoot(root)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	hash := secretHash
	e := &model.Entry{Kind: model.KindUser, Path: accountdb.PasswdFile, User: "core", Account: &model.Account{Name: "core", PasswordHash: &hash}}
	res := (&Reconciler{Root: r, Commands: failing{}}).Repair(context.Background(), []*model.Entry{e}, map[string][]drift.Kind{e.ID(): {drift.PasswordHash}})
	if len(res.Refused) != 1 || !strings.Contains(res.Refused[0].Problem, "chpasswd: exit status 1") || strings.Contains(res.Refused[0].Problem, "TheDeclaredSecretHash") {
		t.Errorf("refused %+v: want chpasswd's failure without the hash", res.Refused)
	}
}
